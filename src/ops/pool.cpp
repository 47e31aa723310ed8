// MaxPool, AveragePool, GlobalAveragePool and GlobalMaxPool on NCHW tensors of any spatial rank, computed in
// place on the NCHW layout: whole output rows are accumulated with contiguous, vectorisable loops, so no
// transposes are needed (XNNPACK's NHWC pooling plus the two transposes measured slower on large maps and
// at best 0.1 ms faster on YOLOv8's 20x20 SPPF pools). float16 tensors are computed in float32. Output
// sizes, ceil_mode windows and count_include_pad divisors follow ONNX Runtime. MaxPool on int8/uint8 and
// MaxPool's Indices output take a direct per-window loop instead.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "ops/layout.h"
#include "ops/registry.h"
#include "ops/window_geometry.h"

namespace onnxstream {

namespace {

template <typename... Args>[[noreturn]] void invalid(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": ", std::forward<Args>(args)...);
}

struct PoolGeometry {
    size_t spatial = 0;
    int64_t planes = 0; // N * C
    Shape in, kernel, strides, dilations, pad_begin, pad_end, out;
};

using window::per_axis;

void check_spatial_input(const std::string &where, const Shape &x) {
    if (x.size() < 3)
        invalid(where, "input has shape ", shape_str(x), ", expected (N, C, spatial...) of rank >= 3");
}

PoolGeometry pool_geometry(const Attributes &attrs, const std::string &where, const Shape &x) {
    check_spatial_input(where, x);
    PoolGeometry g;
    g.spatial = x.size() - 2;
    g.planes = x[0] * x[1];
    g.in.assign(x.begin() + 2, x.end());
    g.kernel = attrs.get_ints("kernel_shape", {});
    if (g.kernel.size() != g.spatial)
        invalid(where, "kernel_shape has ", g.kernel.size(), " values, expected one per spatial axis (",
                g.spatial, ")");
    for (int64_t k : g.kernel)
        if (k < 1) invalid(where, "kernel_shape value ", k, " must be >= 1");
    g.strides = per_axis(attrs, where, "strides", g.spatial, 1, 1);
    g.dilations = per_axis(attrs, where, "dilations", g.spatial, 1, 1);
    std::vector<int64_t> pads = per_axis(attrs, where, "pads", 2 * g.spatial, 0, 0);
    g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(g.spatial));
    g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(g.spatial), pads.end());
    const int64_t ceil_mode = attrs.get_int("ceil_mode", 0);
    if (ceil_mode != 0 && ceil_mode != 1) invalid(where, "ceil_mode is ", ceil_mode, ", expected 0 or 1");
    const window::AutoPad auto_pad = window::parse_auto_pad(attrs, where);
    g.out.resize(g.spatial);
    for (size_t i = 0; i < g.spatial; ++i) {
        const int64_t in = g.in[i], s = g.strides[i], dk = (g.kernel[i] - 1) * g.dilations[i] + 1;
        if (auto_pad == window::AutoPad::Valid)
            g.pad_begin[i] = g.pad_end[i] = 0;
        else if (auto_pad != window::AutoPad::NotSet)
            window::same_padding(auto_pad, in, s, dk, g.pad_begin[i], g.pad_end[i]);
        const int64_t span = in + g.pad_begin[i] + g.pad_end[i] - dk;
        if (span < 0)
            invalid(where, "spatial axis ", i, ": the padded input (", in, " + pads ", g.pad_begin[i], ",",
                    g.pad_end[i], ") is smaller than the dilated kernel (", dk, ")");
        int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
        // A ceil_mode window must start inside the input or its leading padding (ONNX Runtime, PyTorch).
        if (ceil_mode && (out - 1) * s >= in + g.pad_begin[i]) --out;
        g.out[i] = out;
    }
    return g;
}

// Per spatial axis: for every output index, the window's valid input indices and its divisor share.
struct PoolAxis {
    // The valid inputs of output o are first[o] + j*dilation for j < count_valid[o].
    std::vector<int64_t> first, count_valid, count_padded;
    int64_t dilation = 1;
};

