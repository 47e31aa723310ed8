// GridSample (opsets 16 and 20, 2-D): y[n, c, h, w] samples x[n, c] at the point grid[n, h, w] = (gx, gy),
// given in [-1, 1] over the input's width and height, by bilinear, nearest or bicubic interpolation.
// The volumetric form (opset 20: X (N, C, D, H, W), grid (N, D_out, H_out, W_out, 3) holding (gx, gy, gz))
// samples by trilinear or nearest interpolation with the same per-axis rules; cubic is refused there, as
// ONNX Runtime does (its kernel is 2-D only).
//
// The arithmetic follows ONNX Runtime's CPU kernel, which the ONNX node tests agree with:
//  - a grid value maps to pixel coordinates with align_corners (-1 and 1 at the centres of the corner pixels)
//    or without (at their outer edges): x = (gx + 1) / 2 * (W - 1), or ((gx + 1) * W - 1) / 2;
//  - nearest rounds that coordinate half to even;
//  - a coordinate outside [x_min, x_max] (0 and W - 1 with align_corners, -0.5 and W - 0.5 without) is
//    clamped to [0, W - 1] with padding_mode border (except for bicubic, whose taps alone are clamped), or
//    reflected at x_min / x_max until inside with reflection; with zeros it stays where it is;
//  - each tap then reads its pixel: 0 outside the input (zeros), the nearest edge pixel (border), or the
//    pixel its index reflects to (reflection);
//  - bicubic takes the 4x4 neighbourhood with Keys' kernel, a = -0.75.
// A grid value that is NaN or infinite gives NaN (ONNX Runtime's kernel has no defined result for it).
// float16 tensors compute in float32.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ops/layout.h"
#include "ops/registry.h"
#include "ops/shape_common.h"

namespace onnxstream {

namespace {

enum class Mode { Linear, Nearest, Cubic };
enum class Padding { Zeros, Border, Reflection };

struct GridSampleParams {
    Mode mode = Mode::Linear;
    Padding padding = Padding::Zeros;
    bool align_corners = false;
};

GridSampleParams read_params(const Attributes &attrs, const std::string &where) {
    GridSampleParams p;
    // Opset 20 renamed bilinear / bicubic to linear / cubic; either spelling is accepted.
    const std::string mode = attrs.get_string("mode", "bilinear");
    if (mode == "bilinear" || mode == "linear") p.mode = Mode::Linear;
    else if (mode == "nearest") p.mode = Mode::Nearest;
    else if (mode == "bicubic" || mode == "cubic") p.mode = Mode::Cubic;
    else fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": mode is '", mode, "', expected bilinear, nearest or bicubic");
    const std::string padding = attrs.get_string("padding_mode", "zeros");
    if (padding == "zeros") p.padding = Padding::Zeros;
    else if (padding == "border") p.padding = Padding::Border;
    else if (padding == "reflection") p.padding = Padding::Reflection;
    else
        fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": padding_mode is '", padding,
             "', expected zeros, border or reflection");
    const int64_t align = attrs.get_int("align_corners", 0);
    if (align != 0 && align != 1)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": align_corners is ", align, ", expected 0 or 1");
    p.align_corners = align == 1;
    return p;
}

