// Tracked tensor memory: every tensor byte the engine allocates is counted here (current + peak),
// so runs and benchmarks can report the tensor high-water mark beside the OS's peak RSS.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace onnxstream {

// Extra readable bytes after every allocation: XNNPACK kernels may read up to XNN_EXTRA_BYTES (16)
// past the end of their inputs (src/xnnpack/xnn.cpp checks it). 64 keeps the next allocation's alignment
// too. This is the one statement of the contract: the executor (exec/executor.h) pads whatever lacks it.
constexpr size_t kTensorPadding = 64;
constexpr size_t kTensorAlignment = 64;

struct MemoryCounter {
    std::atomic<uint64_t> current{0};
    std::atomic<uint64_t> peak{0};
    std::atomic<uint64_t> limit{0}; // max_bytes; 0 = none
    // Counts bytes unless that would take current above a nonzero limit: then counts nothing and throws
    // Error(OUT_OF_MEMORY) naming the request, the bytes in use and the limit.
    void add(uint64_t bytes);
    void sub(uint64_t bytes) { current.fetch_sub(bytes); }
    void reset_peak() { peak.store(current.load()); }
};

// A block of tensor memory. Owned blocks are freed through the counter that tracked them; borrowed
// blocks (mmap pages, host buffers) run their release function instead and are not counted.
class Storage {
public:
    Storage(void *data, size_t bytes, bool padded, std::function<void()> release)
        : data_(data), bytes_(bytes), padded_(padded), release_(std::move(release)) {}
    // Borrowed file-mapped pages that the holder drops from the process when done (drop_pages, e.g.
    // madvise DONTNEED) unless told they were never touched; release runs after it either way.
    Storage(void *data, size_t bytes, bool padded, std::function<void()> release, std::function<void()> drop_pages)
        : data_(data), bytes_(bytes), padded_(padded), release_(std::move(release)), drop_pages_(std::move(drop_pages)) {}
    ~Storage() {
        if (drop_pages_ && !pages_untouched_) drop_pages_();
        if (release_) release_();
    }
    Storage(const Storage &) = delete;
    Storage &operator=(const Storage &) = delete;

    void *data() const { return data_; }
    size_t bytes() const { return bytes_; }
    // True when kTensorPadding readable bytes follow the data (safe to hand to XNNPACK as input).
    bool padded() const { return padded_; }
    // An op output allocated for this run (never a weight, a pushed input or borrowed memory): the only
    // storage an elementwise op may overwrite in place once nothing else holds it.
    bool is_activation() const { return activation_; }
    void mark_activation() { activation_ = true; }
    // Nobody read these bytes (an op served its packed form from elsewhere): no page of them was faulted
    // in, so there is nothing to drop, and dropping would cost a system call and a TLB flush for nothing.
    void mark_pages_untouched() { pages_untouched_ = true; }

private:
    void *data_;
    size_t bytes_;
    bool padded_;
    bool activation_ = false;
    bool pages_untouched_ = false;
    std::function<void()> release_;
    std::function<void()> drop_pages_;
};

class Allocator {
public:
    Allocator() : counter_(std::make_shared<MemoryCounter>()) {}
    // Aligned, padded, tracked. Throws Error(OUT_OF_MEMORY) on failure, when the tracked bytes would pass
    // the limit, or when testing::AllocationFaults says so. Contents are uninitialised.
    std::shared_ptr<Storage> allocate(size_t bytes) const;
    uint64_t current_bytes() const { return counter_->current.load(); }
    uint64_t peak_bytes() const { return counter_->peak.load(); }
    void reset_peak() { counter_->reset_peak(); }
    // The model's max_bytes: allocations that would take current_bytes() above it fail (0 = no limit).
    // Lowering it below current_bytes() frees nothing; it only refuses the next allocations.
    void set_limit(uint64_t bytes) { counter_->limit.store(bytes); }
    uint64_t limit() const { return counter_->limit.load(); }

private:
    std::shared_ptr<MemoryCounter> counter_;
};

// Wrap memory that the engine does not own (zero-copy weights).
std::shared_ptr<Storage> borrow_storage(const void *data, size_t bytes, std::function<void()> release);

// "4.0 MiB" / "512 B": sizes in allocation failure messages.
std::string format_bytes(uint64_t bytes);

namespace testing {
// Test-only fault injection (not in the public API): process-wide, over every Allocator::allocate call on
// any thread (ops, weights providers, the prefetch thread). Tests count the allocations of one run, then
// fail the k-th one of a later run for every k.
struct AllocationFaults {
    // The k-th allocation from now (1 = the next) throws Error(OUT_OF_MEMORY); 0 disarms.
    static void fail_nth(uint64_t k);
    // Allocate calls since the process started (successful or not).
    static uint64_t allocations();
    // Faults injected so far.
    static uint64_t injected();
};
} // namespace testing

} // namespace onnxstream
