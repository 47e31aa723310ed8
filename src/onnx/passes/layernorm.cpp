// Before opset 17 torch.onnx.export writes nn.LayerNorm as its formula: d = x - ReduceMean(x);
// y = d / Sqrt(ReduceMean(d^2) + eps) * gamma + beta, nine ops and four full passes over the activation.
// LayerNormalization (axis k: statistics over dims [k, rank)) computes the same in one pass. Both
// ReduceMeans must reduce the same trailing block of axes with keepdims; anything else (a non-trailing
// axis, the two means over different axes) is a different computation and is left alone.
#include <algorithm>

#include "onnx/passes/match.h"
#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

using match::Matcher;

// The first normalised axis when `n` is a keepdims ReduceMean over the trailing axes [k, rank), else -1.
int64_t trailing_axes(const IrGraph &g, const Node &n, size_t rank) {
    if (n.attr_int("keepdims", 1) != 1) return -1;
    std::vector<int64_t> axes;
    if (n.inputs.size() >= 2 && !n.inputs[1].empty()) {
        auto it = g.constants.find(n.inputs[1]);
        if (it == g.constants.end()) return -1;
        axes = it->second.int_values();
    } else {
        axes = n.attr_ints("axes");
    }
    if (axes.empty() || rank == 0) return -1; // all axes, or nothing with noop_with_empty_axes
    for (auto &a : axes) {
        if (a < -static_cast<int64_t>(rank) || a >= static_cast<int64_t>(rank)) return -1;
        if (a < 0) a += static_cast<int64_t>(rank);
    }
    std::sort(axes.begin(), axes.end());
    for (size_t i = 0; i < axes.size(); ++i)
        if (axes[i] != static_cast<int64_t>(rank - axes.size() + i)) return -1;
    return axes.front();
}

// A constant applied elementwise to the normalised output that varies only over the normalised dims
// [axis, rank) and does not widen the output's shape; its values expanded to the normalised shape.
bool row_parameter(const IrGraph &g, const std::string &name, const Shape &x, size_t axis,
                   std::vector<double> &out, int32_t &type) {
    auto it = g.constants.find(name);
    if (it == g.constants.end() || !match::is_float(it->second.type())) return false;
    const Shape &s = it->second.shape();
    if (s.size() > x.size()) return false;
    const size_t offset = x.size() - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
        size_t d = i + offset;
        if (s[i] != 1 && (d < axis || s[i] != x[d])) return false;
    }
    Shape norm(x.begin() + static_cast<std::ptrdiff_t>(axis), x.end());
    Shape p(norm.size(), 1);
    for (size_t i = 0; i < s.size(); ++i)
        if (i + offset >= axis) p[i + offset - axis] = s[i];
    std::vector<float> v = it->second.float_values();
    const int64_t cols = shape_numel(norm);
    out.assign(static_cast<size_t>(cols), 0.0);
    std::vector<int64_t> idx(norm.size(), 0);
    for (int64_t e = 0; e < cols; ++e) {
        int64_t src = 0;
        for (size_t i = 0; i < norm.size(); ++i) src = src * p[i] + (p[i] == 1 ? 0 : idx[i]);
        out[static_cast<size_t>(e)] = v[static_cast<size_t>(src)];
        for (size_t i = norm.size(); i-- > 0;) {
            if (++idx[i] < norm[i]) break;
            idx[i] = 0;
        }
    }
    type = it->second.type();
    return true;
}

} // namespace

