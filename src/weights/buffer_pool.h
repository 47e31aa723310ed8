// Page-aligned buffers that are used again instead of freed: memory whose pages are already in the
// process, for data copied in and out op by op (the packed store's copied entries, weights/packed_store.h).
// A fresh block costs a page fault per page on its first use (on some virtual machines as much as reading
// the data); a block from the pool costs nothing.
//
// Not thread-safe: the owner locks around it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace onnxstream {

class BufferPool {
public:
    // Free blocks are kept up to `kept_bytes` of capacity in all (0: every block is freed when given back).
    explicit BufferPool(uint64_t kept_bytes) : kept_bytes_(kept_bytes) {}
    ~BufferPool();
    BufferPool(const BufferPool &) = delete;
    BufferPool &operator=(const BufferPool &) = delete;

    // A block of at least `bytes`: the smallest free one that is big enough, else a new one. Null when
    // memory is exhausted. `capacity` receives its size, for give_back.
    void *take(uint64_t bytes, uint64_t &capacity);
    // Returns a block from take. The smallest free blocks are freed while the free ones pass kept_bytes:
    // a big block serves any smaller request, a small one only smaller ones.
    void give_back(void *block, uint64_t capacity);

    uint64_t free_bytes() const { return free_bytes_; }

private:
    uint64_t kept_bytes_;
    uint64_t free_bytes_ = 0;
    std::multimap<uint64_t, void *> free_; // capacity -> block
};

} // namespace onnxstream
