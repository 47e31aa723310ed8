// The strided-copy engine behind every layout-changing shape op, plus the ops that are nothing but a
// permutation: Transpose, DepthToSpace, SpaceToDepth.
#include "ops/transpose.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "ops/registry.h"
#include "ops/shape_common.h"
#include "tensor/float8.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

// Walks a multi-index in row-major order, tracking the element offsets it maps to in two arrays.
struct Walker {
    const std::vector<int64_t> &dims, &a_strides, &b_strides;
    std::vector<int64_t> idx;
    int64_t a = 0, b = 0;
    Walker(const std::vector<int64_t> &d, const std::vector<int64_t> &as, const std::vector<int64_t> &bs,
           int64_t linear)
        : dims(d), a_strides(as), b_strides(bs), idx(d.size(), 0) {
        for (size_t i = d.size(); i-- > 0;) {
            idx[i] = linear % d[i];
            linear /= d[i];
            a += idx[i] * as[i];
            b += idx[i] * bs[i];
        }
    }
    void next() {
        for (size_t i = dims.size(); i-- > 0;) {
            a += a_strides[i];
            b += b_strides[i];
            if (++idx[i] < dims[i]) return;
            a -= a_strides[i] * dims[i];
            b -= b_strides[i] * dims[i];
            idx[i] = 0;
        }
    }
};

template <typename T> void gather_row(T *dst, const T *src, int64_t n, int64_t stride) {
    for (int64_t j = 0; j < n; ++j) dst[j] = src[j * stride];
}

void gather_row_any(void *dst, const void *src, int64_t n, int64_t stride, size_t esz) {
    switch (esz) {
    case 1: gather_row(static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), n, stride); break;
    case 2: gather_row(static_cast<uint16_t *>(dst), static_cast<const uint16_t *>(src), n, stride); break;
    case 4: gather_row(static_cast<uint32_t *>(dst), static_cast<const uint32_t *>(src), n, stride); break;
    default: gather_row(static_cast<uint64_t *>(dst), static_cast<const uint64_t *>(src), n, stride); break;
    }
}

// Rows of the innermost dimension: contiguous (memcpy), broadcast (fill) or strided (gather). Long rows
// are cut into chunks so that a single huge row still spreads over the pool.
void copy_rows(char *dst, const char *src, const std::vector<int64_t> &dims,
               const std::vector<int64_t> &strides, size_t esz, pthreadpool_t pool) {
    size_t n = dims.size();
    int64_t len = dims[n - 1], stride = strides[n - 1];
    std::vector<int64_t> outer(dims.begin(), dims.end() - 1),
        outer_strides(strides.begin(), strides.end() - 1);
    std::vector<int64_t> unused(outer.size(), 0);
    int64_t rows = shape_numel(outer);
    int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(len, static_cast<int64_t>(65536 / esz)));
    int64_t per_row = (len + chunk - 1) / chunk;
    int64_t items = rows * per_row;
    size_t tile = shapeops::task_tile(static_cast<size_t>(chunk) * esz);
    parallel_for(pool, static_cast<size_t>(items), tile, [&](size_t begin, size_t end) {
        int64_t row = static_cast<int64_t>(begin) / per_row;
        Walker w(outer, outer_strides, unused, row);
        for (int64_t item = static_cast<int64_t>(begin); item < static_cast<int64_t>(end); ++item) {
            int64_t r = item / per_row, c = item % per_row;
            if (r != row) {
                w.next();
                row = r;
            }
            int64_t start = c * chunk, count = std::min(chunk, len - start);
            char *d = dst + static_cast<size_t>(r * len + start) * esz;
            const char *s = src + (w.a + start * stride) * static_cast<int64_t>(esz);
            if (stride == 1)
                std::memcpy(d, s, static_cast<size_t>(count) * esz);
            else if (stride == 0)
                shapeops::fill_elements(d, static_cast<size_t>(count), s, esz);
            else
                gather_row_any(d, s, count, stride, esz);
        }
    });
}

