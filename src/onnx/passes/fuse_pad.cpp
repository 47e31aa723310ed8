// An explicit Pad in front of a Conv or pool (TensorFlow-style exports, PyTorch's F.pad / ZeroPad2d,
// asymmetric "same" padding) costs a full copy of the activation; the op after it pads for free. Folded
// only where the result is exactly the same:
//   Conv        <- constant zero padding on spatial dims
//   AveragePool <- constant zero padding, the pool counting padded taps (count_include_pad=1, or no pool
//                  padding of its own so it can be switched on), ceil_mode 0 (ceil_mode's last-window rule
//                  depends on the trailing padding, so moving it would change the output size)
//   MaxPool     <- constant -inf padding (a max pool's own padding never wins), ceil_mode 0, no window
//                  wholly inside the padding
#include <cmath>
#include <limits>

#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

void erase_attr(Node &n, const std::string &key) {
    for (size_t i = 0; i < n.attrs.size(); ++i)
        if (n.attrs[i].name() == key) {
            n.attrs.erase(n.attrs.begin() + static_cast<std::ptrdiff_t>(i));
            return;
        }
}

std::string attr_string(const Node &n, const std::string &key, const std::string &fallback) {
    const onnx::AttributeProto *a = n.attr(key);
    return a ? a->s() : fallback;
}

size_t rank_of(const IrGraph &g, const std::string &name) {
    const ValueType *t = g.type_of(name);
    return t && t->has_shape ? t->dims.size() : 0;
}

// The Pad's per-dimension (begin..., end...) amounts over the full rank and its fill value; false when it
// is not a constant-mode pad with constant amounts.
bool read_pad(const IrGraph &g, const Node &pad, std::vector<int64_t> &pads, float &value) {
    if (attr_string(pad, "mode", "constant") != "constant") return false;
    const size_t rank = rank_of(g, pad.inputs[0]);
    if (rank == 0) return false;
    value = 0.0f;
    if (pad.attr("pads")) { // Pad-2: amounts and value are attributes
        pads = pad.attr_ints("pads");
        value = pad.attr_float("value", 0.0f);
    } else {
        if (pad.inputs.size() < 2 || !int_constant(g, pad.inputs[1], pads)) return false;
        if (pad.inputs.size() > 2 && !pad.inputs[2].empty()) {
            auto it = g.constants.find(pad.inputs[2]);
            if (it == g.constants.end() || it->second.numel() != 1) return false;
            int32_t t = it->second.type();
            if (t != kOnnxFloat && t != kOnnxFloat16 && t != kOnnxDouble) return false;
            value = it->second.float_values()[0];
        }
        if (pad.inputs.size() > 3 && !pad.inputs[3].empty()) { // Pad-18 axes: amounts for those axes only
            std::vector<int64_t> axes;
            if (!int_constant(g, pad.inputs[3], axes) || pads.size() != 2 * axes.size()) return false;
            std::vector<int64_t> full(2 * rank, 0);
            for (size_t i = 0; i < axes.size(); ++i) {
                int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(rank) : axes[i];
                if (a < 0 || a >= static_cast<int64_t>(rank)) return false;
                full[static_cast<size_t>(a)] += pads[i];
                full[static_cast<size_t>(a) + rank] += pads[i + axes.size()];
            }
            pads = std::move(full);
        }
    }
    if (pads.size() != 2 * rank || rank < 3) return false;
    for (int64_t p : pads)
        if (p < 0) return false; // negative amounts crop
    // Batch and channel dims must be untouched: the consumer only pads spatial dims.
    return pads[0] == 0 && pads[1] == 0 && pads[rank] == 0 && pads[rank + 1] == 0;
}

