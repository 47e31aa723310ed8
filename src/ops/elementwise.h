// Helpers shared by the element-wise and activation op families: numpy broadcasting (shape rules and a
// parallel walk over broadcast operands), float16 <-> float32 staging, and common shape inference.
// Implemented in elementwise.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "ops/op.h"
#include "tensor/half.h"

namespace onnxstream {

// Elements per parallel task: large enough to amortise scheduling, small enough to balance 2-8 cores.
constexpr size_t kElementwiseTile = 16384;

// Multidirectional (numpy) broadcast of the shapes of the given present inputs; INVALID_MODEL naming the
// op and the offending inputs when they do not broadcast.
Shape broadcast_inputs(const InferContext &ctx, std::initializer_list<size_t> inputs);
Shape broadcast_all_inputs(const InferContext &ctx);
// The broadcast of two shapes known to be compatible.
Shape broadcast_pair(const Shape &a, const Shape &b);
// Unidirectional: true when `from` broadcasts to exactly `to`.
bool broadcasts_to(const Shape &from, const Shape &to);

// Output dtype/shape equal to input 0's, after checking its dtype is one of `allowed`.
std::vector<TensorInfo> infer_same_as_input(const InferContext &ctx, std::initializer_list<DType> allowed);
// Inputs min..max, all present with one dtype from `allowed`; the output has that dtype (or *out_dtype) and
// the broadcast of their shapes.
std::vector<TensorInfo> infer_same_type_inputs(const InferContext &ctx, size_t min, size_t max,
                                               std::initializer_list<DType> allowed,
                                               DType *out_dtype = nullptr);

// An output shape walked by runs of contiguous output elements. Operands are described by element strides
// per coalesced dimension (0 where broadcast), so a run is a stretch of the innermost dimension in which
// every operand either advances by one (contiguous) or repeats one value.
struct BroadcastLayout {
    std::vector<int64_t> dims;                 // coalesced output dims, outermost first, at least one
    std::vector<std::vector<int64_t>> strides; // [operand][dim]
    int64_t numel = 0;
    // Whether operand k advances along the innermost dimension (else it repeats within a run).
    bool inner_contiguous(size_t k) const { return strides[k].back() != 0; }
};
BroadcastLayout broadcast_layout(const Shape &out, const std::vector<const Shape *> &operands);

// Calls run(out_offset, operand_offsets, length) for consecutive runs covering the output, in parallel.
template <typename Run> void broadcast_runs(pthreadpool_t pool, const BroadcastLayout &l, Run &&run) {
    const size_t rank = l.dims.size(), nops = l.strides.size();
    const int64_t inner = l.dims.back();
    parallel_for(pool, static_cast<size_t>(l.numel), kElementwiseTile, [&](size_t begin, size_t end) {
        std::vector<int64_t> pos(rank, 0), base(nops, 0), cur(nops, 0);
        int64_t row = static_cast<int64_t>(begin) / inner, col = static_cast<int64_t>(begin) % inner;
        for (size_t d = rank - 1; d-- > 0;) {
            pos[d] = row % l.dims[d];
            row /= l.dims[d];
            for (size_t k = 0; k < nops; ++k) base[k] += pos[d] * l.strides[k][d];
        }
        for (int64_t i = static_cast<int64_t>(begin), stop = static_cast<int64_t>(end); i < stop;) {
            int64_t len = std::min(inner - col, stop - i);
            for (size_t k = 0; k < nops; ++k) cur[k] = base[k] + col * l.strides[k][rank - 1];
            run(i, cur.data(), len);
            i += len;
            col += len;
            if (col < inner) continue;
            col = 0;
            for (size_t d = rank - 1; d-- > 0;) {
                for (size_t k = 0; k < nops; ++k) base[k] += l.strides[k][d];
                if (++pos[d] < l.dims[d]) break;
                for (size_t k = 0; k < nops; ++k) base[k] -= l.strides[k][d] * l.dims[d];
                pos[d] = 0;
            }
        }
    });
}

// out[i] = f(a[ia], b[ib]) over the broadcast of a's and b's shapes to `out_shape`. `out` may alias `a`
// when a's shape is out_shape (accumulation).
template <typename A, typename B, typename O, typename F>
void binary_broadcast(pthreadpool_t pool, const Shape &out_shape, const A *a, const Shape &a_shape,
                      const B *b, const Shape &b_shape, O *out, F f) {
    BroadcastLayout l = broadcast_layout(out_shape, {&a_shape, &b_shape});
    if (l.numel == 0) return;
    const bool ca = l.inner_contiguous(0), cb = l.inner_contiguous(1);
    broadcast_runs(pool, l, [&](int64_t o, const int64_t *off, int64_t n) {
        O *y = out + o;
        const A *x0 = a + off[0];
        const B *x1 = b + off[1];
        if (ca && cb) {
            for (int64_t i = 0; i < n; ++i) y[i] = f(x0[i], x1[i]);
        } else if (ca) {
            const B v = *x1;
            for (int64_t i = 0; i < n; ++i) y[i] = f(x0[i], v);
        } else if (cb) {
            const A v = *x0;
            for (int64_t i = 0; i < n; ++i) y[i] = f(v, x1[i]);
        } else {
            const O v = f(*x0, *x1);
            for (int64_t i = 0; i < n; ++i) y[i] = v;
        }
    });
}

// float16 staging: an F32 tensor with the values of a float tensor (the tensor itself when already F32).
Tensor to_f32(const RunContext &ctx, const Tensor &t);
// Write n float32 values into `out` (F32 copy or F16 conversion), in parallel.
void store_f32(pthreadpool_t pool, const float *src, Tensor &out);

// out = fn over a float tensor, where fn(const float *x, float *y, size_t n) is a plain loop. F16 tensors are
// converted tile by tile through stack buffers, so no full-size float32 copy is made.
template <typename Fn> void map_float(pthreadpool_t pool, const Tensor &in, Tensor &out, Fn fn) {
    const size_t n = static_cast<size_t>(in.numel());
    if (in.dtype() == DType::F32) {
        const float *x = in.data<float>();
        float *y = out.data<float>();
        parallel_for(pool, n, kElementwiseTile, [&](size_t b, size_t e) { fn(x + b, y + b, e - b); });
        return;
    }
    const uint16_t *x = in.data<uint16_t>();
    uint16_t *y = out.data<uint16_t>();
    parallel_for(pool, n, kElementwiseTile, [&](size_t b, size_t e) {
        constexpr size_t kChunk = 1024;
        float buf[kChunk];
        for (size_t i = b; i < e; i += kChunk) {
            size_t len = std::min(kChunk, e - i);
            half_to_float_n(x + i, buf, len);
            fn(buf, buf, len);
            float_to_half_n(buf, y + i, len);
        }
    });
}

} // namespace onnxstream
