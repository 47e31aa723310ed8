// XNNPACK's transpose operator on 4-byte elements. The engine's Transpose runs its own permute_copy
// (src/ops/transpose.h); this wrapper exists so tests/attention/xnn_ops_bench can time XNNPACK's kernel
// against it on the same shapes. Only builds against the 2024 API compile it (ONNXSTREAM_XNNPACK_2024,
// src/xnnpack/meson.build): the bench is built only there, and nothing else calls it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <pthreadpool.h>

namespace onnxstream::xnn {

class TransposeX32 {
public:
    TransposeX32();
    ~TransposeX32();
    TransposeX32(const TransposeX32 &) = delete;
    TransposeX32 &operator=(const TransposeX32 &) = delete;
    // out = in (shape in_shape, contiguous) with its axes permuted: output axis i is input axis perm[i], as
    // in permute_copy. At most 6 axes (XNNPACK's limit). Each call reshapes the operator, so one object
    // serves any shape; reshaping only plans the tiling and costs microseconds.
    void run(const void *in, void *out, const std::vector<int64_t> &in_shape, const std::vector<int64_t> &perm,
             pthreadpool_t pool);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace onnxstream::xnn