std::vector<TensorInfo> grid_sample_infer(const InferContext &ctx) {
    ctx.require_inputs(2, 2);
    ctx.require_dtype(0, {DType::F32, DType::F16});
    ctx.require_dtype(1, {DType::F32, DType::F16});
    read_params(ctx.attrs(), ctx.node.where);
    const Shape &x = ctx.input(0).shape, &grid = ctx.input(1).shape;
    if (x.size() != grid.size() || x.size() < 3)
        ctx.error("X has shape ", shape_str(x), " and grid ", shape_str(grid),
                  "; expected (N, C, H, W) and (N, H_out, W_out, 2)");
    if (x.size() != 4 && x.size() != 5)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where, ": GridSample over ", x.size() - 2,
             " spatial axes is not supported (only 2-D and 3-D), X has shape ", shape_str(x));
    const size_t spatial = x.size() - 2;
    if (grid[0] != x[0] || grid.back() != static_cast<int64_t>(spatial))
        ctx.error("grid has shape ", shape_str(grid), "; expected (", x[0],
                  spatial == 2 ? ", H_out, W_out, 2)" : ", D_out, H_out, W_out, 3)", " for X ", shape_str(x));
    if (spatial == 3 && read_params(ctx.attrs(), ctx.node.where).mode == Mode::Cubic)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, ctx.node.where,
             ": mode 'cubic' (bicubic) is defined for 2-D GridSample only, X has shape ", shape_str(x),
             "; use linear or nearest");
    Shape out = {x[0], x[1]};
    out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
    return {TensorInfo{ctx.input(0).dtype, out, {}}};
}

// Reflects finite v at lo and hi until it lies between them (lo itself when they coincide: a 1-pixel axis
// with align_corners).
float reflect(float v, float lo, float hi) {
    if (v >= lo && v <= hi) return v;
    const float range = hi - lo;
    if (!(range > 0)) return lo;
    const float d = v < lo ? lo - v : v - hi;
    const float n = std::floor(d / range); // whole reflections; its parity says which border is next
    const float r = d - n * range;
    const bool even = std::fmod(n, 2.0f) == 0.0f;
    return v < lo ? (even ? lo + r : hi - r) : (even ? hi - r : lo + r);
}

void cubic_coeffs(float t, float c[4]) {
    constexpr float a = -0.75f;
    t = std::fabs(t);
    c[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
    c[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    c[2] = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1;
    c[3] = ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a;
}

struct Plane {
    const float *data;
    int64_t h, w;
    Padding padding;
    float x_min, y_min, x_max, y_max;

    float at(int64_t r, int64_t c) const {
        switch (padding) {
        case Padding::Zeros:
            return r >= 0 && r < h && c >= 0 && c < w ? data[r * w + c] : 0.0f;
        case Padding::Border:
            return data[std::clamp<int64_t>(r, 0, h - 1) * w + std::clamp<int64_t>(c, 0, w - 1)];
        case Padding::Reflection:
            break;
        }
        // Reflected at the sampling borders; the clamp only guards the float rounding of a far reflection.
        c = std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<float>(c), x_min, x_max)), 0, w - 1);
        r = std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<float>(r), y_min, y_max)), 0, h - 1);
        return data[r * w + c];
    }
};

float sample(const Plane &p, Mode mode, float x, float y) {
    if (mode == Mode::Nearest) return p.at(static_cast<int64_t>(y), static_cast<int64_t>(x));
    if (mode == Mode::Linear) {
        const int64_t x1 = static_cast<int64_t>(std::floor(x)), y1 = static_cast<int64_t>(std::floor(y));
        const float dx1 = x - static_cast<float>(x1), dx2 = static_cast<float>(x1 + 1) - x;
        const float dy1 = y - static_cast<float>(y1), dy2 = static_cast<float>(y1 + 1) - y;
        return dy2 * (dx2 * p.at(y1, x1) + dx1 * p.at(y1, x1 + 1)) +
               dy1 * (dx2 * p.at(y1 + 1, x1) + dx1 * p.at(y1 + 1, x1 + 1));
    }
    const int64_t x0 = static_cast<int64_t>(std::floor(x)) - 1, y0 = static_cast<int64_t>(std::floor(y)) - 1;
    float cx[4], cy[4];
    cubic_coeffs(x - static_cast<float>(x0) - 1, cx);
    cubic_coeffs(y - static_cast<float>(y0) - 1, cy);
    float out = 0.0f;
    for (int64_t i = 0; i < 4; ++i) {
        float row = 0.0f;
        for (int64_t j = 0; j < 4; ++j) row += cx[j] * p.at(y0 + i, x0 + j);
        out += cy[i] * row;
    }
    return out;
}

// One axis of the volumetric form: the sampling range of its pixel coordinates.
struct Axis {
    int64_t size;
    float lo, hi;

