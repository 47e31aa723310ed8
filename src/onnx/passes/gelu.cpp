// GELU reaches ONNX (before opset 20) as its formula: x * 0.5 * (1 + Erf(x / sqrt(2))), or with
// approximate="tanh" x * 0.5 * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), five to nine elementwise
// ops each reading and writing the whole activation. The engine's Gelu is one pass. The products are
// matched in every association exporters use ((x * a) * 0.5, (x * 0.5) * a, x * (a * 0.5)); constants must
// be one-element tensors of rank at most x's, so no broadcast changes the output shape.
#include <cmath>

#include "onnx/passes/match.h"
#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

using match::Matcher;

struct Tail {
    std::vector<Node *> nodes; // matched nodes, the last one produces the result
};

// Given a = 1 + f(x) (the Add node), find 0.5 * x * a.
bool match_tail(Matcher &m, Node &one_plus, const std::string &x, size_t rank, Tail &t) {
    const std::string a = one_plus.outputs[0];
    Node *m1 = m.sole_consumer(a, "Mul");
    if (!m1) return false;
    const std::string *o1 = Matcher::other_operand(*m1, a);
    if (!o1) return false;
    double half = 0;
    if (*o1 == x) { // (x * a) * 0.5
        Node *m2 = m.sole_consumer(m1->outputs[0], "Mul");
        const std::string *o2 = m2 ? Matcher::other_operand(*m2, m1->outputs[0]) : nullptr;
        if (!o2 || !m.scalar(*o2, half, rank) || half != 0.5) return false;
        t.nodes = {m1, m2};
        return true;
    }
    if (m.scalar(*o1, half, rank)) { // (a * 0.5) * x
        if (half != 0.5) return false;
        Node *m2 = m.sole_consumer(m1->outputs[0], "Mul");
        const std::string *o2 = m2 ? Matcher::other_operand(*m2, m1->outputs[0]) : nullptr;
        if (!o2 || *o2 != x) return false;
        t.nodes = {m1, m2};
        return true;
    }
    Node *h = m.producer(*o1, "Mul"); // (x * 0.5) * a
    if (!h || !m.single_use(*o1)) return false;
    const std::string *o2 = Matcher::other_operand(*h, x);
    if (!o2 || !m.scalar(*o2, half, rank) || half != 0.5) return false;
    t.nodes = {h, m1};
    return true;
}

// `value` = Add(1, `from`) in either order.
Node *one_plus(Matcher &m, const std::string &from, size_t rank) {
    Node *add = m.sole_consumer(from, "Add");
    if (!add) return nullptr;
    const std::string *o = Matcher::other_operand(*add, from);
    double one = 0;
    return o && m.scalar(*o, one, rank) && one == 1.0 ? add : nullptr;
}

// `value` = x * c (either order) or x / (1 / c); returns the multiplying node and x.
Node *scaled(Matcher &m, const std::string &value, double c, size_t max_rank, std::string &x) {
    for (const char *op : {"Mul", "Div"}) {
        Node *n = m.producer(value, op);
        if (!n || n->inputs.size() != 2) continue;
        double k = 0;
        for (size_t s = 0; s < 2; ++s) {
            if (op[0] == 'D' && s == 0) continue; // only x / k
            const std::string &kname = n->inputs[s];
            if (!m.scalar(kname, k, max_rank)) continue;
            double eff = op[0] == 'D' ? 1.0 / k : k;
            if (!match::close_to(eff, c, match::tolerance(m.g, kname))) continue;
            x = n->inputs[1 - s];
            return n;
        }
    }
    return nullptr;
}