// dst[i * dst_stride_i + j] = src[i + j * src_stride_j] for i < ni, j < nj. Each M x M micro-tile (M
// elements = one 64-byte cache line) reads M whole source lines and writes M whole destination lines
// through an L1-resident buffer, so every line is touched once even when the strides are multiples of
// the page size and map all the lines of a tile to the same cache set.
template <typename T>
void transpose_block(T *dst, const T *src, int64_t ni, int64_t nj, int64_t dst_stride_i,
                     int64_t src_stride_j) {
    constexpr int64_t M = 64 / static_cast<int64_t>(sizeof(T));
    // Narrow blocks (NCHW<->NHWC with 3 channels): long loops, reads or writes contiguous.
    if (nj < M) {
        for (int64_t j = 0; j < nj; ++j)
            for (int64_t i = 0; i < ni; ++i) dst[i * dst_stride_i + j] = src[i + j * src_stride_j];
        return;
    }
    if (ni < M) {
        for (int64_t i = 0; i < ni; ++i)
            for (int64_t j = 0; j < nj; ++j) dst[i * dst_stride_i + j] = src[i + j * src_stride_j];
        return;
    }
    T tmp[M][M];
    for (int64_t i1 = 0; i1 < ni; i1 += M) {
        int64_t mi = std::min(M, ni - i1);
        for (int64_t j1 = 0; j1 < nj; j1 += M) {
            int64_t mj = std::min(M, nj - j1);
            if (mi == M && mj == M) {
                for (int64_t j = 0; j < M; ++j) {
                    const T *s = src + i1 + (j1 + j) * src_stride_j;
                    for (int64_t i = 0; i < M; ++i) tmp[j][i] = s[i];
                }
                for (int64_t i = 0; i < M; ++i) {
                    T *d = dst + (i1 + i) * dst_stride_i + j1;
                    for (int64_t j = 0; j < M; ++j) d[j] = tmp[j][i];
                }
            } else {
                for (int64_t i = i1; i < i1 + mi; ++i) {
                    T *d = dst + i * dst_stride_i;
                    for (int64_t j = j1; j < j1 + mj; ++j) d[j] = src[i + j * src_stride_j];
                }
            }
        }
    }
}

void transpose_block_any(void *dst, const void *src, int64_t ni, int64_t nj, int64_t dsi, int64_t ssj,
                         size_t esz) {
    switch (esz) {
    case 1:
        transpose_block(static_cast<uint8_t *>(dst), static_cast<const uint8_t *>(src), ni, nj, dsi, ssj);
        break;
    case 2:
        transpose_block(static_cast<uint16_t *>(dst), static_cast<const uint16_t *>(src), ni, nj, dsi, ssj);
        break;
    case 4:
        transpose_block(static_cast<uint32_t *>(dst), static_cast<const uint32_t *>(src), ni, nj, dsi, ssj);
        break;
    default:
        transpose_block(static_cast<uint64_t *>(dst), static_cast<const uint64_t *>(src), ni, nj, dsi, ssj);
        break;
    }
}

