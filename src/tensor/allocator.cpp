#include "tensor/allocator.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "tensor/mapping_cache.h"
#include "util/error.h"

namespace onnxstream {

std::string format_bytes(uint64_t bytes) {
    if (bytes < 1024) return cat(bytes, " B");
    const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes) / 1024;
    size_t u = 0;
    while (v >= 1024 && u + 1 < 4) {
        v /= 1024;
        ++u;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

void MemoryCounter::add(uint64_t bytes) {
    uint64_t now;
    const uint64_t max = limit.load();
    if (max == 0) {
        now = current.fetch_add(bytes) + bytes;
    } else {
        // Reserve atomically: two threads (an op and the prefetch reader) must not both pass the check.
        uint64_t in_use = current.load();
        do {
            if (bytes > max || in_use > max - bytes)
                fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "allocating ", format_bytes(bytes), " (", bytes,
                     " bytes) would exceed max_bytes ", format_bytes(max), " (in use ", format_bytes(in_use), ")");
        } while (!current.compare_exchange_weak(in_use, in_use + bytes));
        now = in_use + bytes;
    }
    uint64_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
}

namespace {
std::atomic<uint64_t> g_allocations{0};
std::atomic<uint64_t> g_fault_countdown{0}; // 0 = disarmed; 1 = the next allocation fails
std::atomic<uint64_t> g_faults_injected{0};

void count_allocation(size_t bytes) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    uint64_t left = g_fault_countdown.load(std::memory_order_relaxed);
    while (left != 0 && !g_fault_countdown.compare_exchange_weak(left, left - 1)) {
    }
    if (left == 1) {
        g_faults_injected.fetch_add(1);
        fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "allocating ", format_bytes(bytes),
             " failed (injected by testing::AllocationFaults)");
    }
}

// Big tensors get their own mapping (through the mapping cache: see mapping_cache.h), returned to the
// system when freed. Through malloc, glibc raises its mmap threshold after each big free and then keeps such
// blocks in the heap, so a model's resident memory would follow the largest tensors ever freed instead of
// the ones alive (measured on an fp16 UNet-like model: 239 MB peak RSS via malloc, 151 MB with direct
// mappings).
// The counter already holds `bytes` (taken before the memory, so max_bytes refuses before anything is mapped).
std::shared_ptr<Storage> map_storage(size_t bytes, size_t total, const std::shared_ptr<MemoryCounter> &counter) {
    const Mapping m = map_pages(total);
    if (!m.base) {
        counter->sub(bytes);
        fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory mapping a tensor of ", format_bytes(bytes), " (", bytes,
             " bytes)");
    }
    try {
        return std::make_shared<Storage>(m.base, bytes, true, [m, bytes, counter]() {
            counter->sub(bytes);
            unmap_pages(m);
        });
    } catch (...) {
        counter->sub(bytes);
        unmap_pages(m);
        throw;
    }
}
} // namespace

std::shared_ptr<Storage> Allocator::allocate(size_t bytes) const {
    if (bytes > SIZE_MAX / 2)
        fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory: a tensor of ", format_bytes(bytes), " (", bytes,
             " bytes) is more than half of this ", sizeof(void *) * 8, "-bit process's address space");
    count_allocation(bytes);
    size_t total = (bytes + kTensorPadding + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    counter_->add(bytes);
    if (kUseDirectMaps && total >= kDirectMapBytes) return map_storage(bytes, total, counter_);
    void *p = std::aligned_alloc(kTensorAlignment, total);
    if (!p) {
        counter_->sub(bytes);
        fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory allocating a tensor of ", format_bytes(bytes), " (",
             bytes, " bytes)");
    }
    auto counter = counter_;
    try {
        return std::make_shared<Storage>(p, bytes, true, [p, bytes, counter]() {
            counter->sub(bytes);
            std::free(p);
        });
    } catch (...) {
        counter_->sub(bytes);
        std::free(p);
        throw;
    }
}

std::shared_ptr<Storage> borrow_storage(const void *data, size_t bytes, std::function<void()> release) {
    return std::make_shared<Storage>(const_cast<void *>(data), bytes, false, std::move(release));
}

namespace testing {
void AllocationFaults::fail_nth(uint64_t k) { g_fault_countdown.store(k); }
uint64_t AllocationFaults::allocations() { return g_allocations.load(); }
uint64_t AllocationFaults::injected() { return g_faults_injected.load(); }
} // namespace testing

} // namespace onnxstream
