// Tracked tensor memory: every tensor byte the engine allocates is counted here (current + peak),
// so runs and benchmarks can report the tensor high-water mark beside the OS's peak RSS.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace onnxstream {

// Extra readable bytes after every allocation: XNNPACK kernels may read up to XNN_EXTRA_BYTES (16)
// past the end of their inputs. 64 keeps the next allocation's alignment too.
constexpr size_t kTensorPadding = 64;
constexpr size_t kTensorAlignment = 64;

struct MemoryCounter {
    std::atomic<uint64_t> current{0};
    std::atomic<uint64_t> peak{0};
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
    ~Storage() {
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

private:
    void *data_;
    size_t bytes_;
    bool padded_;
    bool activation_ = false;
    std::function<void()> release_;
};

class Allocator {
public:
    Allocator() : counter_(std::make_shared<MemoryCounter>()) {}
    // Aligned, padded, tracked. Throws Error(OUT_OF_MEMORY) on failure. Contents are uninitialised.
    std::shared_ptr<Storage> allocate(size_t bytes) const;
    uint64_t current_bytes() const { return counter_->current.load(); }
    uint64_t peak_bytes() const { return counter_->peak.load(); }
    void reset_peak() { counter_->reset_peak(); }

private:
    std::shared_ptr<MemoryCounter> counter_;
};

// Wrap memory that the engine does not own (zero-copy weights).
std::shared_ptr<Storage> borrow_storage(const void *data, size_t bytes, std::function<void()> release);

} // namespace onnxstream