// A copy whose source is contiguous along dimension k (not the last): a batch of 2-D transposes
// between k and the last dimension. NCHW<->NHWC reduce to this after dimension merging.
void copy_transposed(char *dst, const char *src, const std::vector<int64_t> &dims,
                     const std::vector<int64_t> &strides, size_t k, size_t esz, pthreadpool_t pool) {
    size_t n = dims.size();
    std::vector<int64_t> dst_strides = shapeops::contiguous_strides(dims);
    std::vector<int64_t> od, os, odst;
    for (size_t i = 0; i + 1 < n; ++i) {
        if (i == k) continue;
        od.push_back(dims[i]);
        os.push_back(strides[i]);
        odst.push_back(dst_strides[i]);
    }
    int64_t ni = dims[k], nj = dims[n - 1], dsi = dst_strides[k], ssj = strides[n - 1];
    int64_t outer = shape_numel(od);
    // Items of whole micro-tile rows (64 is a multiple of every micro-tile size) and ~16K elements.
    int64_t rows_per_item = std::min(ni, std::max<int64_t>(64, 16384 / std::max<int64_t>(nj, 1) / 64 * 64));
    int64_t per_outer = (ni + rows_per_item - 1) / rows_per_item;
    int64_t items = outer * per_outer;
    size_t tile = shapeops::task_tile(static_cast<size_t>(rows_per_item * nj) * esz);
    parallel_for(pool, static_cast<size_t>(items), tile, [&](size_t begin, size_t end) {
        int64_t o = static_cast<int64_t>(begin) / per_outer;
        Walker w(od, os, odst, o);
        for (int64_t item = static_cast<int64_t>(begin); item < static_cast<int64_t>(end); ++item) {
            int64_t oi = item / per_outer, part = item % per_outer;
            if (oi != o) {
                w.next();
                o = oi;
            }
            int64_t i0 = part * rows_per_item, cnt = std::min(rows_per_item, ni - i0);
            char *d = dst + (w.b + i0 * dsi) * static_cast<int64_t>(esz);
            const char *s = src + (w.a + i0) * static_cast<int64_t>(esz);
            transpose_block_any(d, s, cnt, nj, dsi, ssj, esz);
        }
    });
}

} // namespace

void strided_copy(void *dst, const void *src, const Shape &shape, const std::vector<int64_t> &src_strides,
                  size_t elem_size, pthreadpool_t pool) {
    if (shape_numel(shape) == 0) return;
    // Drop unit dimensions and merge neighbours that are contiguous in the source too: most copies
    // collapse to a few dimensions, often one.
    std::vector<int64_t> dims, strides;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == 1) continue;
        if (!dims.empty() && strides.back() == src_strides[i] * shape[i]) {
            dims.back() *= shape[i];
            strides.back() = src_strides[i];
        } else {
            dims.push_back(shape[i]);
            strides.push_back(src_strides[i]);
        }
    }
    if (dims.empty()) {
        dims.push_back(1);
        strides.push_back(1);
    }
    char *d = static_cast<char *>(dst);
    const char *s = static_cast<const char *>(src);
    size_t n = dims.size();
    if (strides[n - 1] != 1 && strides[n - 1] != 0) {
        for (size_t k = 0; k + 1 < n; ++k)
            if (strides[k] == 1) {
                copy_transposed(d, s, dims, strides, k, elem_size, pool);
                return;
            }
    }
    copy_rows(d, s, dims, strides, elem_size, pool);
}

void permute_copy(void *dst, const void *src, const Shape &in_shape, const std::vector<int64_t> &perm,
                  size_t elem_size, pthreadpool_t pool) {
    std::vector<int64_t> in_strides = shapeops::contiguous_strides(in_shape);
    Shape out_shape(perm.size());
    std::vector<int64_t> strides(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) {
        out_shape[i] = in_shape[static_cast<size_t>(perm[i])];
        strides[i] = in_strides[static_cast<size_t>(perm[i])];
    }
    strided_copy(dst, src, out_shape, strides, elem_size, pool);
}

