#include "exec/roofline.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <vector>

#include "exec/threadpool.h"
#include "util/error.h"
#include "util/stopwatch.h"
#include "xnnpack/matmul.h"

namespace onnxstream {

namespace {

// Repeats `once` until `seconds` have passed (at least 3 times) and returns the fastest time of one call:
// the best case is the ceiling, the others include interference from the rest of the machine.
template <typename Fn> double best_seconds(double seconds, Fn &&once) {
    double best = 1e30;
    Stopwatch total;
    for (int i = 0; i < 3 || static_cast<double>(total.elapsed_ns()) < seconds * 1e9; ++i) {
        Stopwatch one;
        once();
        best = std::min(best, static_cast<double>(one.elapsed_ns()) / 1e9);
    }
    return best;
}

// A GEMM shaped like the UNet's convolutions as XNNPACK computes them (many pixels x a few hundred
// channels), small enough that the packed weights stay in cache: the compute ceiling, not a memory one.
double gemm_flops_per_s(pthreadpool_t pool) {
    const size_t m = 1024, k = 320, n = 320;
    std::vector<float> x(m * k + 16, 0.5f), w(k * n, 0.25f), y(m * n);
    xnn::FullyConnectedF32 fc(k, n, w.data(), false, nullptr, k, n);
    const double s = best_seconds(0.4, [&] { fc.run(m, x.data(), y.data(), pool); });
    return 2.0 * m * k * n / s;
}

struct CopyTask {
    const unsigned char *src;
    unsigned char *dst;
    size_t chunk, bytes;
};

void copy_chunk(void *context, size_t i) {
    const CopyTask &t = *static_cast<const CopyTask *>(context);
    const size_t begin = i * t.chunk, len = std::min(t.chunk, t.bytes - begin);
    std::memcpy(t.dst + begin, t.src + begin, len);
}

// A copy of 64 MiB, far beyond the caches, split over the pool: bytes read + bytes written per second.
double copy_bytes_per_s(pthreadpool_t pool) {
    const size_t bytes = 64u << 20, chunk = 1u << 20;
    std::vector<unsigned char> src, dst;
    try {
        src.assign(bytes, 1);
        dst.assign(bytes, 0);
    } catch (const std::bad_alloc &) {
        fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "measuring the memory bandwidth: cannot allocate 2 x 64 MiB");
    }
    CopyTask task{src.data(), dst.data(), chunk, bytes};
    const double s = best_seconds(0.4, [&] {
        pthreadpool_parallelize_1d(pool, copy_chunk, &task, (bytes + chunk - 1) / chunk, 0);
    });
    return 2.0 * static_cast<double>(bytes) / s;
}

} // namespace

Roofline measure_roofline(size_t threads) {
    ThreadPool pool(threads);
    Roofline r;
    r.flops_per_s = gemm_flops_per_s(pool.get());
    r.bytes_per_s = copy_bytes_per_s(pool.get());
    return r;
}

} // namespace onnxstream
