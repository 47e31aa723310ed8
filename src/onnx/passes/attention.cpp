// Exported attention is MatMul(Q, Kᵀ) -> [Mul/Div by a scalar] -> [Add mask] -> Softmax(last axis) ->
// MatMul(·, V): the [S, T] score matrix is written and read four times. ScaledDotProductAttention computes
// the same in one op (and can tile it so the scores never exist whole). Recognised extras:
// - a Transpose swapping the last two axes that only feeds the first MatMul is dropped (transpose_k=0);
// - a scalar Mul/Div applied to Q before the MatMul, through Reshape/Transpose/Squeeze/Unsqueeze (which a
//   scalar factor commutes with), folds into `scale` (CLIP scales q_proj's output);
// - the CLIP layout Reshape([B*H,S,T] -> [B,H,S,T]) -> Add(mask) -> Reshape(back): the mask is rewritten to
//   broadcast against [B*H, S, T] directly.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "onnx/passes/match.h"
#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

using match::Matcher;

// The softmax normalises along the last axis of a rank-`rank` input.
bool softmax_last_axis(const IrGraph &g, const Node &n, size_t rank) {
    // Before opset 13 the input is coerced to 2-D at `axis` (default 1): the same only when axis is last.
    int64_t axis = n.attr_int("axis", g.opset >= 13 ? -1 : 1);
    if (axis < 0) axis += static_cast<int64_t>(rank);
    return axis == static_cast<int64_t>(rank) - 1;
}

// `mask` broadcasts to `scores` without widening it.
bool broadcasts_into(const Shape &mask, const Shape &scores) {
    if (mask.size() > scores.size()) return false;
    const size_t offset = scores.size() - mask.size();
    for (size_t i = 0; i < mask.size(); ++i)
        if (mask[i] != 1 && mask[i] != scores[i + offset]) return false;
    return true;
}

bool same_batch(const Shape &a, const Shape &b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end() - 2, b.begin());
}

// Follow the Reshape/Transpose/Squeeze/Unsqueeze chain (single-use values) above Q to a scalar Mul/Div;
// returns that node (to be bypassed: its x input goes to first_in_chain, or is Q itself when the chain is
// empty) and its factor.
Node *q_prescale(Matcher &m, const std::string &q, double &factor, Node *&first_in_chain) {
    std::string v = q;
    first_in_chain = nullptr;
    for (int depth = 0; depth < 8; ++depth) {
        if (!m.single_use(v)) return nullptr;
        auto it = m.idx.producer.find(v);
        if (it == m.idx.producer.end() || m.removed(static_cast<size_t>(it->second))) return nullptr;
        Node &p = m.g.nodes[static_cast<size_t>(it->second)];
        if (!p.default_domain() || p.outputs.size() != 1) return nullptr;
        if (p.op_type == "Reshape" || p.op_type == "Transpose" || p.op_type == "Squeeze" ||
            p.op_type == "Unsqueeze") {
            first_in_chain = &p;
            v = p.inputs[0];
            continue;
        }
        if ((p.op_type != "Mul" && p.op_type != "Div") || p.inputs.size() != 2) return nullptr;
        const ValueType *in = m.float_type(p.inputs[0]), *out = m.float_type(p.outputs[0]);
        double k = 0;
        if (p.op_type == "Mul") {
            const ValueType *in1 = m.float_type(p.inputs[1]);
            if (m.scalar(p.inputs[1], k) && in && out && in->dims == out->dims) {
                factor = k;
                return &p;
            }
            if (m.scalar(p.inputs[0], k) && in1 && out && in1->dims == out->dims) {
                std::swap(p.inputs[0], p.inputs[1]); // x first: the caller bypasses with inputs[0]
                factor = k;
                return &p;
            }
            return nullptr;
        }
        if (m.scalar(p.inputs[1], k) && k != 0 && in && out && in->dims == out->dims) {
            factor = 1.0 / k;
            return &p;
        }
        return nullptr;
    }
    return nullptr;
}

// The mask of an attention score path: added to the scores, possibly inside CLIP's reshape sandwich.
struct MaskMatch {
    std::string mask;
    Shape shape;                   // the mask re-viewed for [B*H, S, T] scores (the sandwich only)
    Node *add = nullptr;
    Node *reshape_in = nullptr;    // Reshape([B*H,S,T] -> [B,H,S,T]) feeding the Add (the sandwich only)
    Node *reshape_out = nullptr;   // Reshape(back) after it
};

