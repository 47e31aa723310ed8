// XNNPACK's batch matrix multiply operator (float32), whose B is a run-time input packed on every run
// rather than a weight packed once. The engine's matmul_f32 (src/ops/matmul_kernels.h) instead creates a
// fully connected operator per B slice; this wrapper exists so tests/attention/xnn_ops_bench can time the
// two on attention's products. Only builds against the 2024 API compile it (ONNXSTREAM_XNNPACK_2024,
// src/xnnpack/meson.build): the 2022-02 snapshot has no such operator, and nothing else calls it.
#pragma once

#include <cstddef>
#include <memory>

#include <pthreadpool.h>

namespace onnxstream::xnn {

class BatchMatMulF32 {
public:
    // b slices are (n, k) when b_nk (XNN_FLAG_TRANSPOSE_B: attention's Q·Kᵀ reads K as stored), else (k, n).
    explicit BatchMatMulF32(bool b_nk);
    ~BatchMatMulF32();
    BatchMatMulF32(const BatchMatMulF32 &) = delete;
    BatchMatMulF32 &operator=(const BatchMatMulF32 &) = delete;
    // y[s] = a[s] · b[s] for s in [0, batch): a slices (m, k), y slices (m, n), everything contiguous. The
    // packed B lives in a workspace kept with the object, so repeated runs of one size reuse it. a and b
    // must stay readable 16 bytes past their ends (XNN_EXTRA_BYTES).
    void run(size_t batch, size_t m, size_t k, size_t n, const float *a, const float *b, float *y,
             pthreadpool_t pool);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace onnxstream::xnn
