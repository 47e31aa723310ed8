// The GEGLU feed-forward of Stable Diffusion's transformer blocks (diffusers: `hidden, gate =
// proj(x).chunk(2, dim=-1); out(hidden * gelu(gate))`) exports as
//   MatMul(x, W1) [+ Add b1] (or Gemm) -> two Slices (or a Split) of the last axis into halves a | g
//   -> Gelu(g) (after the gelu pass) -> Mul(a, gelu) -> MatMul(., W2) [+ Add b2] (or Gemm)
// and becomes one GegluFeedForward(x, W1t, b1, W2, b2), which never holds the [T, 2H] product (src/ops/
// feed_forward.cpp). W1 is written transposed ([2H, C]) so that a block of hidden columns is a block of
// rows the engine can stream. Only the exact pattern is rewritten: the second half is the gated one, the
// halves split the last axis evenly, the weights are constant 2-D matrices and the biases 1-D constants,
// and no intermediate value has another reader.
#include <algorithm>
#include <cstring>

#include "onnx/passes/match.h"
#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

using match::Matcher;

// One linear layer y = x · W + b as matched: W as a [K, N] (kn) or [N, K] matrix, b optional.
struct Linear {
    std::vector<Node *> nodes; // MatMul [, Add] or Gemm; the last one produces y
    std::string x, w, b;
    bool w_nk = false;
    int64_t k = 0, n = 0;
};

bool float_constant_shape(const IrGraph &g, const std::string &name, Shape &shape) {
    auto it = g.constants.find(name);
    if (it == g.constants.end() || !match::is_float(it->second.type())) return false;
    shape = it->second.shape();
    return true;
}

// The 1-D constant bias of n values (Add operand or Gemm's C).
bool bias_ok(const IrGraph &g, const std::string &b, int64_t n) {
    Shape s;
    return float_constant_shape(g, b, s) && s == Shape{n};
}

// Linear layer whose result is `y` (walking up from the consumer side).
bool linear_producing(Matcher &m, const std::string &y, Linear &l) {
    std::string mm_out = y;
    Node *add = m.producer(y, "Add");
    if (add && add->inputs.size() == 2) {
        for (size_t s = 0; s < 2; ++s)
            if (m.g.is_constant(add->inputs[s]) && !m.g.is_constant(add->inputs[1 - s])) {
                l.b = add->inputs[s];
                mm_out = add->inputs[1 - s];
            }
        if (l.b.empty() || !m.single_use(mm_out)) return false;
    }
    if (Node *gemm = !add ? m.producer(y, "Gemm") : nullptr) {
        if (gemm->inputs.size() < 2 || gemm->attr_int("transA", 0) != 0 || gemm->attr_float("alpha", 1.0f) != 1.0f ||
            gemm->attr_float("beta", 1.0f) != 1.0f)
            return false;
        l.x = gemm->inputs[0];
        l.w = gemm->inputs[1];
        l.w_nk = gemm->attr_int("transB", 0) != 0;
        if (gemm->inputs.size() > 2) l.b = gemm->inputs[2];
        l.nodes = {gemm};
    } else {
        Node *mm = m.producer(mm_out, "MatMul");
        if (!mm || mm->inputs.size() != 2) return false;
        l.x = mm->inputs[0];
        l.w = mm->inputs[1];
        l.nodes = {mm};
        if (add) l.nodes.push_back(add);
    }
    Shape ws;
    if (m.g.is_constant(l.x) || !float_constant_shape(m.g, l.w, ws) || ws.size() != 2) return false;
    l.k = l.w_nk ? ws[1] : ws[0];
    l.n = l.w_nk ? ws[0] : ws[1];
    return l.b.empty() || bias_ok(m.g, l.b, l.n);
}

// Linear layer reading `x` as its only consumer (walking down).
bool linear_reading(Matcher &m, const std::string &x, Linear &l) {
    if (Node *gemm = m.sole_consumer(x, "Gemm")) {
        if (gemm->inputs[0] != x) return false;
        return linear_producing(m, gemm->outputs[0], l);
    }
    Node *mm = m.sole_consumer(x, "MatMul");
    if (!mm || mm->inputs.size() != 2 || mm->inputs[0] != x) return false;
    // An Add of a constant is the bias; any other Add (a residual) stays outside the layer.
    Node *add = m.sole_consumer(mm->outputs[0], "Add");
    const std::string *other = add ? Matcher::other_operand(*add, mm->outputs[0]) : nullptr;
    if (!other || !m.g.is_constant(*other)) add = nullptr;
    return linear_producing(m, add ? add->outputs[0] : mm->outputs[0], l) && l.nodes.front() == mm;
}

