// torch.onnx.export (opset < 18) writes nn.GroupNorm as Reshape(x, [N, G, -1]) -> InstanceNormalization
// (scale 1, bias 0 per group) -> Reshape back to x's shape -> Mul(gamma) -> Add(beta). The engine's
// GroupNormalization does the same in one pass over the data instead of four, without the reshaped copies.
// A Swish that alone reads the result then joins it (fuse_groupnorm_swish).
//
// InstanceNormalization over [N, G, ...] normalises each (sample, group) over everything after the group
// axis, which is exactly the group's channels and all their spatial positions, since the reshape keeps the
// row-major order. Its per-group scale s and bias b and the per-channel gamma/beta fold into one
// per-channel affine map:
//   ((x - m) * inv * s + b) * gamma + beta = (x - m) * inv * (s * gamma) + (b * gamma + beta).
// When groups == channels the reshapes are no-ops (eliminated earlier): the Mul/Add then fold into the
// InstanceNormalization's own scale and bias.
#include <algorithm>
#include <cstring>

#include "onnx/passes/match.h"
#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

using match::Matcher;

// Per-channel values of a constant multiplied/added to an (N, C, ...) tensor: its shape, right-aligned to
// x's rank, must be 1 everywhere except the channel axis (C or 1), so the operation neither broadcasts x
// to a bigger shape nor varies over anything but channels.
bool per_channel(const IrGraph &g, const std::string &name, const Shape &x, std::vector<double> &out) {
    auto it = g.constants.find(name);
    if (it == g.constants.end() || !match::is_float(it->second.type())) return false;
    const Shape &s = it->second.shape();
    if (s.size() > x.size()) return false;
    const size_t offset = x.size() - s.size();
    int64_t channels = 1;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i + offset == 1) {
            if (s[i] != 1 && s[i] != x[1]) return false;
            channels = s[i];
        } else if (s[i] != 1) {
            return false;
        }
    }
    std::vector<float> v = it->second.float_values();
    out.resize(static_cast<size_t>(x[1]));
    for (size_t c = 0; c < out.size(); ++c) out[c] = v[channels == 1 ? 0 : c];
    return true;
}

} // namespace