// x^3 as Pow(x, 3), Mul(x, Mul(x, x)) or Mul(Mul(x, x), x); appends the nodes.
bool cube(Matcher &m, const std::string &value, const std::string &x, std::vector<Node *> &nodes) {
    double e = 0;
    if (Node *p = m.producer(value, "Pow")) {
        if (p->inputs.size() != 2 || p->inputs[0] != x || !m.scalar(p->inputs[1], e, 0) || e != 3.0)
            return false;
        nodes.push_back(p);
        return true;
    }
    Node *outer = m.producer(value, "Mul");
    if (!outer || outer->inputs.size() != 2) return false;
    const std::string *sq = Matcher::other_operand(*outer, x);
    if (!sq) return false;
    Node *inner = m.producer(*sq, "Mul");
    if (!inner || !m.single_use(*sq) || inner->inputs.size() != 2 || inner->inputs[0] != x ||
        inner->inputs[1] != x)
        return false;
    nodes.push_back(inner);
    nodes.push_back(outer);
    return true;
}

bool replace(Matcher &m, std::vector<Node *> chain, const std::string &x, bool tanh) {
    Node *last = chain.back();
    for (Node *p : chain)
        if (p != last && m.removed(m.index_of(*p))) return false;
    Node gelu;
    gelu.name = last->name;
    gelu.op_type = "Gelu";
    gelu.inputs = {x};
    gelu.outputs = {last->outputs[0]};
    if (tanh) gelu.attrs.push_back(match::attr_string("approximate", "tanh"));
    for (Node *p : chain)
        if (p != last) m.remove(m.index_of(*p));
    *last = std::move(gelu);
    return true;
}

} // namespace

bool fuse_gelu(IrGraph &g) {
    if (!match::engine_has("Gelu") || !match::all_typed(g)) return false;
    Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (m.removed(i)) continue;
        Node &f = g.nodes[i];
        if (!f.default_domain() || f.inputs.size() != 1 || f.outputs.size() != 1) continue;
        const bool is_erf = f.op_type == "Erf", is_tanh = f.op_type == "Tanh";
        if (!is_erf && !is_tanh) continue;
        if (!m.single_use(f.inputs[0])) continue;
        std::vector<Node *> chain;
        std::string x;
        const ValueType *ft = m.float_type(f.inputs[0]);
        if (!ft) continue;
        const size_t rank = ft->dims.size();
        if (is_erf) {
            Node *div = scaled(m, f.inputs[0], 1.0 / std::sqrt(2.0), rank, x);
            if (!div) continue;
            chain.push_back(div);
        } else {
            // Tanh(k * (x + 0.044715 * x^3)), k = sqrt(2/pi)
            std::string inner;
            Node *mk = scaled(m, f.inputs[0], 0.7978845608028654 /* sqrt(2 / pi) */, rank, inner);
            if (!mk) continue;
            Node *add = m.producer(inner, "Add");
            if (!add || !m.single_use(inner) || add->inputs.size() != 2) continue;
            bool found = false;
            for (size_t s = 0; s < 2 && !found; ++s) {
                std::vector<Node *> nodes;
                std::string cx;
                const std::string &cand_x = add->inputs[s], &cubic = add->inputs[1 - s];
                if (!m.single_use(cubic)) continue;
                Node *mc = scaled(m, cubic, 0.044715, rank, cx);
                if (!mc || !m.single_use(cx) || !cube(m, cx, cand_x, nodes)) continue;
                chain = nodes;
                chain.push_back(mc);
                chain.push_back(add);
                chain.push_back(mk);
                x = cand_x;
                found = true;
            }
            if (!found) continue;
        }
        const ValueType *xt = m.float_type(x);
        if (!xt || xt->dims.size() != rank || xt->dims != ft->dims) continue;
        chain.push_back(&f);
        Node *a = one_plus(m, f.outputs[0], rank);
        if (!a) continue;
        chain.push_back(a);
        Tail t;
        if (!match_tail(m, *a, x, rank, t)) continue;
        for (Node *n : t.nodes) chain.push_back(n);
        const ValueType *yt = m.float_type(chain.back()->outputs[0]);
        if (!yt || yt->dims != xt->dims) continue;
        replace(m, chain, x, is_tanh);
    }
    return m.finish();
}

} // namespace onnxstream::importer
