// Resize (opset 10/11/13/18 input forms) and Upsample (opset 7/9) on tensors of any rank. Nearest is a single
// gather (any dtype); linear and cubic are separable, one pass per resized axis with 2 or 4 taps per
// output index (with antialias=1, a downscaled axis has a window that widens with 1/scale instead: see
// resize_antialias.h), computed in float32. Coordinates, rounding and the quirks that decide which source
// pixel is picked follow ONNX Runtime's float arithmetic.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ops/layout.h"
#include "ops/registry.h"
#include "ops/resize_antialias.h"
#include "tensor/half.h"

namespace onnxstream {

namespace {

template <typename... Args>[[noreturn]] void invalid(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": ", std::forward<Args>(args)...);
}

enum class ResizeMode { Nearest, Linear, Cubic };
enum class CoordMode {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfHalfPixelForNn,
    TfCropAndResize
};
enum class NearestMode { Simple, RoundPreferFloor, RoundPreferCeil, Floor, Ceil };

struct ResizeParams {
    ResizeMode mode = ResizeMode::Nearest;
    CoordMode coord = CoordMode::Asymmetric;
    NearestMode nearest = NearestMode::Simple;
    float cubic_a = -0.75f;
    bool exclude_outside = false;
    bool antialias = false; // linear and cubic: stretch the filter of downscaled axes
    float extrapolation = 0.0f;
    // Input positions (-1 = omitted); which of scales/sizes exists is decided from the data.
    int roi = -1, scales = -1, sizes = -1;
    bool scales_attr = false; // Upsample-7: scales is an attribute
    std::vector<int64_t> axes;
    std::string aspect = "stretch";
};

ResizeParams resize_params(const Attributes &attrs, const std::string &where, const std::string &type,
                           size_t input_count) {
    ResizeParams p;
    const std::string mode = attrs.get_string("mode", "nearest");
    if (mode == "nearest")
        p.mode = ResizeMode::Nearest;
    else if (mode == "linear" || mode == "bilinear")
        p.mode = ResizeMode::Linear;
    else if (mode == "cubic" && type == "Resize")
        p.mode = ResizeMode::Cubic;
    else
        invalid(where, "mode is '", mode, "', expected nearest, linear", type == "Resize" ? " or cubic" : "");
    // Upsample (opset 7-9) and Resize-10 (inputs X, scales) predate the coordinate and rounding options:
    // asymmetric coordinates, and nearest truncates when upsampling / rounds up when downsampling.
    const bool legacy = type == "Upsample" || input_count <= 2;
    if (type == "Upsample") {
        if (input_count <= 1)
            p.scales_attr = true;
        else
            p.scales = 1;
        return p;
    }
    if (legacy) {
        p.scales = 1;
        return p;
    }
    p.roi = 1;
    p.scales = 2;
    p.sizes = input_count > 3 ? 3 : -1;
    const std::string coord = attrs.get_string("coordinate_transformation_mode", "half_pixel");
    if (coord == "half_pixel")
        p.coord = CoordMode::HalfPixel;
    else if (coord == "half_pixel_symmetric")
        p.coord = CoordMode::HalfPixelSymmetric;
    else if (coord == "pytorch_half_pixel")
        p.coord = CoordMode::PytorchHalfPixel;
    else if (coord == "align_corners")
        p.coord = CoordMode::AlignCorners;
    else if (coord == "asymmetric")
        p.coord = CoordMode::Asymmetric;
    else if (coord == "tf_half_pixel_for_nn")
        p.coord = CoordMode::TfHalfPixelForNn;
    else if (coord == "tf_crop_and_resize")
        p.coord = CoordMode::TfCropAndResize;
    else
        invalid(where, "coordinate_transformation_mode is '", coord,
                "', expected half_pixel, half_pixel_symmetric, ",
                "pytorch_half_pixel, align_corners, asymmetric, tf_half_pixel_for_nn or tf_crop_and_resize");
    const std::string nearest = attrs.get_string("nearest_mode", "round_prefer_floor");
    if (nearest == "round_prefer_floor")
        p.nearest = NearestMode::RoundPreferFloor;
    else if (nearest == "round_prefer_ceil")
        p.nearest = NearestMode::RoundPreferCeil;
    else if (nearest == "floor")
        p.nearest = NearestMode::Floor;
    else if (nearest == "ceil")
        p.nearest = NearestMode::Ceil;
    else
        invalid(where, "nearest_mode is '", nearest,
                "', expected round_prefer_floor, round_prefer_ceil, floor or ceil");
    p.cubic_a = attrs.get_float("cubic_coeff_a", -0.75f);
    const int64_t exclude = attrs.get_int("exclude_outside", 0);
    if (exclude != 0 && exclude != 1) invalid(where, "exclude_outside is ", exclude, ", expected 0 or 1");
    if (exclude && p.mode != ResizeMode::Cubic) invalid(where, "exclude_outside=1 needs mode cubic");
    p.exclude_outside = exclude == 1;
    p.extrapolation = attrs.get_float("extrapolation_value", 0.0f);
    // Nearest has no filter to stretch: the spec applies antialias to linear and cubic only, so nearest
    // ignores it (ONNX Runtime refuses the combination).
    const int64_t antialias = attrs.get_int("antialias", 0);
    if (antialias != 0 && antialias != 1) invalid(where, "antialias is ", antialias, ", expected 0 or 1");
    p.antialias = antialias == 1 && p.mode != ResizeMode::Nearest;
    p.axes = attrs.get_ints("axes", {});
    p.aspect = attrs.get_string("keep_aspect_ratio_policy", "stretch");
    if (p.aspect != "stretch" && p.aspect != "not_larger" && p.aspect != "not_smaller")
        invalid(where, "keep_aspect_ratio_policy is '", p.aspect,
                "', expected stretch, not_larger or not_smaller");
    return p;
}

// Output shape and per-axis scales (+ roi, for tf_crop_and_resize) from the scales/sizes/roi values.
struct ResizePlan {
    Shape out;
    std::vector<float> scales, roi; // roi: starts then ends, one per axis
};

// The values of an optional input, or nothing when it is omitted or empty (exporters write empty
// tensors for unused roi/scales).
bool has_values(const Tensor *t) { return t && t->numel() > 0; }

ResizePlan resize_plan(const ResizeParams &p, const Attributes &attrs, const std::string &where,
                       const Shape &in, const Tensor *scales_t, const Tensor *sizes_t, const Tensor *roi_t) {
    const size_t rank = in.size();
    if (rank == 0) invalid(where, "input must have rank >= 1");
    std::vector<int64_t> axes;
    for (int64_t a : p.axes) {
        if (a < -static_cast<int64_t>(rank) || a >= static_cast<int64_t>(rank))
            invalid(where, "axes value ", a, " is out of range for a rank-", rank, " input");
        a = a < 0 ? a + static_cast<int64_t>(rank) : a;
        if (std::find(axes.begin(), axes.end(), a) != axes.end())
            invalid(where, "axes lists axis ", a, " twice");
        axes.push_back(a);
    }
    if (axes.empty())
        for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
    ResizePlan plan;
    plan.out = in;
    plan.scales.assign(rank, 1.0f);
    std::vector<float> given;
    const bool use_scales = p.scales_attr || has_values(scales_t);
    if (use_scales) {
        if (has_values(sizes_t)) invalid(where, "both scales and sizes are given; exactly one is allowed");
        if (p.scales_attr)
            given = attrs.get_floats("scales", {});
        else
            for (int64_t i = 0; i < scales_t->numel(); ++i) given.push_back(float_at(*scales_t, i));
        if (given.size() != axes.size())
            invalid(where, "scales has ", given.size(), " values, expected ", axes.size());
        for (size_t i = 0; i < axes.size(); ++i) {
            const float s = given[i];
            if (!(s > 0)) invalid(where, "scales value ", s, " must be > 0");
            const size_t a = static_cast<size_t>(axes[i]);
            plan.scales[a] = s;
            plan.out[a] = static_cast<int64_t>(s * static_cast<float>(in[a]));
        }
    } else {
        if (!has_values(sizes_t))
            invalid(where, "neither scales nor sizes is given; exactly one is required");
        std::vector<int64_t> sizes = int_values(*sizes_t);
        if (sizes.size() != axes.size())
            invalid(where, "sizes has ", sizes.size(), " values, expected ", axes.size());
        for (size_t i = 0; i < axes.size(); ++i) {
            const size_t a = static_cast<size_t>(axes[i]);
            if (sizes[i] < 0) invalid(where, "sizes value ", sizes[i], " must be >= 0");
            if (in[a] == 0 && sizes[i] != 0)
                invalid(where, "axis ", a, " has size 0 but sizes asks for ", sizes[i]);
            plan.out[a] = sizes[i];
            plan.scales[a] = in[a] == 0 ? 1.0f : static_cast<float>(sizes[i]) / static_cast<float>(in[a]);
        }
        if (p.aspect != "stretch") {
            float s = p.aspect == "not_larger" ? std::numeric_limits<float>::max()
                                               : std::numeric_limits<float>::min();
            for (int64_t a : axes)
                s = p.aspect == "not_larger" ? std::min(s, plan.scales[static_cast<size_t>(a)])
                                             : std::max(s, plan.scales[static_cast<size_t>(a)]);
            for (int64_t a : axes) {
                plan.scales[static_cast<size_t>(a)] = s;
                plan.out[static_cast<size_t>(a)] =
                    static_cast<int64_t>(std::round(s * static_cast<float>(in[a])));
            }
        }
    }
    plan.roi.assign(2 * rank, 0.0f);
    std::fill(plan.roi.begin() + static_cast<std::ptrdiff_t>(rank), plan.roi.end(), 1.0f);
    if (p.coord == CoordMode::TfCropAndResize && has_values(roi_t)) {
        if (static_cast<size_t>(roi_t->numel()) != 2 * axes.size())
            invalid(where, "roi has ", roi_t->numel(), " values, expected ", 2 * axes.size());
        for (size_t i = 0; i < axes.size(); ++i) {
            plan.roi[static_cast<size_t>(axes[i])] = float_at(*roi_t, static_cast<int64_t>(i));
            plan.roi[rank + static_cast<size_t>(axes[i])] =
                float_at(*roi_t, static_cast<int64_t>(axes.size() + i));
        }
    }
    return plan;
}

// ONNX Runtime's float arithmetic for the source coordinate of output index x.
float original_coordinate(CoordMode mode, float x, float scale, float out_len, float in_len, float roi_start,
                          float roi_end) {
    switch (mode) {
    case CoordMode::Asymmetric: return x / scale;
    case CoordMode::PytorchHalfPixel: return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case CoordMode::TfHalfPixelForNn: return (x + 0.5f) / scale;
    case CoordMode::AlignCorners: return out_len == 1 ? 0.0f : x * (in_len - 1) / (out_len - 1);
    case CoordMode::TfCropAndResize:
        return out_len > 1
                   ? roi_start * (in_len - 1) + (x * (roi_end - roi_start) * (in_len - 1)) / (out_len - 1)
                   : static_cast<float>(0.5 * (roi_start + roi_end) * (in_len - 1));
    case CoordMode::HalfPixelSymmetric: {
        const float adjustment = out_len / (scale * in_len);
        const float offset = in_len / 2 * (1 - adjustment);
        return static_cast<float>(offset + (x + 0.5) / scale - 0.5);
    }
    case CoordMode::HalfPixel: break;
    }
    return (x + 0.5f) / scale - 0.5f;
}

int64_t nearest_index(NearestMode mode, float x, bool downsample) {
    switch (mode) {
    case NearestMode::Simple:
        return downsample ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
    case NearestMode::Floor: return static_cast<int64_t>(std::floor(x));
    case NearestMode::Ceil: return static_cast<int64_t>(std::ceil(x));
    case NearestMode::RoundPreferFloor:
    case NearestMode::RoundPreferCeil: break;
    }
    // A coordinate within 1e-6 of a half is a tie: the float arithmetic above lands just beside exact
    // halves such as 4.5 / 0.6 (ONNX Runtime 1.30 decides ties the same way).
    const float fl = std::floor(x);
    if (std::fabs(x - fl - 0.5f) <= 1e-6f)
        return static_cast<int64_t>(fl) + (mode == NearestMode::RoundPreferCeil ? 1 : 0);
    return static_cast<int64_t>(std::round(x));
}

// One resized axis: `taps` input indices and weights per output index (count[o] of them when count is not
// empty: an antialiased axis, whose windows differ in length); extrapolate[o] marks outputs outside a
// tf_crop_and_resize region.
struct AxisTaps {
    size_t taps = 1;
    std::vector<uint32_t> count;
    std::vector<int64_t> index;
    std::vector<float> weight;
    std::vector<uint8_t> extrapolate;
    bool any_extrapolate = false;
};

// A downscaled axis with antialias=1: ONNX Runtime's windows, from the same source coordinates (which also
// decide the tf_crop_and_resize extrapolation, as in the plain paths).
AxisTaps antialias_axis_taps(const ResizeParams &p, int64_t in, int64_t out, float scale, float roi_start,
                             float roi_end) {
    const float in_f = static_cast<float>(in);
    std::vector<float> coords(static_cast<size_t>(out));
    AxisTaps t;
    t.extrapolate.assign(static_cast<size_t>(out), 0);
    for (int64_t o = 0; o < out; ++o) {
        const float x = original_coordinate(p.coord, static_cast<float>(o), scale, static_cast<float>(out), in_f,
                                            roi_start, roi_end);
        coords[static_cast<size_t>(o)] = x;
        // ONNX Runtime tests the window's centre less 0.5, which rounds a coordinate just below 0 up to 0.
        const float c = (x + 0.5f) - 0.5f;
        if (p.coord == CoordMode::TfCropAndResize && (c < 0 || c > in_f - 1)) {
            t.extrapolate[static_cast<size_t>(o)] = 1;
            t.any_extrapolate = true;
        }
    }
    AntialiasWindows w =
        antialias_windows(p.mode == ResizeMode::Cubic ? AntialiasFilter::Cubic : AntialiasFilter::Linear,
                          p.cubic_a, p.exclude_outside, in, scale, coords);
    t.taps = w.taps;
    t.count = std::move(w.count);
    t.weight = std::move(w.weight);
    t.index.resize(t.weight.size());
    for (size_t o = 0; o < static_cast<size_t>(out); ++o)
        for (size_t j = 0; j < t.taps; ++j)
            t.index[o * t.taps + j] = std::min<int64_t>(w.first[o] + static_cast<int64_t>(j), in - 1);
    return t;
}

AxisTaps axis_taps(const ResizeParams &p, int64_t in, int64_t out, float scale, float roi_start,
                   float roi_end) {
    if (p.antialias && scale < 1.0f) return antialias_axis_taps(p, in, out, scale, roi_start, roi_end);
    AxisTaps t;
    t.taps = p.mode == ResizeMode::Nearest ? 1 : p.mode == ResizeMode::Linear ? 2 : 4;
    t.index.resize(static_cast<size_t>(out) * t.taps);
    t.weight.resize(static_cast<size_t>(out) * t.taps);
    t.extrapolate.assign(static_cast<size_t>(out), 0);
    const bool crop = p.coord == CoordMode::TfCropAndResize;
    const float in_f = static_cast<float>(in);
    for (int64_t o = 0; o < out; ++o) {
        const size_t base = static_cast<size_t>(o) * t.taps;
        // ONNX Runtime maps an axis whose scale is exactly 1 onto itself, whatever the coordinate mode.
        const float x = scale == 1.0f
                            ? static_cast<float>(o)
                            : original_coordinate(p.coord, static_cast<float>(o), scale,
                                                  static_cast<float>(out), in_f, roi_start, roi_end);
        if (crop && scale != 1.0f && (x < 0 || x > in_f - 1)) {
            t.extrapolate[static_cast<size_t>(o)] = 1;
            t.any_extrapolate = true;
        }
        if (p.mode == ResizeMode::Nearest) {
            t.index[base] = std::clamp<int64_t>(nearest_index(p.nearest, x, scale < 1), 0, in - 1);
            t.weight[base] = 1.0f;
        } else if (p.mode == ResizeMode::Linear) {
            const float c = std::max(0.0f, std::min(x, in_f - 1));
            const int64_t i1 = std::min(static_cast<int64_t>(c), in - 1), i2 = std::min(i1 + 1, in - 1);
            float w1 = std::fabs(c - static_cast<float>(i2)), w2 = std::fabs(c - static_cast<float>(i1));
            if (i1 == i2) w1 = w2 = 0.5f;
            t.index[base] = i1;
            t.index[base + 1] = i2;
            t.weight[base] = w1;
            t.weight[base + 1] = w2;
        } else {
            const float fl = std::floor(x);
            const int64_t xi = static_cast<int64_t>(fl);
            const float s = std::fabs(x - fl), a = p.cubic_a;
            float c[4];
            c[0] = ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a;
            c[1] = ((a + 2) * s - (a + 3)) * s * s + 1;
            c[2] = ((a + 2) * (1 - s) - (a + 3)) * (1 - s) * (1 - s) + 1;
            c[3] = ((a * (2 - s) - 5 * a) * (2 - s) + 8 * a) * (2 - s) - 4 * a;
            float sum = 1.0f;
            if (p.exclude_outside) {
                sum = 0.0f;
                for (int j = 0; j < 4; ++j) {
                    const int64_t idx = xi - 1 + j;
                    if (idx < 0 || idx >= in) c[j] = 0.0f;
                    sum += c[j];
                }
            }
            for (int j = 0; j < 4; ++j) {
                t.index[base + static_cast<size_t>(j)] = std::clamp<int64_t>(xi - 1 + j, 0, in - 1);
                t.weight[base + static_cast<size_t>(j)] = c[j] / sum;
            }
        }
    }
    return t;
}

// One separable pass: resize the middle axis of x viewed as [outer, in_len, inner] into
// y [outer, out_len, inner].
void resize_pass(const float *x, float *y, size_t outer, size_t in_len, size_t inner, const AxisTaps &t,
                 float extrapolation, pthreadpool_t pool) {
    const size_t out_len = t.extrapolate.size(), taps = t.taps;
    if (inner == 1) {
        parallel_for(pool, outer, std::max<size_t>(1, 4096 / std::max<size_t>(1, out_len * taps)),
                     [&](size_t b, size_t e) {
                         for (size_t r = b; r < e; ++r) {
                             const float *src = x + r * in_len;
                             float *dst = y + r * out_len;
                             for (size_t o = 0; o < out_len; ++o) {
                                 const size_t n = t.count.empty() ? taps : t.count[o];
                                 float acc = 0.0f;
                                 for (size_t j = 0; j < n; ++j)
                                     acc += t.weight[o * taps + j] * src[t.index[o * taps + j]];
                                 dst[o] = t.extrapolate[o] ? extrapolation : acc;
                             }
                         }
                     });
        return;
    }
    parallel_for(pool, outer * out_len, std::max<size_t>(1, 4096 / (inner * taps)), [&](size_t b, size_t e) {
        for (size_t r = b; r < e; ++r) {
            const size_t o = r % out_len;
            const float *src = x + (r / out_len) * in_len * inner;
            float *dst = y + r * inner;
            const size_t n = t.count.empty() ? taps : t.count[o];
            if (t.extrapolate[o] || n == 0) {
                std::fill(dst, dst + inner, t.extrapolate[o] ? extrapolation : 0.0f);
                continue;
            }
            const float *s0 = src + t.index[o * taps] * static_cast<int64_t>(inner);
            const float w0 = t.weight[o * taps];
            for (size_t i = 0; i < inner; ++i) dst[i] = w0 * s0[i];
            for (size_t j = 1; j < n; ++j) {
                const float *sj = src + t.index[o * taps + j] * static_cast<int64_t>(inner);
                const float wj = t.weight[o * taps + j];
                for (size_t i = 0; i < inner; ++i) dst[i] += wj * sj[i];
            }
        }
    });
}

// Nearest resize of any element type in one gather. map[a][o] is the input offset (in elements) of
// output index o along axis a, or -1 for an extrapolated position.
template <typename T> void nearest_gather(const T *x, T *y, const Shape &out,
                                          const std::vector<std::vector<int64_t>> &map, T extrapolation,
                                          pthreadpool_t pool) {
    const size_t rank = out.size();
    const size_t out_w = static_cast<size_t>(out.back());
    const std::vector<int64_t> &wmap = map.back();
    // The innermost axis kept as it is (channels-last input: C) makes every row a copy.
    bool any_w_extrap = false, twice = out_w % 2 == 0, same = true;
    for (size_t o = 0; o < out_w; ++o) {
        any_w_extrap |= wmap[o] < 0;
        twice &= wmap[o] == static_cast<int64_t>(o / 2);
        same &= wmap[o] == static_cast<int64_t>(o);
    }
    const size_t rows = static_cast<size_t>(shape_numel(out)) / std::max<size_t>(1, out_w);
    parallel_for(pool, rows, std::max<size_t>(1, 16384 / std::max<size_t>(1, out_w)),
                 [&](size_t b, size_t e) {
                     std::vector<int64_t> idx(rank, 0);
                     int64_t prev_base = std::numeric_limits<int64_t>::min();
                     const T *prev_row = nullptr;
                     for (size_t r = b; r < e; ++r) {
                         size_t rem = r;
                         int64_t base = 0;
                         bool extrap = false;
                         for (size_t a = rank - 1; a-- > 0;) {
                             const int64_t off = map[a][rem % static_cast<size_t>(out[a])];
                             rem /= static_cast<size_t>(out[a]);
                             extrap |= off < 0;
                             base += off;
                         }
                         T *dst = y + r * out_w;
                         if (extrap) {
                             std::fill(dst, dst + out_w, extrapolation);
                             prev_row = nullptr;
                             continue;
                         }
                         if (prev_row && base == prev_base) {
                             // Upsampled outer axes repeat whole rows.
                             std::memcpy(dst, prev_row, out_w * sizeof(T));
                             continue;
                         }
                         const T *src = x + base;
                         if (same) {
                             std::memcpy(dst, src, out_w * sizeof(T));
                         } else if (twice) {
                             for (size_t o = 0; o < out_w / 2; ++o) dst[2 * o] = dst[2 * o + 1] = src[o];
                         } else if (any_w_extrap) {
                             for (size_t o = 0; o < out_w; ++o)
                                 dst[o] = wmap[o] < 0 ? extrapolation : src[wmap[o]];
                         } else {
                             for (size_t o = 0; o < out_w; ++o) dst[o] = src[wmap[o]];
                         }
                         prev_base = base;
                         prev_row = dst;
                     }
                 });
}

const Tensor *optional_constant(const InferContext &ctx, int i) {
    return i >= 0 ? ctx.constant(static_cast<size_t>(i)) : nullptr;
}

std::vector<TensorInfo> resize_infer(const InferContext &ctx) {
    const bool upsample = ctx.node.type == "Upsample";
    ctx.require_inputs(1, upsample ? 2 : 4);
    const TensorInfo &x = ctx.input(0);
    ResizeParams p = resize_params(ctx.attrs(), ctx.node.where, ctx.node.type, ctx.input_count());
    if (p.mode == ResizeMode::Nearest)
        ctx.require_dtype(
            0, {DType::F32, DType::F16, DType::I64, DType::I32, DType::U8, DType::I8, DType::Bool});
    else
        ctx.require_dtype(0, {DType::F32, DType::F16});
    if (x.shape.empty()) ctx.error("input must have rank >= 1");
    auto check_input = [&](int i, std::initializer_list<DType> dtypes, const char *what) {
        if (i >= 0 && ctx.has_input(static_cast<size_t>(i))) {
            ctx.require_dtype(static_cast<size_t>(i), dtypes);
            if (ctx.input(static_cast<size_t>(i)).shape.size() != 1) ctx.error(what, " must be a 1-D tensor");
        }
    };
    check_input(p.roi, {DType::F32, DType::F16}, "roi");
    check_input(p.scales, {DType::F32, DType::F16}, "scales");
    check_input(p.sizes, {DType::I64}, "sizes");
    if (p.scales_attr && !ctx.attrs().has("scales"))
        ctx.error("Upsample with one input needs the scales attribute");
    // The shape is known when the scales/sizes that are given are weights.
    const bool scales_in = p.scales >= 0 && ctx.has_input(static_cast<size_t>(p.scales));
    const bool sizes_in = p.sizes >= 0 && ctx.has_input(static_cast<size_t>(p.sizes));
    const Tensor *scales_t = optional_constant(ctx, p.scales), *sizes_t = optional_constant(ctx, p.sizes);
    if ((scales_in && !scales_t) || (sizes_in && !sizes_t)) return {{x.dtype, ctx.declared_shape(0), {}}};
    if (!p.scales_attr && !scales_in && !sizes_in) ctx.error("neither scales nor sizes is given");
    ResizePlan plan = resize_plan(p, ctx.attrs(), ctx.node.where, x.shape, scales_t, sizes_t, nullptr);
    return {{x.dtype, plan.out, {}}};
}

template <typename T> void run_nearest(const Tensor &x, Tensor &y, const std::vector<AxisTaps> &taps,
                                       T extrapolation, pthreadpool_t pool) {
    const Shape &in = x.shape();
    const size_t rank = in.size();
    std::vector<int64_t> strides(rank, 1);
    for (size_t a = rank - 1; a-- > 0;) strides[a] = strides[a + 1] * in[a + 1];
    std::vector<std::vector<int64_t>> map(rank);
    for (size_t a = 0; a < rank; ++a) {
        const AxisTaps &t = taps[a];
        map[a].resize(t.extrapolate.size());
        for (size_t o = 0; o < map[a].size(); ++o)
            map[a][o] = t.extrapolate[o] ? -1 : t.index[o] * strides[a];
    }
    nearest_gather(x.data<T>(), y.data<T>(), y.shape(), map, extrapolation, pool);
}

void resize_run(RunContext &ctx) {
    const Tensor &x_in = ctx.input(0);
    ResizeParams p = resize_params(ctx.attrs(), ctx.node.where, ctx.node.type, ctx.input_count());
    auto opt = [&](int i) {
        return i >= 0 && ctx.has_input(static_cast<size_t>(i)) ? &ctx.input(static_cast<size_t>(i)) : nullptr;
    };
    ResizePlan plan =
        resize_plan(p, ctx.attrs(), ctx.node.where, x_in.shape(), opt(p.scales), opt(p.sizes), opt(p.roi));
    Tensor &y_out = ctx.alloc_output(0, x_in.dtype(), plan.out);
    if (y_out.numel() == 0) return;
    const size_t rank = x_in.rank();
    if (plan.out == x_in.shape()) {
        // ONNX Runtime copies the input whenever no dimension changes.
        std::memcpy(y_out.raw(), x_in.raw(), x_in.byte_size());
        if (ctx.input_nhwc(0)) y_out.set_layout(Layout::NHWC);
        return;
    }
    std::vector<AxisTaps> taps(rank);
    for (size_t a = 0; a < rank; ++a)
        taps[a] = axis_taps(p, x_in.dim(a), plan.out[a], plan.scales[a], plan.roi[a], plan.roi[rank + a]);
    // Channels-last (the layout plan): the same per-axis work on the physical (N,H,W,C) order.
    Tensor x = x_in, y = y_out;
    if (ctx.input_nhwc(0)) {
        y_out.set_layout(Layout::NHWC);
        auto perm = [](auto v) { return decltype(v){v[0], v[2], v[3], v[1]}; };
        x = x_in.reshaped(perm(x_in.shape()));
        y = y_out.reshaped(perm(y_out.shape()));
        taps = perm(taps);
        plan.out = perm(plan.out);
        plan.scales = perm(plan.scales);
    }

    if (p.mode == ResizeMode::Nearest) {
        // The extrapolation value in the element type (integers truncate, as a C++ cast does; the
        // clamp keeps the conversion defined for any float).
        const float e = p.extrapolation;
        const uint64_t ei = static_cast<uint64_t>(
            std::isfinite(e) ? static_cast<int64_t>(std::clamp(e, -9.2e18f, 9.2e18f)) : 0);
        switch (dtype_size(x.dtype())) {
        case 1:
            run_nearest<uint8_t>(x, y, taps, static_cast<uint8_t>(x.dtype() == DType::Bool ? e != 0 : ei),
                                 ctx.pool());
            break;
        case 2: run_nearest<uint16_t>(x, y, taps, float_to_half(e), ctx.pool()); break;
        case 4: {
            uint32_t bits = static_cast<uint32_t>(ei);
            if (x.dtype() == DType::F32) std::memcpy(&bits, &e, 4);
            run_nearest<uint32_t>(x, y, taps, bits, ctx.pool());
            break;
        }
        default: run_nearest<uint64_t>(x, y, taps, ei, ctx.pool()); break;
        }
        return;
    }

    // Separable passes over the axes that change, shrinking ones first so later passes see less data.
    std::vector<size_t> order;
    for (size_t a = 0; a < rank; ++a)
        if (plan.scales[a] != 1.0f || plan.out[a] != x.dim(a)) order.push_back(a);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return static_cast<double>(plan.out[a]) / static_cast<double>(x.dim(a)) <
               static_cast<double>(plan.out[b]) / static_cast<double>(x.dim(b));
    });
    Tensor in_holder, out_holder;
    const float *cur = as_f32(ctx, x, in_holder);
    Shape shape = x.shape();
    Tensor buffers[2];
    for (size_t step = 0; step < order.size(); ++step) {
        const size_t a = order[step];
        size_t outer = 1, inner = 1;
        for (size_t i = 0; i < a; ++i) outer *= static_cast<size_t>(shape[i]);
        for (size_t i = a + 1; i < rank; ++i) inner *= static_cast<size_t>(shape[i]);
        const size_t in_len = static_cast<size_t>(shape[a]);
        shape[a] = plan.out[a];
        float *dst;
        if (step + 1 == order.size()) {
            dst = out_f32(ctx, y, out_holder);
        } else {
            buffers[step % 2] = ctx.scratch(DType::F32, shape);
            dst = buffers[step % 2].data<float>();
        }
        resize_pass(cur, dst, outer, in_len, inner, taps[a], p.extrapolation, ctx.pool());
        cur = dst;
    }
    store_f32_output(ctx, y, out_holder);
}

} // namespace

void register_resize_ops(Registry &r) {
    r.add("Resize", resize_infer, resize_run).with_nhwc(NhwcIo::Same);
    r.add("Upsample", resize_infer, resize_run).with_nhwc(NhwcIo::Same);
}

} // namespace onnxstream
