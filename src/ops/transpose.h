// Strided copies for any element size: the engine of Transpose, Expand, Tile, Slice and
// DepthToSpace/SpaceToDepth, usable by other op families that need a layout change.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <pthreadpool.h>

#include "tensor/tensor.h"

namespace onnxstream {

// dst is contiguous with shape `shape`; dst[i0,..,in] = src[i0*src_strides[0] + ... + in*src_strides[n]].
// Strides are in elements and may be zero (broadcast) or negative (reversed reads). elem_size is 1, 2, 4
// or 8. Multithreaded; true transposes go through a cache-blocked kernel.
void strided_copy(void *dst, const void *src, const Shape &shape, const std::vector<int64_t> &src_strides,
                  size_t elem_size, pthreadpool_t pool);

// dst = src (shape in_shape, contiguous) with its axes permuted: output axis i is input axis perm[i].
void permute_copy(void *dst, const void *src, const Shape &in_shape, const std::vector<int64_t> &perm,
                  size_t elem_size, pthreadpool_t pool);

} // namespace onnxstream