// Adds the Pad's spatial amounts to the consumer's own pads; false when its auto_pad is a SAME mode.
bool merge_into(Node &op, const std::vector<int64_t> &pads) {
    const size_t rank = pads.size() / 2, spatial = rank - 2;
    std::string auto_pad = attr_string(op, "auto_pad", "NOTSET");
    std::vector<int64_t> own;
    if (auto_pad == "NOTSET" || auto_pad.empty()) {
        own = op.attr_ints("pads");
        if (own.empty()) own.assign(2 * spatial, 0);
    } else if (auto_pad == "VALID") {
        own.assign(2 * spatial, 0);
    } else {
        return false;
    }
    if (own.size() != 2 * spatial) return false;
    for (size_t i = 0; i < spatial; ++i) {
        own[i] += pads[2 + i];
        own[spatial + i] += pads[rank + 2 + i];
    }
    erase_attr(op, "auto_pad");
    set_attr(op, ints_attr("pads", own));
    return true;
}

bool all_zero(const std::vector<int64_t> &v) {
    for (int64_t x : v)
        if (x != 0) return false;
    return true;
}

// A window lying wholly in -inf padding yields -inf, but a MaxPool window wholly in its own padding yields
// the lowest float (ONNX Runtime) instead. With dilation 1, ceil_mode 0 and at most kernel-1 padding on
// each side, every window overlaps the input, so moving the padding changes nothing.
bool max_windows_touch_input(const Node &pool) {
    std::vector<int64_t> kernel = pool.attr_ints("kernel_shape"), pads = pool.attr_ints("pads"),
                         dilations = pool.attr_ints("dilations");
    if (kernel.empty() || pads.size() != 2 * kernel.size()) return false;
    for (int64_t d : dilations)
        if (d != 1) return false;
    for (size_t i = 0; i < kernel.size(); ++i)
        if (pads[i] > kernel[i] - 1 || pads[i + kernel.size()] > kernel[i] - 1) return false;
    return true;
}

bool second_output_used(const GraphIndex &idx, const Node &n) {
    return n.outputs.size() > 1 && !n.outputs[1].empty() && idx.is_used(n.outputs[1]);
}

} // namespace

bool fuse_pad(IrGraph &g) {
    GraphIndex idx(g);
    std::vector<bool> removed(g.nodes.size(), false);
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        Node &op = g.nodes[i];
        if (!op.default_domain() || op.inputs.empty() || op.inputs[0].empty()) continue;
        const bool conv = op.op_type == "Conv", avg = op.op_type == "AveragePool", max = op.op_type == "MaxPool";
        if (!conv && !avg && !max) continue;
        const std::string &mid = op.inputs[0];
        if (g.is_constant(mid) || idx.use_count(mid) != 1) continue;
        auto p = idx.producer.find(mid);
        if (p == idx.producer.end() || removed[static_cast<size_t>(p->second)]) continue;
        const Node &pad = g.nodes[static_cast<size_t>(p->second)];
        if (!pad.default_domain() || pad.op_type != "Pad" || pad.outputs.size() != 1 || pad.inputs.empty() ||
            pad.inputs[0].empty())
            continue;
        std::vector<int64_t> pads;
        float value = 0.0f;
        if (!read_pad(g, pad, pads, value)) continue;
        if (conv && value != 0.0f) continue;
        if (avg) {
            if (value != 0.0f || op.attr_int("ceil_mode", 0) != 0) continue;
            // Zero taps must count in the divisor, as they did when they were real values.
            if (op.attr_int("count_include_pad", 0) != 1 && !all_zero(op.attr_ints("pads"))) continue;
        }
        if (max) {
            if (!(std::isinf(value) && value < 0) || op.attr_int("ceil_mode", 0) != 0 || second_output_used(idx, op))
                continue;
        }
        Node merged = op;
        if (!merge_into(merged, pads)) continue;
        if (max && !max_windows_touch_input(merged)) continue;
        if (avg) set_attr(merged, int_attr("count_include_pad", 1));
        merged.inputs[0] = pad.inputs[0];
        op = std::move(merged);
        removed[static_cast<size_t>(p->second)] = true;
        changed = true;
    }
    if (!changed) return false;
    drop_nodes(g, removed);
    return true;
}

} // namespace onnxstream::importer