namespace shapeops {

namespace {
template <typename T> void fill_typed(void *dst, size_t count, const void *value) {
    T v;
    std::memcpy(&v, value, sizeof(T));
    T *d = static_cast<T *>(dst);
    for (size_t i = 0; i < count; ++i) d[i] = v;
}
} // namespace

void fill_elements(void *dst, size_t count, const void *value, size_t esz) {
    switch (esz) {
    case 1: std::memset(dst, *static_cast<const uint8_t *>(value), count); break;
    case 2: fill_typed<uint16_t>(dst, count, value); break;
    case 4: fill_typed<uint32_t>(dst, count, value); break;
    default: fill_typed<uint64_t>(dst, count, value); break;
    }
}

void parallel_memcpy(pthreadpool_t pool, void *dst, const void *src, size_t bytes) {
    size_t chunks = (bytes + kTaskBytes - 1) / kTaskBytes;
    parallel_for(pool, chunks, 1, [&](size_t begin, size_t end) {
        size_t from = begin * kTaskBytes, to = std::min(bytes, end * kTaskBytes);
        std::memcpy(static_cast<char *>(dst) + from, static_cast<const char *>(src) + from, to - from);
    });
}

namespace {
// Truncate toward zero and clamp, so out-of-range (or NaN -> 0) values stay defined behaviour.
template <typename I> I saturate(double v) {
    if (!(v == v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
    if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
    return static_cast<I>(v);
}
} // namespace

void store_scalar(DType dtype, double value, void *out) {
    switch (dtype) {
    case DType::F32: {
        float f = static_cast<float>(value);
        std::memcpy(out, &f, 4);
        break;
    }
    case DType::F16: {
        uint16_t h = float_to_half(static_cast<float>(value));
        std::memcpy(out, &h, 2);
        break;
    }
    case DType::I64: {
        int64_t v = saturate<int64_t>(value);
        std::memcpy(out, &v, 8);
        break;
    }
    case DType::I32: {
        int32_t v = saturate<int32_t>(value);
        std::memcpy(out, &v, 4);
        break;
    }
    case DType::I8: *static_cast<int8_t *>(out) = saturate<int8_t>(value); break;
    case DType::U8: *static_cast<uint8_t *>(out) = saturate<uint8_t>(value); break;
    case DType::I4: *static_cast<int8_t *>(out) = static_cast<int8_t>(std::clamp<double>(value, -8, 7)); break;
    case DType::U4: *static_cast<uint8_t *>(out) = static_cast<uint8_t>(std::clamp<double>(value, 0, 15)); break;
    case DType::Bool: *static_cast<uint8_t *>(out) = value != 0 ? 1 : 0; break;
    case DType::F64: std::memcpy(out, &value, 8); break;
    case DType::F8E4M3FN:
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2:
    case DType::F8E5M2FNUZ: {
        Float8Format f;
        float8_format(dtype, f);
        *static_cast<uint8_t *>(out) = double_to_float8(value, f, true);
        break;
    }
    case DType::BF16: {
        uint16_t b = float_to_bfloat16(static_cast<float>(value));
        std::memcpy(out, &b, 2);
        break;
    }
    case DType::I16: {
        int16_t v = saturate<int16_t>(value);
        std::memcpy(out, &v, 2);
        break;
    }
    case DType::U16: {
        uint16_t v = saturate<uint16_t>(value);
        std::memcpy(out, &v, 2);
        break;
    }
    case DType::U32: {
        uint32_t v = saturate<uint32_t>(value);
        std::memcpy(out, &v, 4);
        break;
    }
    case DType::U64: {
        uint64_t v = saturate<uint64_t>(value);
        std::memcpy(out, &v, 8);
        break;
    }
    }
}

namespace {

// ---- Transpose ----

std::vector<int64_t> transpose_perm(const std::string &where, const Attributes &attrs, size_t rank) {
    std::vector<int64_t> perm;
    if (!attrs.has("perm")) {
        for (size_t i = rank; i-- > 0;) perm.push_back(static_cast<int64_t>(i));
        return perm;
    }
    perm = normalize_axes(where, attrs.get_ints("perm"), static_cast<int64_t>(rank), "perm");
    if (perm.size() != rank)
        invalid(where, "perm has ", perm.size(), " entries but the input has rank ", rank);
    return perm;
}

std::vector<TensorInfo> transpose_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    const TensorInfo &in = ctx.input(0);
    auto perm = transpose_perm(ctx.node.where, ctx.attrs(), in.shape.size());
    Shape out(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) out[i] = in.shape[static_cast<size_t>(perm[i])];
    return {info_like(in, out)};
}

void transpose_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    auto perm = transpose_perm(ctx.node.where, ctx.attrs(), in.rank());
    // When only unit dimensions move, the bytes are already in output order.
    std::vector<int64_t> moved;
    for (int64_t p : perm)
        if (in.dim(static_cast<size_t>(p)) != 1) moved.push_back(p);
    if (std::is_sorted(moved.begin(), moved.end())) {
        ctx.set_output(0, in.reshaped(ctx.output_info(0).shape));
        return;
    }
    Tensor &out = alloc_like_input(ctx);
    permute_copy(out.raw(), in.raw(), in.shape(), perm, dtype_size(in.dtype()), ctx.pool());
}

// ---- DepthToSpace / SpaceToDepth ----

int64_t blocksize(const InferContext &ctx) {
    int64_t b = ctx.attrs().require_int("blocksize");
    if (b < 1) ctx.error("blocksize must be >= 1, got ", b);
    return b;
}

const TensorInfo &nchw_input(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    const TensorInfo &in = ctx.input(0);
    if (in.shape.size() != 4) ctx.error("expects a 4-D NCHW input, got shape ", shape_str(in.shape));
    return in;
}

bool crd_mode(const std::string &where, const Attributes &attrs) {
    std::string mode = attrs.get_string("mode", "DCR");
    if (mode == "DCR") return false;
    if (mode == "CRD") return true;
    fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": mode '", mode, "' is not supported (expected DCR or CRD)");
}

std::vector<TensorInfo> depth_to_space_infer(const InferContext &ctx) {
    const TensorInfo &in = nchw_input(ctx);
    int64_t b = blocksize(ctx);
    crd_mode(ctx.node.where, ctx.attrs());
    if (in.shape[1] % (b * b) != 0)
        ctx.error("channels ", in.shape[1], " are not divisible by blocksize^2 = ", b * b);
    return {info_like(in, {in.shape[0], in.shape[1] / (b * b), in.shape[2] * b, in.shape[3] * b})};
}

void depth_to_space_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    int64_t b = ctx.attrs().get_int("blocksize", 1);
    int64_t n = in.dim(0), c = in.dim(1) / (b * b), h = in.dim(2), w = in.dim(3);
    int64_t sn = in.dim(1) * h * w;
    // The output viewed as (N, C', H, b, W, b); each axis reads the input with the stride of the input
    // axis it came from (DCR: input channel = (b1 * b + b2) * C' + c; CRD: c * b * b + b1 * b + b2).
    std::vector<int64_t> strides = crd_mode(ctx.node.where, ctx.attrs())
                                       ? std::vector<int64_t>{sn, b * b * h * w, w, b * h * w, 1, h * w}
                                       : std::vector<int64_t>{sn, h * w, w, b * c * h * w, 1, c * h * w};
    Tensor &out = alloc_like_input(ctx);
    strided_copy(out.raw(), in.raw(), {n, c, h, b, w, b}, strides, dtype_size(in.dtype()), ctx.pool());
}