PoolAxis pool_axis(const PoolGeometry &g, size_t a) {
    PoolAxis ax;
    const int64_t in = g.in[a], s = g.strides[a], k = g.kernel[a], d = g.dilations[a], pb = g.pad_begin[a];
    ax.dilation = d;
    for (int64_t o = 0; o < g.out[a]; ++o) {
        const int64_t start = o * s - pb;
        // Taps j with 0 <= start + j*d < in.
        const int64_t j0 = start >= 0 ? 0 : (-start + d - 1) / d;
        const int64_t j1 = std::min(k, start >= in ? 0 : (in - 1 - start) / d + 1);
        ax.first.push_back(start + j0 * d);
        ax.count_valid.push_back(std::max<int64_t>(0, j1 - j0));
        // count_include_pad counts the window's taps inside the padded input, not those of a ceil_mode window
        // beyond it (ONNX Runtime, PyTorch). ONNX's reference counts those too, so its node test
        // test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True disagrees with both.
        const int64_t end = std::min(start + k * d, in + g.pad_end[a]);
        ax.count_padded.push_back(end > start ? 1 + (end - start - 1) / d : 0);
    }
    return ax;
}

enum class PoolKind { Max, Avg };

// y[plane][out...] from x[plane][in...]. Max and sum over a window are separable because the valid part
// of a window is a box: pass 1 pools every input row along the innermost axis (into `rows`, or straight
// into y for 1-D), pass 2 combines whole pooled rows over the window taps of the outer axes. Every
// inner loop runs over contiguous floats. `rows` holds planes * (input rows) * out_w floats.
void pool_nchw(const float *x, float *y, float *rows, const PoolGeometry &g, PoolKind kind, bool include_pad,
               pthreadpool_t pool) {
    const size_t sp = g.spatial, last = sp - 1;
    std::vector<PoolAxis> axes;
    for (size_t a = 0; a < sp; ++a) axes.push_back(pool_axis(g, a));
    const int64_t in_w = g.in[last], out_w = g.out[last], s = g.strides[last], d = g.dilations[last];
    const int64_t pb = g.pad_begin[last], k = g.kernel[last];
    const bool is_max = kind == PoolKind::Max;
    const float init = is_max ? std::numeric_limits<float>::lowest() : 0.0f;
    // Innermost taps: input index ow*s + off, valid for ow in [lo, hi).
    struct Tap {
        int64_t off, lo, hi;
    };
    std::vector<Tap> taps;
    for (int64_t j = 0; j < k; ++j) {
        const int64_t off = j * d - pb;
        const int64_t lo = off >= 0 ? 0 : (-off + s - 1) / s;
        const int64_t hi = std::min(out_w, in_w - 1 - off < 0 ? 0 : (in_w - 1 - off) / s + 1);
        if (lo < hi) taps.push_back({off, lo, hi});
    }
    int64_t in_rows = 1, out_rows = 1;
    for (size_t a = 0; a < last; ++a) {
        in_rows *= g.in[a];
        out_rows *= g.out[a];
    }
    float *pooled = sp == 1 ? y : rows;
    const size_t n_in_rows = static_cast<size_t>(g.planes * in_rows);
    const size_t row_work = static_cast<size_t>(std::max<int64_t>(1, out_w * k));
    parallel_for(pool, n_in_rows, std::max<size_t>(1, 8192 / row_work), [&](size_t begin, size_t end) {
        for (size_t r = begin; r < end; ++r) {
            const float *src_row = x + static_cast<int64_t>(r) * in_w;
            float *dst = pooled + static_cast<int64_t>(r) * out_w;
            std::fill(dst, dst + out_w, init);
            for (const Tap &t : taps) {
                const float *src = src_row + t.off;
                if (is_max && s == 1) {
                    for (int64_t o = t.lo; o < t.hi; ++o) dst[o] = src[o] > dst[o] ? src[o] : dst[o];
                } else if (is_max) {
                    for (int64_t o = t.lo; o < t.hi; ++o) dst[o] = src[o * s] > dst[o] ? src[o * s] : dst[o];
                } else if (s == 1) {
                    for (int64_t o = t.lo; o < t.hi; ++o) dst[o] += src[o];
                } else {
                    for (int64_t o = t.lo; o < t.hi; ++o) dst[o] += src[o * s];
                }
            }
        }
    });

    std::vector<int64_t> in_strides(sp, 1); // in rows, over the outer axes
    for (size_t a = last; a-- > 1;) in_strides[a - 1] = in_strides[a] * g.in[a];
    const PoolAxis &wax = axes[last];
    const size_t n_out_rows = static_cast<size_t>(g.planes * out_rows);
    parallel_for(pool, n_out_rows, std::max<size_t>(1, 8192 / row_work), [&](size_t begin, size_t end) {
        std::vector<int64_t> oc(sp, 0), tap(sp, 0);
        for (size_t r = begin; r < end; ++r) {
            const int64_t plane = static_cast<int64_t>(r) / out_rows;
            int64_t rem = static_cast<int64_t>(r) % out_rows;
            for (size_t a = last; a-- > 0;) {
                oc[a] = rem % g.out[a];
                rem /= g.out[a];
            }
            float *yr = y + static_cast<int64_t>(r) * out_w;
            int64_t outer_valid = 1, outer_padded = 1;
            for (size_t a = 0; a < last; ++a) {
                outer_valid *= axes[a].count_valid[static_cast<size_t>(oc[a])];
                outer_padded *= axes[a].count_padded[static_cast<size_t>(oc[a])];
                tap[a] = 0;
            }
            if (sp > 1) {
                std::fill(yr, yr + out_w, init);
                // Odometer over the valid taps of the outer axes.
                while (outer_valid > 0) {
                    int64_t in_row = plane * in_rows;
                    for (size_t a = 0; a < last; ++a)
                        in_row += (axes[a].first[static_cast<size_t>(oc[a])] + tap[a] * axes[a].dilation) *
                                  in_strides[a];
                    const float *src = rows + in_row * out_w;
                    if (is_max) {
                        for (int64_t o = 0; o < out_w; ++o) yr[o] = src[o] > yr[o] ? src[o] : yr[o];
                    } else {
                        for (int64_t o = 0; o < out_w; ++o) yr[o] += src[o];
                    }
                    size_t a = last;
                    while (a-- > 0) {
                        if (++tap[a] < axes[a].count_valid[static_cast<size_t>(oc[a])]) break;
                        tap[a] = 0;
                    }
                    if (a == static_cast<size_t>(-1)) break;
                }
            }
            if (!is_max) {
                for (int64_t o = 0; o < out_w; ++o) {
                    const int64_t valid = outer_valid * wax.count_valid[static_cast<size_t>(o)];
                    const int64_t count =
                        include_pad ? outer_padded * wax.count_padded[static_cast<size_t>(o)] : valid;
                    yr[o] = valid > 0 ? yr[o] / static_cast<float>(count) : 0.0f;
                }
            }
        }
    });
}

