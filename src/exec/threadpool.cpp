#include "exec/threadpool.h"

#include "util/error.h"

namespace onnxstream {

ThreadPool::ThreadPool(size_t threads) {
    pool_ = pthreadpool_create(threads);
    if (!pool_) fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "cannot create a thread pool of ", threads, " threads");
}

ThreadPool::~ThreadPool() { pthreadpool_destroy(pool_); }

size_t ThreadPool::threads() const { return pthreadpool_get_threads_count(pool_); }

} // namespace onnxstream
