#include "weights/buffer_pool.h"

#include <cstdlib>

namespace onnxstream {

namespace {
constexpr uint64_t kAlignment = 4096;
// Capacities are whole multiples of this, so that entries of nearly the same size share blocks.
constexpr uint64_t kGranule = 64 * 1024;
} // namespace

BufferPool::~BufferPool() {
    for (auto &[capacity, block] : free_) std::free(block);
}

void *BufferPool::take(uint64_t bytes, uint64_t &capacity) {
    auto it = free_.lower_bound(bytes == 0 ? 1 : bytes);
    if (it != free_.end()) {
        capacity = it->first;
        void *block = it->second;
        free_bytes_ -= capacity;
        free_.erase(it);
        return block;
    }
    capacity = (bytes + kGranule - 1) / kGranule * kGranule;
    if (capacity == 0) capacity = kGranule;
    if (capacity > SIZE_MAX) return nullptr;
    return std::aligned_alloc(kAlignment, static_cast<size_t>(capacity));
}

void BufferPool::give_back(void *block, uint64_t capacity) {
    if (!block) return;
    free_.emplace(capacity, block);
    free_bytes_ += capacity;
    while (free_bytes_ > kept_bytes_ && !free_.empty()) {
        auto smallest = free_.begin();
        free_bytes_ -= smallest->first;
        std::free(smallest->second);
        free_.erase(smallest);
    }
}

} // namespace onnxstream