// Max pooling window by window: for the 8-bit integer dtypes, and for the Indices output, ONNX's flat index of
// each maximum in the NCHW input (row-major over the spatial axes, or column-major with storage_order 1,
// plus plane * plane size). The first maximum in row-major window order wins, as in ONNX Runtime.
template <typename T>
void max_pool_direct(const T *x, T *y, int64_t *indices, const PoolGeometry &g, bool column_major,
                     pthreadpool_t pool) {
    const size_t sp = g.spatial;
    int64_t in_plane = 1, out_plane = 1, taps = 1;
    for (size_t a = 0; a < sp; ++a) {
        in_plane *= g.in[a];
        out_plane *= g.out[a];
        taps *= g.kernel[a];
    }
    std::vector<int64_t> row_major(sp, 1), col_major(sp, 1); // element strides of the spatial axes
    for (size_t a = sp - 1; a-- > 0;) row_major[a] = row_major[a + 1] * g.in[a + 1];
    for (size_t a = 1; a < sp; ++a) col_major[a] = col_major[a - 1] * g.in[a - 1];
    parallel_for(pool, static_cast<size_t>(g.planes * out_plane), 64, [&](size_t begin, size_t end) {
        std::vector<int64_t> oc(sp);
        for (size_t r = begin; r < end; ++r) {
            const int64_t plane = static_cast<int64_t>(r) / out_plane;
            int64_t rem = static_cast<int64_t>(r) % out_plane;
            for (size_t a = sp; a-- > 0;) {
                oc[a] = rem % g.out[a];
                rem /= g.out[a];
            }
            bool found = false;
            T best = std::numeric_limits<T>::lowest();
            int64_t best_at = 0;
            for (int64_t t = 0; t < taps; ++t) {
                int64_t tap = t, at_rm = 0, at_cm = 0;
                bool inside = true;
                for (size_t a = sp; a-- > 0 && inside;) {
                    const int64_t k = tap % g.kernel[a];
                    tap /= g.kernel[a];
                    const int64_t i = oc[a] * g.strides[a] - g.pad_begin[a] + k * g.dilations[a];
                    inside = i >= 0 && i < g.in[a];
                    at_rm += i * row_major[a];
                    at_cm += i * col_major[a];
                }
                if (!inside) continue;
                const T v = x[plane * in_plane + at_rm];
                if (!found || v > best) {
                    best = v;
                    best_at = column_major ? at_cm : at_rm;
                    found = true;
                }
            }
            y[r] = best;
            if (indices) indices[r] = plane * in_plane + best_at;
        }
    });
}

