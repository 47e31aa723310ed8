#include "tensor/allocator.h"

#include <cstdint>
#include <cstdlib>
#include <new>

#include "util/error.h"

namespace onnxstream {

void MemoryCounter::add(uint64_t bytes) {
    uint64_t now = current.fetch_add(bytes) + bytes;
    uint64_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
}

std::shared_ptr<Storage> Allocator::allocate(size_t bytes) const {
    if (bytes > SIZE_MAX / 2)
        fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "cannot allocate a tensor of ", bytes, " bytes");
    size_t total = (bytes + kTensorPadding + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    void *p = std::aligned_alloc(kTensorAlignment, total);
    if (!p) fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory allocating a tensor of ", bytes, " bytes");
    counter_->add(bytes);
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

} // namespace onnxstream