bool fuse_groupnorm(IrGraph &g) {
    if (!match::engine_has("GroupNormalization") || !match::all_typed(g)) return false;
    Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (m.removed(i)) continue;
        const Node &in = g.nodes[i];
        if (!in.default_domain() || in.op_type != "InstanceNormalization" || in.inputs.size() != 3 ||
            in.outputs.size() != 1)
            continue;
        // With the reshape sandwich this is a GroupNorm; without it (groups == channels, or the reshapes
        // were no-ops and are gone) an InstanceNormalization whose following Mul/Add fold into its own
        // per-channel scale and bias.
        Node *pre = m.producer(in.inputs[0], "Reshape");
        Node *post = m.sole_consumer(in.outputs[0], "Reshape");
        const bool sandwich = pre && post && m.single_use(in.inputs[0]) && post->inputs[0] == in.outputs[0];
        // The normalised tensor as the affine ops see it: the sandwich's output shape. When that is not x's
        // own shape (an earlier pass merged x's producing Reshape into the first one), the first Reshape
        // stays, retargeted to it: one view instead of two.
        std::string x = sandwich ? pre->inputs[0] : in.inputs[0];
        const ValueType *xt = m.float_type(x), *rt = m.float_type(in.inputs[0]);
        const ValueType *pt = sandwich ? m.float_type(post->outputs[0]) : xt;
        if (!xt || !rt || !pt || pt->dims.size() < (sandwich ? 2u : 3u) || rt->dims.size() < 3) continue;
        const Shape xs = pt->dims;
        const int64_t n = xs[0], c = xs[1], groups = rt->dims[1];
        if (rt->dims[0] != n || groups <= 0 || c % groups != 0 || shape_numel(rt->dims) != shape_numel(xs) ||
            shape_numel(xt->dims) != shape_numel(xs) || std::count(xs.begin(), xs.end(), 0))
            continue;
        const bool keep_pre = sandwich && xt->dims != xs;

        auto s_it = g.constants.find(in.inputs[1]), b_it = g.constants.find(in.inputs[2]);
        if (s_it == g.constants.end() || b_it == g.constants.end() || !match::is_float(s_it->second.type()) ||
            !match::is_float(b_it->second.type()) ||
            s_it->second.numel() != groups || b_it->second.numel() != groups)
            continue;
        std::vector<float> sv = s_it->second.float_values(), bv = b_it->second.float_values();
        const size_t per_group = static_cast<size_t>(c / groups);
        std::vector<double> scale(static_cast<size_t>(c)), bias(static_cast<size_t>(c));
        for (size_t ch = 0; ch < scale.size(); ++ch) {
            scale[ch] = sv[ch / per_group];
            bias[ch] = bv[ch / per_group];
        }

        // Absorb Mul(gamma) and Add(beta) that follow (either, both or none).
        std::vector<Node *> chain{&g.nodes[i]};
        if (sandwich) chain = {pre, &g.nodes[i], post};
        std::string out = chain.back()->outputs[0];
        std::vector<double> k;
        if (Node *mul = m.sole_consumer(out, "Mul")) {
            const std::string *other = Matcher::other_operand(*mul, out);
            if (other && per_channel(g, *other, xs, k)) {
                for (size_t ch = 0; ch < scale.size(); ++ch) scale[ch] *= k[ch], bias[ch] *= k[ch];
                chain.push_back(mul);
                out = mul->outputs[0];
            }
        }
        if (Node *add = m.sole_consumer(out, "Add")) {
            const std::string *other = Matcher::other_operand(*add, out);
            if (other && per_channel(g, *other, xs, k)) {
                for (size_t ch = 0; ch < bias.size(); ++ch) bias[ch] += k[ch];
                chain.push_back(add);
                out = add->outputs[0];
            }
        }

        if (!sandwich && chain.size() == 1) continue; // nothing to fold into the InstanceNormalization
        const int32_t type = s_it->second.type();
        if (keep_pre) {
            std::string bytes(xs.size() * 8, '\0');
            std::memcpy(bytes.data(), xs.data(), bytes.size());
            pre->inputs.resize(2);
            pre->inputs[1] = g.fresh_name(in.name + "_view");
            g.constants[pre->inputs[1]] = ConstantData::in_memory(kOnnxInt64, {static_cast<int64_t>(xs.size())},
                                                                  std::move(bytes));
            ValueType &vt = g.types[pre->outputs[0]];
            vt.dims = xs;
            vt.dim_params.assign(xs.size(), std::string());
            x = pre->outputs[0];
            chain.erase(chain.begin());
        }
        Node gn;
        gn.name = in.name;
        gn.op_type = sandwich ? "GroupNormalization" : "InstanceNormalization";
        gn.inputs = {x, g.fresh_name(in.name + "_scale"), ""};
        g.constants[gn.inputs[1]] = match::float_constant(type, {c}, scale);
        gn.inputs[2] = g.fresh_name(in.name + "_bias");
        g.constants[gn.inputs[2]] = match::float_constant(type, {c}, bias);
        gn.outputs = {out};
        gn.attrs = {match::attr_float("epsilon", in.attr_float("epsilon", 1e-5f))};
        if (sandwich) gn.attrs.push_back(int_attr("num_groups", groups));
        Node *last = chain.back();
        for (Node *p : chain)
            if (p != last) m.remove(m.index_of(*p));
        *last = std::move(gn);
    }
    return m.finish();
}

// GroupNormalization -> Swish, the Swish the norm's only reader: one GroupNormSwish (the inputs and
// attributes of the norm, the Swish's alpha), which applies the Swish row by row as it writes.
bool fuse_groupnorm_swish(IrGraph &g) {
    if (!match::engine_has("GroupNormSwish")) return false;
    Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (m.removed(i)) continue;
        Node &norm = g.nodes[i];
        if (!norm.default_domain() || norm.op_type != "GroupNormalization" || norm.outputs.size() != 1) continue;
        Node *swish = m.sole_consumer(norm.outputs[0], "Swish");
        if (!swish || swish->inputs.size() != 1) continue;
        Node fused = norm;
        fused.name = swish->name;
        fused.op_type = "GroupNormSwish";
        fused.outputs = swish->outputs;
        for (const auto &attr : swish->attrs) fused.attrs.push_back(attr);
        m.remove(i);
        *swish = std::move(fused);
    }
    return m.finish();
}

} // namespace onnxstream::importer