// The same on channels-last 2-D x (N, H, W, C) (the layout plan's Layout::NHWC): each output pixel combines
// the C-vectors of its window's valid input pixels.
void pool_nhwc(const float *x, float *y, int64_t n, int64_t c, const PoolGeometry &g, PoolKind kind,
               bool include_pad, pthreadpool_t pool) {
    const PoolAxis ah = pool_axis(g, 0), aw = pool_axis(g, 1);
    const int64_t in_h = g.in[0], in_w = g.in[1], out_h = g.out[0], out_w = g.out[1];
    const bool is_max = kind == PoolKind::Max;
    const float init = is_max ? std::numeric_limits<float>::lowest() : 0.0f;
    const size_t pixels = static_cast<size_t>(n * out_h * out_w);
    const size_t work = static_cast<size_t>(std::max<int64_t>(1, c * g.kernel[0] * g.kernel[1]));
    parallel_for(pool, pixels, std::max<size_t>(1, 16384 / work), [&](size_t begin, size_t end) {
        for (size_t p = begin; p < end; ++p) {
            const int64_t b = static_cast<int64_t>(p) / (out_h * out_w);
            const size_t oh = static_cast<size_t>(static_cast<int64_t>(p) / out_w % out_h);
            const size_t ow = static_cast<size_t>(static_cast<int64_t>(p) % out_w);
            float *yp = y + static_cast<int64_t>(p) * c;
            std::fill(yp, yp + c, init);
            for (int64_t i = 0; i < ah.count_valid[oh]; ++i) {
                const int64_t ih = ah.first[oh] + i * ah.dilation;
                for (int64_t j = 0; j < aw.count_valid[ow]; ++j) {
                    const int64_t iw = aw.first[ow] + j * aw.dilation;
                    const float *xp = x + ((b * in_h + ih) * in_w + iw) * c;
                    if (is_max)
                        for (int64_t k = 0; k < c; ++k) yp[k] = xp[k] > yp[k] ? xp[k] : yp[k];
                    else
                        for (int64_t k = 0; k < c; ++k) yp[k] += xp[k];
                }
            }
            if (!is_max) {
                const int64_t valid = ah.count_valid[oh] * aw.count_valid[ow];
                const int64_t count = include_pad ? ah.count_padded[oh] * aw.count_padded[ow] : valid;
                const float scale = valid > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
                for (int64_t k = 0; k < c; ++k) yp[k] *= scale;
            }
        }
    });
}