// Reshape(r2) <- Add(mask) <- Reshape(scores): the CLIP layout, when only the batch axis is split and the
// mask does not vary over the split axes (then it re-views as [.., 1, S', T']).
bool match_clip_mask(Matcher &m, const ValueType *st, Node *r2, MaskMatch &out) {
    Node *add = m.producer(r2->inputs[0], "Add");
    if (!add || !m.single_use(r2->inputs[0])) return false;
    for (size_t side = 0; side < 2; ++side) {
        Node *r1 = m.producer(add->inputs[side], "Reshape");
        const ValueType *r1t = r1 ? m.float_type(add->inputs[side]) : nullptr;
        const ValueType *r1in = r1 ? m.float_type(r1->inputs[0]) : nullptr;
        const ValueType *mt = m.float_type(add->inputs[1 - side]);
        if (!r1 || !r1t || !r1in || !mt || !m.single_use(add->inputs[side]) || st->dims.size() < 3 ||
            r1in->dims != st->dims || r1t->dims.size() != st->dims.size() + 1 || !broadcasts_into(mt->dims, r1t->dims))
            continue;
        // [B*H, S, T] viewed as [B, H, S, T]: only the batch axis is split.
        const Shape &w = r1t->dims;
        const size_t r = w.size();
        if (w[r - 1] != st->dims.back() || w[r - 2] != st->dims[st->dims.size() - 2] ||
            !std::equal(w.begin(), w.end() - 4, st->dims.begin()) || w[r - 4] * w[r - 3] != st->dims[st->dims.size() - 3])
            continue;
        Shape mdims(r - mt->dims.size(), 1);
        mdims.insert(mdims.end(), mt->dims.begin(), mt->dims.end());
        if (mdims[r - 4] != 1 || mdims[r - 3] != 1) continue;
        mdims.erase(mdims.begin() + static_cast<std::ptrdiff_t>(r - 4));
        out.mask = add->inputs[1 - side];
        out.shape = mdims;
        out.reshape_in = r1;
        out.reshape_out = r2;
        out.add = add;
        return true;
    }
    return false;
}

// Add(scores, mask) with the mask broadcasting into the scores, the scores coming from the product (or
// its scaling).
bool match_plain_mask(Matcher &m, const ValueType *st, Node *add, std::string &s, MaskMatch &out) {
    for (size_t side = 0; side < 2; ++side) {
        const std::string &cand = add->inputs[side];
        const ValueType *mt = m.float_type(add->inputs[1 - side]), *ct = m.float_type(cand);
        if (!mt || !ct || ct->dims != st->dims || !broadcasts_into(mt->dims, st->dims)) continue;
        auto p = m.idx.producer.find(cand);
        if (p == m.idx.producer.end()) continue;
        const Node &pn = m.g.nodes[static_cast<size_t>(p->second)];
        if (pn.op_type != "MatMul" && pn.op_type != "Mul" && pn.op_type != "Div") continue;
        out.mask = add->inputs[1 - side];
        out.add = add;
        s = cand;
        return true;
    }
    return false;
}

// Walks up from scores value `s` over [Add mask] (plain or CLIP sandwich); false when the path is not one
// this pass knows. `s` ends at the value the mask was added to.
bool walk_mask(Matcher &m, const ValueType *st, std::string &s, MaskMatch &mask, std::vector<Node *> &chain) {
    if (Node *r2 = m.producer(s, "Reshape")) {
        if (!match_clip_mask(m, st, r2, mask)) return false; // some other reshape: not a score path we know
        s = mask.reshape_in->inputs[0];
        chain.insert(chain.end(), {mask.reshape_out, mask.add, mask.reshape_in});
        return m.single_use(s);
    }
    if (Node *add = m.producer(s, "Add")) {
        if (!match_plain_mask(m, st, add, s, mask)) return false;
        chain.push_back(mask.add);
        return m.single_use(s);
    }
    return true;
}

// Walks up from `s` over [Mul/Div by a scalar] into `scale`; false when a Mul/Div there is not one.
bool walk_scale(Matcher &m, size_t rank, std::string &s, double &scale, std::vector<Node *> &chain) {
    double k = 0;
    if (Node *mul = m.producer(s, "Mul")) {
        const std::string *x = nullptr;
        if (m.scalar(mul->inputs[1], k, rank)) x = &mul->inputs[0];
        else if (m.scalar(mul->inputs[0], k, rank)) x = &mul->inputs[1];
        if (!x) return false;
        scale = k;
        s = *x;
        chain.push_back(mul);
    } else if (Node *div = m.producer(s, "Div")) {
        if (!m.scalar(div->inputs[1], k, rank) || k == 0) return false;
        scale = 1.0 / k;
        s = div->inputs[0];
        chain.push_back(div);
    }
    return true;
}

// K given as Transpose(K', swapping the last two axes) and used only there: take K' (transpose_k = 0).
int64_t fold_k_transpose(Matcher &m, const ValueType *kt, std::string &k, std::vector<Node *> &chain) {
    Node *kt_node = m.producer(k, "Transpose");
    if (!kt_node || !m.single_use(k)) return 1;
    std::vector<int64_t> perm = kt_node->attr_ints("perm");
    const size_t r = kt->dims.size();
    bool swap_last = perm.size() == r;
    for (size_t a = 0; swap_last && a < r; ++a)
        swap_last = perm[a] == static_cast<int64_t>(a < r - 2 ? a : (a == r - 2 ? r - 1 : r - 2));
    if (!swap_last) return 1;
    k = kt_node->inputs[0];
    chain.push_back(kt_node);
    return 0;
}