bool fuse_layernorm(IrGraph &g) {
    if (!match::engine_has("LayerNormalization") || !match::all_typed(g)) return false;
    Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (m.removed(i)) continue;
        Node &mean = g.nodes[i];
        if (!mean.default_domain() || mean.op_type != "ReduceMean" || mean.outputs.size() != 1) continue;
        const std::string x = mean.inputs[0];
        const ValueType *xt = m.float_type(x);
        if (!xt || xt->dims.empty()) continue;
        const size_t rank = xt->dims.size();
        const int64_t axis = trailing_axes(g, mean, rank);
        if (axis < 0) continue;
        Node *sub = m.sole_consumer(mean.outputs[0], "Sub");
        if (!sub || sub->inputs.size() != 2 || sub->inputs[0] != x || sub->inputs[1] != mean.outputs[0])
            continue;
        const ValueType *dt = m.float_type(sub->outputs[0]);
        if (!dt || dt->dims != xt->dims) continue;
        const std::string d = sub->outputs[0];

        // d feeds exactly the square and the division.
        auto readers = m.idx.consumers.find(d);
        if (m.idx.use_count(d) != 2 || readers == m.idx.consumers.end() || readers->second.size() != 2)
            continue;
        Node *square = nullptr, *div = nullptr;
        for (int r : readers->second) {
            Node &n = g.nodes[static_cast<size_t>(r)];
            if (m.removed(static_cast<size_t>(r)) || !n.default_domain() || n.inputs.size() != 2) continue;
            double e = 0;
            if (n.op_type == "Pow" && n.inputs[0] == d && m.scalar(n.inputs[1], e, 0) && e == 2.0) square = &n;
            else if (n.op_type == "Div" && n.inputs[0] == d) div = &n;
        }
        if (!square || !div) continue;
        Node *var = m.sole_consumer(square->outputs[0], "ReduceMean");
        if (!var || trailing_axes(g, *var, rank) != axis) continue;
        Node *add = m.sole_consumer(var->outputs[0], "Add");
        if (!add) continue;
        const std::string *eps_name = Matcher::other_operand(*add, var->outputs[0]);
        double eps = 0;
        if (!eps_name || !m.scalar(*eps_name, eps, rank) || !(eps >= 0)) continue;
        Node *sqrt = m.sole_consumer(add->outputs[0], "Sqrt");
        if (!sqrt || sqrt->outputs[0] != div->inputs[1] || !m.single_use(sqrt->outputs[0])) continue;
        const ValueType *yt = m.float_type(div->outputs[0]);
        if (!yt || yt->dims != xt->dims) continue;

        const size_t first = static_cast<size_t>(axis);
        const Shape norm(xt->dims.begin() + axis, xt->dims.end());
        std::vector<double> scale(static_cast<size_t>(shape_numel(norm)), 1.0), bias;
        int32_t type = xt->elem_type;
        std::vector<Node *> chain{&mean, sub, square, var, add, sqrt, div};
        std::string out = div->outputs[0];
        std::vector<double> k;
        int32_t ktype = type;
        if (Node *mul = m.sole_consumer(out, "Mul")) {
            const std::string *other = Matcher::other_operand(*mul, out);
            if (other && row_parameter(g, *other, xt->dims, first, k, ktype)) {
                scale = k;
                type = ktype;
                chain.push_back(mul);
                out = mul->outputs[0];
            }
        }
        if (Node *badd = m.sole_consumer(out, "Add")) {
            const std::string *other = Matcher::other_operand(*badd, out);
            if (other && row_parameter(g, *other, xt->dims, first, k, ktype)) {
                bias = k;
                chain.push_back(badd);
                out = badd->outputs[0];
            }
        }

        Node ln;
        ln.name = mean.name;
        ln.op_type = "LayerNormalization";
        ln.inputs = {x, g.fresh_name(mean.name + "_scale")};
        g.constants[ln.inputs[1]] = match::float_constant(type, norm, scale);
        if (!bias.empty()) {
            ln.inputs.push_back(g.fresh_name(mean.name + "_bias"));
            g.constants[ln.inputs[2]] = match::float_constant(type, norm, bias);
        }
        ln.outputs = {out};
        ln.attrs = {int_attr("axis", axis), match::attr_float("epsilon", static_cast<float>(eps))};
        Node *last = chain.back();
        for (Node *p : chain)
            if (p != last) m.remove(m.index_of(*p));
        *last = std::move(ln);
    }
    return m.finish();
}

} // namespace onnxstream::importer