std::vector<TensorInfo> pool_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    const bool max = ctx.node.type == "MaxPool";
    if (max)
        ctx.require_dtype(0, {DType::F32, DType::F16, DType::I8, DType::U8});
    else
        ctx.require_dtype(0, {DType::F32, DType::F16});
    if (ctx.output_count() > (max ? 2u : 1u))
        ctx.error(ctx.node.type, " has ", max ? "2 outputs (Y, Indices)" : "one output", ", model.txt declares ",
                  ctx.output_count());
    if (ctx.node.type == "MaxPool" && ctx.attrs().get_int("storage_order", 0) != 0 &&
        ctx.attrs().get_int("storage_order", 0) != 1)
        ctx.error("storage_order must be 0 or 1");
    if (ctx.node.type == "AveragePool") {
        const int64_t cip = ctx.attrs().get_int("count_include_pad", 0);
        if (cip != 0 && cip != 1) ctx.error("count_include_pad is ", cip, ", expected 0 or 1");
    }
    const TensorInfo &x = ctx.input(0);
    PoolGeometry g = pool_geometry(ctx.attrs(), ctx.node.where, x.shape);
    Shape out = {x.shape[0], x.shape[1]};
    out.insert(out.end(), g.out.begin(), g.out.end());
    std::vector<TensorInfo> outs{{x.dtype, out, {}}};
    if (ctx.output_count() == 2) outs.push_back({DType::I64, out, {}});
    return outs;
}

void max_pool_direct_run(RunContext &ctx, const PoolGeometry &g) {
    const Tensor &x = ctx.input(0);
    Tensor &y = ctx.alloc_output(0);
    int64_t *indices = ctx.output_count() > 1 ? ctx.alloc_output(1).data<int64_t>() : nullptr;
    const bool column_major = ctx.attrs().get_int("storage_order", 0) == 1;
    switch (x.dtype()) {
    case DType::I8:
        max_pool_direct(x.data<int8_t>(), y.data<int8_t>(), indices, g, column_major, ctx.pool());
        break;
    case DType::U8:
        max_pool_direct(x.data<uint8_t>(), y.data<uint8_t>(), indices, g, column_major, ctx.pool());
        break;
    default: {
        Tensor in_holder, out_holder;
        max_pool_direct(as_f32(ctx, x, in_holder), out_f32(ctx, y, out_holder), indices, g, column_major,
                        ctx.pool());
        store_f32_output(ctx, y, out_holder);
    }
    }
}

void pool_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    PoolGeometry g = pool_geometry(ctx.attrs(), ctx.node.where, x.shape());
    if (ctx.output_count() > 1 || !is_float(x.dtype())) return max_pool_direct_run(ctx, g);
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    const bool avg = ctx.node.type == "AveragePool";
    Tensor in_holder, out_holder;
    const float *in = as_f32(ctx, x, in_holder);
    float *out = out_f32(ctx, y, out_holder);
    if (ctx.input_nhwc(0)) {
        // Only 2-D float32 pools get channels-last tensors (layout plan), so in/out are x's and y's data.
        y.set_layout(Layout::NHWC);
        pool_nhwc(in, out, x.dim(0), x.dim(1), g, avg ? PoolKind::Avg : PoolKind::Max,
                  avg && ctx.attrs().get_int("count_include_pad", 0) == 1, ctx.pool());
        return;
    }
    Tensor rows;
    if (g.spatial > 1) {
        int64_t in_rows = g.planes;
        for (size_t a = 0; a + 1 < g.spatial; ++a) in_rows *= g.in[a];
        rows = ctx.scratch(DType::F32, {in_rows, g.out.back()});
    }
    pool_nchw(in, out, rows.empty() ? nullptr : rows.data<float>(), g, avg ? PoolKind::Avg : PoolKind::Max,
              avg && ctx.attrs().get_int("count_include_pad", 0) == 1, ctx.pool());
    store_f32_output(ctx, y, out_holder);
}