    int64_t index(int64_t i, Padding padding) const {
        if (padding == Padding::Border) return std::clamp<int64_t>(i, 0, size - 1);
        // As Plane::at: reflected at the sampling borders, clamped against far reflections' rounding.
        return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<float>(i), lo, hi)), 0, size - 1);
    }
};

struct Volume {
    const float *data;
    Axis d, h, w;
    Padding padding;

    float at(int64_t z, int64_t r, int64_t c) const {
        if (padding == Padding::Zeros)
            return z >= 0 && z < d.size && r >= 0 && r < h.size && c >= 0 && c < w.size
                       ? data[(z * h.size + r) * w.size + c]
                       : 0.0f;
        return data[(d.index(z, padding) * h.size + h.index(r, padding)) * w.size + w.index(c, padding)];
    }
};

float sample_volume(const Volume &v, Mode mode, float x, float y, float z) {
    if (mode == Mode::Nearest)
        return v.at(static_cast<int64_t>(z), static_cast<int64_t>(y), static_cast<int64_t>(x));
    const int64_t x1 = static_cast<int64_t>(std::floor(x)), y1 = static_cast<int64_t>(std::floor(y)),
                  z1 = static_cast<int64_t>(std::floor(z));
    const float dx1 = x - static_cast<float>(x1), dx2 = static_cast<float>(x1 + 1) - x;
    const float dy1 = y - static_cast<float>(y1), dy2 = static_cast<float>(y1 + 1) - y;
    const float dz1 = z - static_cast<float>(z1), dz2 = static_cast<float>(z1 + 1) - z;
    auto bilinear = [&](int64_t zz) {
        return dy2 * (dx2 * v.at(zz, y1, x1) + dx1 * v.at(zz, y1, x1 + 1)) +
               dy1 * (dx2 * v.at(zz, y1 + 1, x1) + dx1 * v.at(zz, y1 + 1, x1 + 1));
    };
    return dz2 * bilinear(z1) + dz1 * bilinear(z1 + 1);
}

// The volumetric form; the same per-coordinate steps as the 2-D loop in grid_sample_run.
void grid_sample_3d(RunContext &ctx, const GridSampleParams &prm, const float *x, const float *grid, float *out,
                    const Tensor &y) {
    const Shape &xs = ctx.input(0).shape();
    const int64_t n = xs[0], c = xs[1];
    const int64_t points = y.dim(2) * y.dim(3) * y.dim(4);
    auto axis = [&](int64_t size) {
        const float len = static_cast<float>(size);
        return prm.align_corners ? Axis{size, 0.0f, len - 1} : Axis{size, -0.5f, len - 0.5f};
    };
    const Axis ad = axis(xs[2]), ah = axis(xs[3]), aw = axis(xs[4]);
    auto to_pixels = [&](float g, const Axis &a) {
        const float len = static_cast<float>(a.size);
        return prm.align_corners ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2;
    };
    auto place = [&](float p, const Axis &a) {
        const float len = static_cast<float>(a.size);
        if (prm.mode == Mode::Nearest) p = std::nearbyint(p);
        if (p < a.lo || p > a.hi) {
            if (prm.padding == Padding::Border) p = std::clamp(p, 0.0f, len - 1);
            else if (prm.padding == Padding::Reflection) p = reflect(p, a.lo, a.hi);
        }
        // Zeros padding: 2 pixels outside reads only zeros, however far (keeps the taps integers).
        return std::clamp(p, a.lo - 2, a.hi + 2);
    };
    parallel_for(ctx.pool(), static_cast<size_t>(n * c), 1, [&](size_t begin, size_t end) {
        for (size_t plane = begin; plane < end; ++plane) {
            const int64_t img = static_cast<int64_t>(plane) / c;
            const Volume v{x + static_cast<int64_t>(plane) * ad.size * ah.size * aw.size, ad, ah, aw, prm.padding};
            const float *g = grid + img * points * 3;
            float *dst = out + static_cast<int64_t>(plane) * points;
            for (int64_t i = 0; i < points; ++i) {
                const float px = to_pixels(g[3 * i], aw), py = to_pixels(g[3 * i + 1], ah),
                            pz = to_pixels(g[3 * i + 2], ad);
                if (!std::isfinite(px) || !std::isfinite(py) || !std::isfinite(pz)) {
                    dst[i] = std::numeric_limits<float>::quiet_NaN();
                    continue;
                }
                dst[i] = sample_volume(v, prm.mode, place(px, aw), place(py, ah), place(pz, ad));
            }
        }
    });
}

