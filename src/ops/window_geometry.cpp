#include "ops/window_geometry.h"

#include <algorithm>

#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::window {

namespace {
template <typename... Args> [[noreturn]] void invalid(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": ", std::forward<Args>(args)...);
}
template <typename... Args> [[noreturn]] void unsupported(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": ", std::forward<Args>(args)...);
}
} // namespace

const ConvNames kConvNames{"Conv", "input", "weight", "the input", "the weight"};
const ConvNames kConvTransposeNames{"ConvTranspose", "input", "weight", "the input", "the weight"};
const ConvNames kConvIntegerNames{"ConvInteger", "x", "w", "x", "w"};

AutoPad parse_auto_pad(const Attributes &attrs, const std::string &where) {
    const std::string s = attrs.get_string("auto_pad", "NOTSET");
    if (s == "NOTSET" || s.empty()) return AutoPad::NotSet;
    if (s == "SAME_UPPER") return AutoPad::SameUpper;
    if (s == "SAME_LOWER") return AutoPad::SameLower;
    if (s == "VALID") return AutoPad::Valid;
    invalid(where, "auto_pad is '", s, "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
}

std::vector<int64_t> per_axis(const Attributes &attrs, const std::string &where, const char *name, size_t count,
                              int64_t fallback, int64_t min, int64_t max) {
    std::vector<int64_t> v = attrs.get_ints(name, {});
    if (v.empty()) return std::vector<int64_t>(count, fallback);
    if (v.size() != count) invalid(where, name, " has ", v.size(), " values, expected ", count);
    for (int64_t e : v) {
        if (e < min) invalid(where, name, " value ", e, " is out of range (expected >= ", min, ")");
        if (e > max) unsupported(where, name, " value ", e, " is too large");
    }
    return v;
}

void same_padding(AutoPad mode, int64_t in, int64_t stride, int64_t dilated_kernel, int64_t &begin, int64_t &end) {
    const int64_t target = (in + stride - 1) / stride;
    const int64_t total = std::max<int64_t>(0, (target - 1) * stride + dilated_kernel - in);
    begin = mode == AutoPad::SameUpper ? total / 2 : total - total / 2;
    end = total - begin;
}

void check_ranks(const std::string &where, const Shape &x, const Shape &w, const ConvNames &names,
                 size_t max_spatial) {
    const bool two = max_spatial == 2;
    if (x.size() < 3)
        invalid(where, names.x, " has shape ", shape_str(x), ", expected (N, C, spatial...) of rank ",
                two ? "3 or 4" : "3 to 5");
    if (x.size() > max_spatial + 2)
        unsupported(where, names.op, " over ", x.size() - 2, " spatial axes is not supported (only ",
                    two ? "1-D and 2-D" : "1-D to 3-D", "), ", names.x, " shape ", shape_str(x));
    if (w.size() != x.size())
        invalid(where, names.w, " has shape ", shape_str(w), " but ", names.the_x, " ", shape_str(x), " needs a rank-",
                x.size(), " ", names.w);
}

void read_window_attrs(const Attributes &attrs, const std::string &where, ConvGeometry &g, const Shape &w,
                       const ConvNames &names) {
    const size_t sp = g.spatial;
    g.kernel.assign(w.begin() + 2, w.end());
    const std::vector<int64_t> ks = attrs.get_ints("kernel_shape", {});
    if (!ks.empty() && ks != g.kernel)
        invalid(where, "kernel_shape (", join_ints(ks), ") does not match ", names.the_w, "'s spatial shape ",
                shape_str(w));
    for (int64_t k : g.kernel) {
        if (k < 1) invalid(where, names.w, " has shape ", shape_str(w), ", kernel dimensions must be >= 1");
        if (k > kMaxGeometry) unsupported(where, "kernel dimension ", k, " is too large");
    }
    g.strides = per_axis(attrs, where, "strides", sp, 1, 1, kMaxGeometry);
    g.dilations = per_axis(attrs, where, "dilations", sp, 1, 1, kMaxGeometry);
    const std::vector<int64_t> pads = per_axis(attrs, where, "pads", 2 * sp, 0, 0, kMaxGeometry);
    g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(sp));
    g.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(sp), pads.end());
}

ConvGeometry conv_geometry(const Attributes &attrs, const std::string &where, const Shape &x, const Shape &w,
                           const ConvNames &names) {
    check_ranks(where, x, w, names);
    ConvGeometry g;
    g.spatial = x.size() - 2;
    g.batch = x[0];
    g.in_channels = x[1];
    g.out_channels = w[0];
    g.group = attrs.get_int("group", 1);
    if (g.group < 1) invalid(where, "group is ", g.group, ", expected >= 1");
    if (g.out_channels == 0 || w[1] == 0) invalid(where, names.w, " has shape ", shape_str(w), " with a zero dimension");
    // Divisibility first: it bounds group by the weight's element count, so w[1] * group cannot overflow.
    if (g.out_channels % g.group != 0)
        invalid(where, names.w, " has ", g.out_channels, " output channels, not divisible by group ", g.group);
    if (w[1] * g.group != g.in_channels)
        invalid(where, names.x, " has ", g.in_channels, " channels but ", names.the_w, " ", shape_str(w), " with group ",
                g.group, " expects ", w[1] * g.group);
    read_window_attrs(attrs, where, g, w, names);
    const AutoPad ap = parse_auto_pad(attrs, where);
    g.in.assign(x.begin() + 2, x.end());
    g.out.resize(g.spatial);
    for (size_t i = 0; i < g.spatial; ++i) {
        const int64_t in = g.in[i], s = g.strides[i], dk = (g.kernel[i] - 1) * g.dilations[i] + 1;
        if (in > kMaxGeometry) unsupported(where, "spatial size ", in, " is too large");
        if (ap == AutoPad::Valid) g.pad_begin[i] = g.pad_end[i] = 0;
        else if (ap != AutoPad::NotSet) same_padding(ap, in, s, dk, g.pad_begin[i], g.pad_end[i]);
        const int64_t span = in + g.pad_begin[i] + g.pad_end[i] - dk;
        if (span < 0)
            invalid(where, "spatial axis ", i, ": the padded input (", in, " + pads ", g.pad_begin[i], ",",
                    g.pad_end[i], ") is smaller than the dilated kernel (", dk, ")");
        g.out[i] = span / s + 1;
        if (g.pad_begin[i] > kMaxGeometry || g.pad_end[i] > kMaxGeometry)
            unsupported(where, "padding of spatial axis ", i, " is too large");
    }
    return g;
}

} // namespace onnxstream::window
