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
        if (!mm2 || mm2->inputs.size() != 2 || mm2->inputs[0] != sm.outputs[0] ||
            mm2->inputs[1] == sm.outputs[0])
            continue;
        const std::string v = mm2->inputs[1];
        const ValueType *vt = m.float_type(v);
        if (!vt || vt->dims.size() != st->dims.size() || !same_batch(vt->dims, st->dims) ||
            vt->dims[vt->dims.size() - 2] != st->dims.back())
            continue;

        std::vector<Node *> chain{&sm, mm2};
        std::string s = sm.inputs[0]; // walking up from the softmax input
        if (!m.single_use(s)) continue;

        // [Add mask], possibly inside the CLIP reshape sandwich.
        std::string mask;
        Shape mask_shape;
        Node *mask_reshape_out = nullptr, *mask_reshape_in = nullptr, *mask_add = nullptr;
        if (Node *r2 = m.producer(s, "Reshape")) {
            Node *add = m.producer(r2->inputs[0], "Add");
            if (add && m.single_use(r2->inputs[0])) {
                for (size_t side = 0; side < 2 && !mask_add; ++side) {
                    Node *r1 = m.producer(add->inputs[side], "Reshape");
                    const ValueType *r1t = r1 ? m.float_type(add->inputs[side]) : nullptr;
                    const ValueType *r1in = r1 ? m.float_type(r1->inputs[0]) : nullptr;
                    const ValueType *mt = m.float_type(add->inputs[1 - side]);
                    if (!r1 || !r1t || !r1in || !mt || !m.single_use(add->inputs[side]) ||
                        st->dims.size() < 3 || r1in->dims != st->dims ||
                        r1t->dims.size() != st->dims.size() + 1 || !broadcasts_into(mt->dims, r1t->dims))
                        continue;
                    // [B*H, S, T] viewed as [B, H, S, T]: only the batch axis is split.
                    const Shape &w = r1t->dims;
                    const size_t r = w.size();
                    if (w[r - 1] != st->dims.back() || w[r - 2] != st->dims[st->dims.size() - 2] ||
                        !std::equal(w.begin(), w.end() - 4, st->dims.begin()) ||
                        w[r - 4] * w[r - 3] != st->dims[st->dims.size() - 3])
                        continue;
                    // The mask must not vary over the split axes: then it re-views as [.., 1, S', T'].
                    Shape mdims(r - mt->dims.size(), 1);
                    mdims.insert(mdims.end(), mt->dims.begin(), mt->dims.end());
                    if (mdims[r - 4] != 1 || mdims[r - 3] != 1) continue;
                    Shape m3(mdims.begin(), mdims.end());
                    m3.erase(m3.begin() + static_cast<std::ptrdiff_t>(r - 4));
                    mask = add->inputs[1 - side];
                    mask_shape = m3;
                    mask_reshape_in = r1;
                    mask_reshape_out = r2;
                    mask_add = add;
                }
            }
            if (!mask_add) continue; // some other reshape: not an attention score path we know
            s = mask_reshape_in->inputs[0];
            chain.push_back(mask_reshape_out);
            chain.push_back(mask_add);
            chain.push_back(mask_reshape_in);
            if (!m.single_use(s)) continue;
        } else if (Node *add = m.producer(s, "Add")) {
            for (size_t side = 0; side < 2 && !mask_add; ++side) {
                const std::string &cand = add->inputs[side];
                const ValueType *mt = m.float_type(add->inputs[1 - side]), *ct = m.float_type(cand);
                if (!mt || !ct || ct->dims != st->dims || !broadcasts_into(mt->dims, st->dims)) continue;
                auto p = m.idx.producer.find(cand);
                if (p == m.idx.producer.end()) continue;
                const Node &pn = g.nodes[static_cast<size_t>(p->second)];
                if (pn.op_type != "MatMul" && pn.op_type != "Mul" && pn.op_type != "Div") continue;
                mask = add->inputs[1 - side];
                mask_add = add;
                s = cand;
            }
            if (!mask_add) continue;
            chain.push_back(mask_add);
            if (!m.single_use(s)) continue;
        }

        // [Mul/Div by a scalar]
        double scale = 1.0;
        if (Node *mul = m.producer(s, "Mul")) {
            double k = 0;
            const std::string *x = nullptr;
            if (m.scalar(mul->inputs[1], k, st->dims.size())) x = &mul->inputs[0];
            else if (m.scalar(mul->inputs[0], k, st->dims.size())) x = &mul->inputs[1];
            if (!x) continue;
            scale = k;
            s = *x;
            chain.push_back(mul);
        } else if (Node *div = m.producer(s, "Div")) {
            double k = 0;
            if (!m.scalar(div->inputs[1], k, st->dims.size()) || k == 0) continue;
            scale = 1.0 / k;
            s = div->inputs[0];
            chain.push_back(div);
        }

        Node *mm1 = m.producer(s, "MatMul");
        if (!mm1 || mm1->inputs.size() != 2 || !m.single_use(s)) continue;
        const ValueType *qt = m.float_type(mm1->inputs[0]), *kt = m.float_type(mm1->inputs[1]),
                        *s0 = m.float_type(s);
        if (!qt || !kt || !s0 || s0->dims != st->dims || qt->dims.size() != st->dims.size() ||
            !same_batch(qt->dims, st->dims) || !same_batch(kt->dims, st->dims) ||
            kt->dims.back() != st->dims.back())
            continue;
        chain.push_back(mm1);

        std::string q = mm1->inputs[0], k = mm1->inputs[1];
        int64_t transpose_k = 1;
        Node *kt_node = m.producer(k, "Transpose");
        if (kt_node && m.single_use(k)) {
            std::vector<int64_t> perm = kt_node->attr_ints("perm");
            const size_t r = kt->dims.size();
            bool swap_last = perm.size() == r;
            for (size_t a = 0; swap_last && a < r; ++a)
                swap_last = perm[a] == static_cast<int64_t>(a < r - 2 ? a : (a == r - 2 ? r - 1 : r - 2));
            if (swap_last) {
                k = kt_node->inputs[0];
                transpose_k = 0;
                chain.push_back(kt_node);
            }
        }

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
        if (!mask.empty()) {
            if (mask_reshape_in) {
                // Re-view the mask for the [B*H, S, T] scores (its split axes are 1).
                const std::string shape_name = g.fresh_name(mask + "_sdpa_shape");
                std::string bytes(mask_shape.size() * 8, '\0');
                std::memcpy(bytes.data(), mask_shape.data(), bytes.size());
                g.constants[shape_name] = ConstantData::in_memory(
                    kOnnxInt64, {static_cast<int64_t>(mask_shape.size())}, std::move(bytes));
                Node rs;
                rs.name = g.fresh_name(sm.name + "_mask_reshape");
                rs.op_type = "Reshape";
                rs.inputs = {mask, shape_name};
                rs.outputs = {g.fresh_name(mask + "_sdpa")};
                ValueType mtype = *m.float_type(mask);
                mtype.dims = mask_shape;
                mtype.dim_params.assign(mask_shape.size(), std::string());
                g.types[rs.outputs[0]] = mtype;
                sdpa.inputs.push_back(rs.outputs[0]);
                // The mask reshape takes the place of the score reshape it replaces.
                *mask_reshape_in = std::move(rs);
                chain.erase(std::find(chain.begin(), chain.end(), mask_reshape_in));
            } else {
                sdpa.inputs.push_back(mask);
            }
        }
        sdpa.outputs = {mm2->outputs[0]};
        sdpa.attrs = {match::attr_float("scale", static_cast<float>(scale)),
                      int_attr("transpose_k", transpose_k)};
        for (Node *p : chain)
            if (p != mm2) m.remove(m.index_of(*p));
        *mm2 = std::move(sdpa);
    }
    return m.finish();
}

} // namespace onnxstream::importer
