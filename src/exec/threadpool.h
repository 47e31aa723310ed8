// One pthreadpool per model, shared by XNNPACK kernels and our own parallel loops.
#pragma once

#include <cstddef>

#include <pthreadpool.h>

namespace onnxstream {

class ThreadPool {
public:
    // threads == 0: one per core.
    explicit ThreadPool(size_t threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;
    pthreadpool_t get() const { return pool_; }
    size_t threads() const;

private:
    pthreadpool_t pool_ = nullptr;
};

} // namespace onnxstream
