// BatchNormalization in inference mode is a per-channel affine map, y = x * s + (B - mean * s) with
// s = scale / sqrt(var + eps); after a Conv it folds into the Conv's weight (rows scaled by s) and bias,
// saving a full pass over the activation.
#include <cmath>
#include <cstring>

#include "onnx/passes/passes.h"
#include "tensor/half.h"

namespace onnxstream::importer {

namespace {

bool float_constant(const IrGraph &g, const std::string &name, const ConstantData *&out) {
    auto it = g.constants.find(name);
    if (it == g.constants.end()) return false;
    int32_t t = it->second.type();
    if (t != kOnnxFloat && t != kOnnxFloat16) return false;
    out = &it->second;
    return true;
}

ConstantData make_float_constant(int32_t type, Shape shape, const std::vector<double> &values) {
    std::string bytes(values.size() * onnx_type_size(type), '\0');
    for (size_t i = 0; i < values.size(); ++i) {
        if (type == kOnnxFloat) {
            float f = static_cast<float>(values[i]);
            std::memcpy(bytes.data() + i * 4, &f, 4);
        } else {
            uint16_t h = float_to_half(static_cast<float>(values[i]));
            std::memcpy(bytes.data() + i * 2, &h, 2);
        }
    }
    return ConstantData::in_memory(type, std::move(shape), std::move(bytes));
}

} // namespace

bool fuse_batchnorm_into_conv(IrGraph &g) {
    GraphIndex idx(g);
    std::vector<bool> removed(g.nodes.size(), false);
    bool changed = false;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node &bn = g.nodes[i];
        if (!bn.default_domain() || bn.op_type != "BatchNormalization" || bn.inputs.size() != 5) continue;
        if (bn.attr_int("training_mode", 0) != 0 || bn.outputs.empty() || bn.outputs[0].empty()) continue;
        bool stats_used = false;
        for (size_t k = 1; k < bn.outputs.size(); ++k)
            stats_used |= !bn.outputs[k].empty() && idx.is_used(bn.outputs[k]);
        if (stats_used) continue;
        auto p = idx.producer.find(bn.inputs[0]);
        if (p == idx.producer.end() || removed[static_cast<size_t>(p->second)]) continue;
        Node &conv = g.nodes[static_cast<size_t>(p->second)];
        if (!conv.default_domain() || conv.op_type != "Conv" || conv.inputs.size() < 2 || conv.outputs.size() != 1)
            continue;
        if (idx.use_count(bn.inputs[0]) != 1) continue; // something else reads the un-normalised output
        const ConstantData *w = nullptr, *b = nullptr, *scale = nullptr, *shift = nullptr, *mean = nullptr,
                           *var = nullptr;
        if (!float_constant(g, conv.inputs[1], w) || w->shape().size() < 3) continue;
        bool has_bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
        if (has_bias && !float_constant(g, conv.inputs[2], b)) continue;
        if (!float_constant(g, bn.inputs[1], scale) || !float_constant(g, bn.inputs[2], shift) ||
            !float_constant(g, bn.inputs[3], mean) || !float_constant(g, bn.inputs[4], var))
            continue;
        const int64_t channels = w->shape()[0];
        bool shapes_ok = (!b || b->numel() == channels);
        for (const ConstantData *c : {scale, shift, mean, var}) shapes_ok = shapes_ok && c->numel() == channels;
        if (!shapes_ok || channels == 0) continue;

        const double eps = bn.attr_float("epsilon", 1e-5f);
        std::vector<float> sc = scale->float_values(), sh = shift->float_values(), mu = mean->float_values(),
                           va = var->float_values();
        std::vector<float> wv = w->float_values();
        std::vector<float> bv = b ? b->float_values() : std::vector<float>(static_cast<size_t>(channels), 0.0f);
        const size_t per_channel = wv.size() / static_cast<size_t>(channels);
        std::vector<double> new_w(wv.size()), new_b(static_cast<size_t>(channels));
        for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
            double s = sc[c] / std::sqrt(static_cast<double>(va[c]) + eps);
            for (size_t j = 0; j < per_channel; ++j) new_w[c * per_channel + j] = wv[c * per_channel + j] * s;
            new_b[c] = (bv[c] - static_cast<double>(mu[c])) * s + sh[c];
        }

        // Keep the original names when nothing else reads them, so the weight files stay recognisable.
        std::string w_name = idx.use_count(conv.inputs[1]) == 1 ? conv.inputs[1] : g.fresh_name(conv.inputs[1] + "_bn");
        std::string b_name;
        if (has_bias && idx.use_count(conv.inputs[2]) == 1)
            b_name = conv.inputs[2];
        else if (idx.use_count(bn.inputs[2]) == 1)
            b_name = bn.inputs[2];
        else
            b_name = g.fresh_name(conv.inputs[1] + "_bn_bias");
        g.constants[w_name] = make_float_constant(w->type(), w->shape(), new_w);
        g.constants[b_name] = make_float_constant(w->type(), {channels}, new_b);
        conv.inputs.resize(3);
        conv.inputs[1] = w_name;
        conv.inputs[2] = b_name;
        conv.outputs[0] = bn.outputs[0];
        removed[i] = true;
        changed = true;
    }
    if (!changed) return false;
    drop_nodes(g, removed);
    return true;
}

} // namespace onnxstream::importer