// The mask input of the fused op: the mask itself, or (CLIP sandwich) a Reshape of it to [.., S', T'] that
// takes the place of the score reshape it replaces (dropped from `chain`).
std::string mask_input(IrGraph &g, Matcher &m, const std::string &sm_name, MaskMatch &mask, std::vector<Node *> &chain) {
    if (!mask.reshape_in) return mask.mask;
    const std::string shape_name = g.fresh_name(mask.mask + "_sdpa_shape");
    std::string bytes(mask.shape.size() * 8, '\0');
    std::memcpy(bytes.data(), mask.shape.data(), bytes.size());
    g.constants[shape_name] =
        ConstantData::in_memory(kOnnxInt64, {static_cast<int64_t>(mask.shape.size())}, std::move(bytes));
    Node rs;
    rs.name = g.fresh_name(sm_name + "_mask_reshape");
    rs.op_type = "Reshape";
    rs.inputs = {mask.mask, shape_name};
    rs.outputs = {g.fresh_name(mask.mask + "_sdpa")};
    ValueType mtype = *m.float_type(mask.mask);
    mtype.dims = mask.shape;
    mtype.dim_params.assign(mask.shape.size(), std::string());
    g.types[rs.outputs[0]] = mtype;
    const std::string out = rs.outputs[0];
    *mask.reshape_in = std::move(rs);
    chain.erase(std::find(chain.begin(), chain.end(), mask.reshape_in));
    return out;
}

} // namespace

bool fuse_attention(IrGraph &g) {
    if (!match::engine_has("ScaledDotProductAttention") || !match::all_typed(g)) return false;
    Matcher m(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        if (m.removed(i)) continue;
        Node &sm = g.nodes[i];
        if (!sm.default_domain() || sm.op_type != "Softmax" || sm.inputs.size() != 1 || sm.outputs.size() != 1)
            continue;
        const ValueType *st = m.float_type(sm.inputs[0]);
        if (!st || st->dims.size() < 2 || !softmax_last_axis(g, sm, st->dims.size())) continue;
        Node *mm2 = m.sole_consumer(sm.outputs[0], "MatMul");
        if (!mm2 || mm2->inputs.size() != 2 || mm2->inputs[0] != sm.outputs[0] || mm2->inputs[1] == sm.outputs[0])
            continue;
        const std::string v = mm2->inputs[1];
        const ValueType *vt = m.float_type(v);
        if (!vt || vt->dims.size() != st->dims.size() || !same_batch(vt->dims, st->dims) ||
            vt->dims[vt->dims.size() - 2] != st->dims.back())
            continue;

        std::vector<Node *> chain{&sm, mm2};
        std::string s = sm.inputs[0]; // walking up from the softmax input
        MaskMatch mask;
        double scale = 1.0;
        if (!m.single_use(s) || !walk_mask(m, st, s, mask, chain) || !walk_scale(m, st->dims.size(), s, scale, chain))
            continue;

        Node *mm1 = m.producer(s, "MatMul");
        if (!mm1 || mm1->inputs.size() != 2 || !m.single_use(s)) continue;
        const ValueType *qt = m.float_type(mm1->inputs[0]), *kt = m.float_type(mm1->inputs[1]), *s0 = m.float_type(s);
        if (!qt || !kt || !s0 || s0->dims != st->dims || qt->dims.size() != st->dims.size() ||
            !same_batch(qt->dims, st->dims) || !same_batch(kt->dims, st->dims) || kt->dims.back() != st->dims.back())
            continue;
        chain.push_back(mm1);
        std::string q = mm1->inputs[0], k = mm1->inputs[1];
        const int64_t transpose_k = fold_k_transpose(m, kt, k, chain);

        // Node bookkeeping from here on cannot fail.
        Node *first = nullptr;
        double qfactor = 1.0;
        if (Node *pre = q_prescale(m, q, qfactor, first)) {
            (first ? first->inputs[0] : q) = pre->inputs[0];
            scale *= qfactor;
            m.remove(m.index_of(*pre));
        }
        Node sdpa;
        sdpa.name = sm.name;
        sdpa.op_type = "ScaledDotProductAttention";
        sdpa.inputs = {q, k, v};
        if (!mask.mask.empty()) sdpa.inputs.push_back(mask_input(g, m, sm.name, mask, chain));
        sdpa.outputs = {mm2->outputs[0]};
        sdpa.attrs = {match::attr_float("scale", static_cast<float>(scale)), int_attr("transpose_k", transpose_k)};
        for (Node *p : chain)
            if (p != mm2) m.remove(m.index_of(*p));
        *mm2 = std::move(sdpa);
    }
    return m.finish();
}

} // namespace onnxstream::importer