void grid_sample_run(RunContext &ctx) {
    const GridSampleParams prm = read_params(ctx.attrs(), ctx.node.where);
    Tensor &y = ctx.alloc_output(0);
    if (y.numel() == 0) return;
    Tensor x_holder, grid_holder, y_holder;
    const float *x = as_f32(ctx, ctx.input(0), x_holder);
    const float *grid = as_f32(ctx, ctx.input(1), grid_holder);
    float *out = out_f32(ctx, y, y_holder);
    if (y.rank() == 5) {
        grid_sample_3d(ctx, prm, x, grid, out, y);
        if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
        return;
    }
    const Shape &xs = ctx.input(0).shape();
    const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
    const int64_t oh = y.dim(2), ow = y.dim(3), points = oh * ow;
    const float wf = static_cast<float>(w), hf = static_cast<float>(h);
    const float x_min = prm.align_corners ? 0.0f : -0.5f, x_max = prm.align_corners ? wf - 1 : wf - 0.5f;
    const float y_min = prm.align_corners ? 0.0f : -0.5f, y_max = prm.align_corners ? hf - 1 : hf - 0.5f;
    auto to_pixels = [&](float g, float len) {
        return prm.align_corners ? (g + 1) / 2 * (len - 1) : ((g + 1) * len - 1) / 2;
    };
    // One task per (image, channel) plane; the sampling points are worked out again per channel, which costs
    // less than the taps.
    parallel_for(ctx.pool(), static_cast<size_t>(n * c), 1, [&](size_t begin, size_t end) {
        for (size_t plane = begin; plane < end; ++plane) {
            const int64_t img = static_cast<int64_t>(plane) / c;
            const Plane p{x + static_cast<int64_t>(plane) * h * w, h, w, prm.padding, x_min, y_min, x_max, y_max};
            const float *g = grid + img * points * 2;
            float *dst = out + static_cast<int64_t>(plane) * points;
            for (int64_t i = 0; i < points; ++i) {
                float px = to_pixels(g[2 * i], wf), py = to_pixels(g[2 * i + 1], hf);
                if (!std::isfinite(px) || !std::isfinite(py)) {
                    dst[i] = std::numeric_limits<float>::quiet_NaN();
                    continue;
                }
                if (prm.mode == Mode::Nearest) {
                    px = std::nearbyint(px);
                    py = std::nearbyint(py);
                }
                if (px < x_min || px > x_max || py < y_min || py > y_max) {
                    if (prm.padding == Padding::Border && prm.mode != Mode::Cubic) {
                        px = std::clamp(px, 0.0f, wf - 1);
                        py = std::clamp(py, 0.0f, hf - 1);
                    } else if (prm.padding == Padding::Reflection) {
                        px = reflect(px, x_min, x_max);
                        py = reflect(py, y_min, y_max);
                    }
                }
                // With zeros padding, a point 4 pixels outside reads only zeros, however far: bounded so that
                // the tap indices stay integers.
                px = std::clamp(px, x_min - 4, x_max + 4);
                py = std::clamp(py, y_min - 4, y_max + 4);
                dst[i] = sample(p, prm.mode, px, py);
            }
        }
    });
    if (!y_holder.empty()) store_f32_output(ctx, y, y_holder);
}

} // namespace

void register_grid_sample_ops(Registry &r) { r.add("GridSample", grid_sample_infer, grid_sample_run); }

} // namespace onnxstream