// `half` = the [begin, end) part of the last axis of some value `h` of last dim `d` (a Slice, or an output
// of a two-way Split); returns the slicing node and h.
Node *last_axis_part(Matcher &m, const std::string &half, int64_t &begin, int64_t &end, std::string &h) {
    if (Node *s = m.producer(half, "Slice")) {
        if (s->attr("starts") || s->inputs.size() < 3 || s->inputs.size() > 5) return nullptr;
        h = s->inputs[0];
        Shape hs;
        if (!static_shape_of(m.g, h, hs) || hs.empty()) return nullptr;
        const int64_t rank = static_cast<int64_t>(hs.size()), d = hs.back();
        std::vector<int64_t> starts, ends, axes{0}, steps{1};
        if (!int_constant(m.g, s->inputs[1], starts) || !int_constant(m.g, s->inputs[2], ends) || starts.size() != 1 ||
            ends.size() != 1)
            return nullptr;
        if (s->inputs.size() > 3 && !s->inputs[3].empty() && !int_constant(m.g, s->inputs[3], axes)) return nullptr;
        if (s->inputs.size() > 4 && !s->inputs[4].empty() && !int_constant(m.g, s->inputs[4], steps)) return nullptr;
        if (axes.size() != 1 || steps.size() != 1 || steps[0] != 1) return nullptr;
        if (axes[0] != rank - 1 && axes[0] != -1) return nullptr;
        auto clamp = [d](int64_t v) { return std::min(std::max(v < 0 ? v + d : v, int64_t{0}), d); };
        begin = clamp(starts[0]);
        end = clamp(ends[0]);
        return s;
    }
    Node *sp = m.producer(half, "Split");
    if (!sp || sp->outputs.size() != 2) return nullptr;
    h = sp->inputs[0];
    Shape hs;
    if (!static_shape_of(m.g, h, hs) || hs.empty()) return nullptr;
    const int64_t rank = static_cast<int64_t>(hs.size()), d = hs.back();
    const int64_t axis = sp->attr_int("axis", 0);
    if (axis != rank - 1 && axis != -1) return nullptr;
    std::vector<int64_t> sizes = sp->attr_ints("split");
    if (sp->inputs.size() > 1 && !sp->inputs[1].empty() && !int_constant(m.g, sp->inputs[1], sizes)) return nullptr;
    if (sizes.empty() && d % 2 == 0) sizes = {d / 2, d / 2};
    if (sizes.size() != 2 || sizes[0] + sizes[1] != d) return nullptr;
    const bool first = sp->outputs[0] == half;
    begin = first ? 0 : sizes[0];
    end = first ? sizes[0] : d;
    return sp;
}

// The [rows, cols] matrix `name` transposed into a new constant (same element type).
std::string transposed_constant(IrGraph &g, const std::string &name) {
    const ConstantData &c = g.constants.at(name);
    const int64_t rows = c.shape()[0], cols = c.shape()[1];
    const size_t es = onnx_type_size(c.type());
    std::shared_ptr<const std::string> src = c.bytes();
    std::string dst(src->size(), '\0');
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t col = 0; col < cols; ++col)
            std::memcpy(&dst[static_cast<size_t>(col * rows + r) * es], &(*src)[static_cast<size_t>(r * cols + col) * es], es);
    std::string out = g.fresh_name(name + "_t");
    g.constants.emplace(out, ConstantData::in_memory(c.type(), Shape{cols, rows}, std::move(dst)));
    return out;
}

} // namespace

bool fuse_geglu_ffn(IrGraph &g) {
    if (!match::engine_has("GegluFeedForward") || !match::all_typed(g)) return false;
    Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (m.removed(i)) continue;
        Node &gelu = g.nodes[i];
        if (!gelu.default_domain() || gelu.op_type != "Gelu" || gelu.inputs.size() != 1 || gelu.outputs.size() != 1)
            continue;
        const std::string gate = gelu.inputs[0];
        Node *mul = m.sole_consumer(gelu.outputs[0], "Mul");
        const std::string *hidden = mul ? Matcher::other_operand(*mul, gelu.outputs[0]) : nullptr;
        if (!hidden || !m.single_use(gate) || !m.single_use(*hidden)) continue;
        int64_t gb = 0, ge = 0, hb = 0, he = 0;
        std::string h1, h2;
        Node *gs = last_axis_part(m, gate, gb, ge, h1);
        Node *hs = gs ? last_axis_part(m, *hidden, hb, he, h2) : nullptr;
        if (!hs || h1 != h2) continue;
        Shape hshape;
        static_shape_of(g, h1, hshape);
        const int64_t d = hshape.back(), half = d / 2;
        // diffusers gates the second half: hidden = [0, H), gate = [H, 2H).
        if (d % 2 != 0 || hb != 0 || he != half || gb != half || ge != d) continue;
        // h is read by the two Slices (or the one Split) only.
        if (m.idx.use_count(h1) != (gs == hs ? 1u : 2u)) continue;
        Linear l1, l2;
        if (!linear_producing(m, h1, l1) || l1.n != d || !linear_reading(m, mul->outputs[0], l2) || l2.k != half)
            continue;
        Shape xs, ys;
        if (!static_shape_of(g, l1.x, xs) || xs.empty() || xs.back() != l1.k) continue;
        const std::string &y = l2.nodes.back()->outputs[0];
        if (!static_shape_of(g, y, ys) || ys.empty() || ys.back() != l2.n) continue;
        const int32_t type = elem_type_of(g, l1.x);
        if (!match::is_float(type) || elem_type_of(g, y) != type) continue;
        std::vector<Node *> chain = l1.nodes;
        chain.push_back(gs);
        if (hs != gs) chain.push_back(hs);
        chain.push_back(&gelu);
        chain.push_back(mul);
        for (Node *n : l2.nodes) chain.push_back(n);
        bool clash = false;
        for (Node *n : chain) clash |= m.removed(m.index_of(*n));
        if (clash) continue;

        Node ffn;
        Node *last = l2.nodes.back();
        ffn.name = last->name;
        ffn.op_type = "GegluFeedForward";
        ffn.inputs = {l1.x, l1.w_nk ? l1.w : transposed_constant(g, l1.w), l1.b,
                      l2.w_nk ? transposed_constant(g, l2.w) : l2.w, l2.b};
        ffn.outputs = {y};
        const std::string approximate = gelu.attr("approximate") ? gelu.attr("approximate")->s() : "none";
        if (approximate != "none") ffn.attrs.push_back(match::attr_string("approximate", approximate));
        while (!ffn.inputs.empty() && ffn.inputs.back().empty()) ffn.inputs.pop_back();
        for (Node *n : chain)
            if (n != last) m.remove(m.index_of(*n));
        *last = std::move(ffn);
    }
    return m.finish();
}

} // namespace onnxstream::importer
