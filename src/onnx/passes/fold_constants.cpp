// Constant folding: what can be computed before any input arrives becomes a weight. Exporters emit long
// shape-computing chains (Shape -> Gather -> Unsqueeze -> Concat -> Reshape); once shapes are static
// those chains are constants, and the engine's own kernels evaluate them.
#include <cstring>
#include <unordered_set>

#include "onnx/passes/passes.h"
#include "util/error.h"

namespace onnxstream::importer {

namespace {

ConstantData int64_constant(const std::vector<int64_t> &values, Shape shape) {
    std::string bytes(values.size() * sizeof(int64_t), '\0');
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return ConstantData::in_memory(kOnnxInt64, std::move(shape), std::move(bytes));
}

template <typename T> ConstantData scalar_list(int32_t type, const T &field, bool scalar) {
    std::string bytes;
    for (auto v : field) {
        auto value = v;
        bytes.append(reinterpret_cast<const char *>(&value), sizeof(value));
    }
    Shape shape;
    if (!scalar) shape.push_back(static_cast<int64_t>(field.size()));
    return ConstantData::in_memory(type, std::move(shape), std::move(bytes));
}

// The value of a Constant node.
ConstantData constant_node_value(const Node &n, const std::string &model_dir) {
    for (const auto &a : n.attrs) {
        const std::string &key = a.name();
        if (key == "value") {
            onnx::TensorProto t = a.t();
            return constant_from_proto(t, model_dir, n.describe());
        }
        if (key == "value_float") return scalar_list(kOnnxFloat, std::vector<float>{a.f()}, true);
        if (key == "value_floats")
            return scalar_list(kOnnxFloat, std::vector<float>(a.floats().begin(), a.floats().end()), false);
        if (key == "value_int") return scalar_list(kOnnxInt64, std::vector<int64_t>{a.i()}, true);
        if (key == "value_ints")
            return scalar_list(kOnnxInt64, std::vector<int64_t>(a.ints().begin(), a.ints().end()), false);
        if (key == "value_string") return ConstantData::in_memory(kOnnxString, {}, std::string());
        if (key == "value_strings") return ConstantData::in_memory(kOnnxString, {a.strings_size()}, std::string());
        if (key == "sparse_value")
            fail(ONNXSTREAM_ERR_UNSUPPORTED, n.describe(), ": sparse constants are not supported");
    }
    fail(ONNXSTREAM_ERR_INVALID_MODEL, n.describe(), ": Constant without a value attribute");
}

// Shape (with opset-15 start/end) and Size only need their input's static shape.
bool fold_shape_query(const IrGraph &g, const Node &n, ConstantData &out) {
    if (n.inputs.empty() || n.inputs[0].empty()) return false;
    Shape shape;
    if (const ConstantData *c = g.is_constant(n.inputs[0]) ? &g.constants.at(n.inputs[0]) : nullptr) {
        shape = c->shape();
    } else {
        const ValueType *t = g.type_of(n.inputs[0]);
        if (!t || !t->is_static()) return false;
        shape = t->dims;
    }
    if (n.op_type == "Size") {
        out = int64_constant({shape_numel(shape)}, {});
        return true;
    }
    const int64_t rank = static_cast<int64_t>(shape.size());
    auto clamp = [rank](int64_t v) {
        if (v < 0) v += rank;
        return std::min(std::max<int64_t>(v, 0), rank);
    };
    int64_t start = clamp(n.attr_int("start", 0));
    int64_t end = clamp(n.attr_int("end", rank));
    std::vector<int64_t> dims;
    for (int64_t i = start; i < end; ++i) dims.push_back(shape[static_cast<size_t>(i)]);
    out = int64_constant(dims, {static_cast<int64_t>(dims.size())});
    return true;
}

bool is_random(const std::string &op) {
    return op == "RandomNormal" || op == "RandomUniform" || op == "RandomNormalLike" || op == "RandomUniformLike" ||
           op == "Multinomial" || op == "Bernoulli";
}

} // namespace

bool fold_constants(IrGraph &g, ConstantEvaluator &evaluator, const FoldLimits &limits,
                    const std::shared_ptr<SpillFile> &spill) {
    std::unordered_set<std::string> graph_outputs(g.outputs.begin(), g.outputs.end());
    bool changed = false;
    std::vector<Node> kept;
    kept.reserve(g.nodes.size());
    for (Node &n : g.nodes) {
        bool feeds_output = false;
        for (const auto &out : n.outputs) feeds_output |= graph_outputs.count(out) != 0;
        std::vector<ConstantData> results;
        bool folded = false;
        if (n.default_domain() && n.op_type == "Constant") {
            results.push_back(constant_node_value(n, g.model_dir));
            folded = true;
        } else if (!feeds_output && n.default_domain() && (n.op_type == "Shape" || n.op_type == "Size")) {
            results.resize(1);
            folded = fold_shape_query(g, n, results[0]);
        } else if (!feeds_output && n.default_domain() && !is_random(n.op_type) && !n.inputs.empty()) {
            std::vector<const ConstantData *> inputs;
            bool all_constant = true;
            for (const auto &in : n.inputs) {
                if (in.empty()) {
                    inputs.push_back(nullptr);
                    continue;
                }
                auto it = g.constants.find(in);
                if (it == g.constants.end() || it->second.type() == kOnnxString) {
                    all_constant = false;
                    break;
                }
                inputs.push_back(&it->second);
            }
            if (all_constant)
                folded =
                    evaluator.evaluate(n, inputs, g.model_dir, limits, results) == ConstantEvaluator::Result::Folded;
        }
        if (!folded) {
            kept.push_back(std::move(n));
            continue;
        }
        for (size_t k = 0; k < n.outputs.size() && k < results.size(); ++k) {
            if (n.outputs[k].empty()) continue;
            g.types.erase(n.outputs[k]);
            if (spill && !results[k].is_external() && results[k].byte_size() > limits.small_bytes)
                results[k] = ConstantData::spilled(results[k], spill);
            g.constants[n.outputs[k]] = std::move(results[k]);
        }
        changed = true;
    }
    g.nodes = std::move(kept);
    return changed;
}

} // namespace onnxstream::importer