std::vector<TensorInfo> global_pool_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 1);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(0);
    check_spatial_input(ctx.node.where, x.shape);
    Shape out(x.shape.size(), 1);
    out[0] = x.shape[0];
    out[1] = x.shape[1];
    return {{x.dtype, out, {}}};
}

void global_pool_run(RunContext &ctx) {
    const Tensor &x = ctx.input(0);
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    const size_t planes = static_cast<size_t>(x.dim(0) * x.dim(1));
    const size_t n = static_cast<size_t>(x.numel()) / planes;
    const bool avg = ctx.node.type == "GlobalAveragePool";
    Tensor in_holder, out_holder;
    const float *in = as_f32(ctx, x, in_holder);
    float *out = out_f32(ctx, y, out_holder);
    if (ctx.input_nhwc(0) && n > 0) {
        // Channels-last (layout plan; float32 only): per sample, combine the C-vectors of all pixels, a
        // block of channels at a time. (N, C, 1, 1) is the same bytes in either layout.
        y.set_layout(Layout::NHWC);
        const size_t c = static_cast<size_t>(x.dim(1)), block = 64, blocks = (c + block - 1) / block;
        parallel_for(ctx.pool(), static_cast<size_t>(x.dim(0)) * blocks, 1, [&](size_t b, size_t e) {
            for (size_t t = b; t < e; ++t) {
                const size_t sample = t / blocks, c0 = (t % blocks) * block, c1 = std::min(c, c0 + block);
                const float *base = in + sample * n * c;
                double acc[64];
                for (size_t k = c0; k < c1; ++k) acc[k - c0] = avg ? 0.0 : base[k];
                for (size_t i = avg ? 0 : 1; i < n; ++i) {
                    const float *px = base + i * c;
                    for (size_t k = c0; k < c1; ++k) {
                        if (avg) acc[k - c0] += px[k];
                        else acc[k - c0] = px[k] > acc[k - c0] ? px[k] : acc[k - c0];
                    }
                }
                for (size_t k = c0; k < c1; ++k)
                    out[sample * c + k] = static_cast<float>(avg ? acc[k - c0] / static_cast<double>(n) : acc[k - c0]);
            }
        });
    } else if (n == 0) {
        // Averaging nothing is 0/0 (ONNX Runtime's mean); the maximum of nothing is the lowest float.
        std::fill(out, out + planes,
                  avg ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::lowest());
    } else {
        parallel_for(ctx.pool(), planes, std::max<size_t>(1, 16384 / n), [&](size_t b, size_t e) {
            for (size_t p = b; p < e; ++p) {
                const float *src = in + p * n;
                if (avg) {
                    // Eight partial sums: vectorisable, and closer to a pairwise sum than one running total.
                    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                    size_t i = 0;
                    for (; i + 8 <= n; i += 8)
                        for (size_t j = 0; j < 8; ++j) acc[j] += src[i + j];
                    float sum = 0;
                    for (; i < n; ++i) sum += src[i];
                    for (float v : acc) sum += v;
                    out[p] = sum / static_cast<float>(n);
                } else {
                    float m = src[0];
                    for (size_t i = 1; i < n; ++i) m = src[i] > m ? src[i] : m;
                    out[p] = m;
                }
            }
        });
    }
    store_f32_output(ctx, y, out_holder);
}

} // namespace

void register_pool_ops(Registry &r) {
    r.add("MaxPool", pool_infer, pool_run).with_nhwc(NhwcIo::Same);
    r.add("AveragePool", pool_infer, pool_run).with_nhwc(NhwcIo::Same);
    r.add("GlobalAveragePool", global_pool_infer, global_pool_run).with_nhwc(NhwcIo::Same);
    r.add("GlobalMaxPool", global_pool_infer, global_pool_run).with_nhwc(NhwcIo::Same);
}

} // namespace onnxstream