std::vector<TensorInfo> space_to_depth_infer(const InferContext &ctx) {
    const TensorInfo &in = nchw_input(ctx);
    int64_t b = blocksize(ctx);
    if (in.shape[2] % b != 0 || in.shape[3] % b != 0)
        ctx.error("spatial size ", in.shape[2], "x", in.shape[3], " is not divisible by blocksize ", b);
    return {info_like(in, {in.shape[0], in.shape[1] * b * b, in.shape[2] / b, in.shape[3] / b})};
}

void space_to_depth_run(RunContext &ctx) {
    const Tensor &in = ctx.input(0);
    int64_t b = ctx.attrs().get_int("blocksize", 1);
    int64_t n = in.dim(0), c = in.dim(1), h = in.dim(2), w = in.dim(3);
    // Output channel = (b1 * b + b2) * C + c: the output viewed as (N, b, b, C, H/b, W/b).
    std::vector<int64_t> strides{c * h * w, w, 1, h * w, b * w, b};
    Tensor &out = alloc_like_input(ctx);
    strided_copy(out.raw(), in.raw(), {n, b, b, c, h / b, w / b}, strides, dtype_size(in.dtype()),
                 ctx.pool());
}

} // namespace

} // namespace shapeops

void register_transpose_ops(Registry &r) {
    using namespace shapeops;
    r.add("Transpose", transpose_infer, transpose_run);
    r.add("DepthToSpace", depth_to_space_infer, depth_to_space_run);
    r.add("SpaceToDepth", space_to_depth_infer, space_to_depth_run);
}

} // namespace onnxstream
