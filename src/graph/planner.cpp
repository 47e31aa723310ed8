#include "graph/planner.h"

#include <algorithm>
#include <map>

#include "util/error.h"

namespace onnxstream {

bool fits_declared(const Shape &shape, const Shape &declared) {
    if (shape.size() != declared.size()) return false;
    for (size_t i = 0; i < shape.size(); ++i)
        if (shape[i] < 0 || (declared[i] != kAnyDim && shape[i] != declared[i])) return false;
    return true;
}

Plan make_plan(const Graph &graph, const std::vector<TensorInfo> &input_infos, const ConstantLoader &load_constant) {
    Plan plan;
    const auto &nodes = graph.nodes();
    plan.values.resize(graph.values().size());
    plan.node_outputs.resize(nodes.size());
    plan.free_after.resize(nodes.size());
    for (size_t i = 0; i < graph.inputs().size(); ++i)
        plan.values[static_cast<size_t>(graph.inputs()[i])] = input_infos.at(i);

    std::map<std::string, Tensor> constants; // small weights loaded for inference, dropped at the end
    std::map<int, Tensor> known_values;      // outputs whose value the planner knows (OpDef::plan_value)
    const Allocator plan_alloc;
    for (const Node &node : nodes) {
        if (node.guard >= 0) {
            const std::optional<TensorInfo> &known = plan.values[static_cast<size_t>(node.guard)];
            const TensorInfo g = known ? *known : TensorInfo{};
            if (!known || g.dtype != DType::Bool || shape_numel(g.shape) != 1)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": its ", kGuardAttribute, " '",
                     graph.values()[static_cast<size_t>(node.guard)].name, "' is ", dtype_name(g.dtype), " ",
                     shape_str(g.shape), "; a guard is one bool");
        }
        std::vector<std::optional<TensorInfo>> in_infos;
        for (const NodeInput &in : node.inputs) {
            if (in.kind == NodeInput::Value) in_infos.push_back(plan.values[static_cast<size_t>(in.value)]);
            else if (in.kind == NodeInput::Weight) in_infos.push_back(in.weight.info());
            else in_infos.push_back(std::nullopt);
        }
        std::vector<Shape> declared;
        for (int v : node.outputs) declared.push_back(graph.values()[static_cast<size_t>(v)].declared_shape);
        auto constant = [&](size_t i) -> const Tensor * {
            const NodeInput &in = node.inputs[i];
            if (in.kind == NodeInput::Value) {
                auto it = known_values.find(in.value);
                return it == known_values.end() ? nullptr : &it->second;
            }
            if (in.kind != NodeInput::Weight) return nullptr;
            auto it = constants.find(in.weight.file);
            if (it == constants.end()) {
                WeightSpec spec = in.weight;
                spec.wanted = Layout::Plain;
                it = constants.emplace(spec.file, load_constant(spec)).first;
            }
            return it->second.empty() ? nullptr : &it->second;
        };
        InferContext ctx(node.view(), std::move(in_infos), declared, constant);
        std::vector<TensorInfo> outs = node.def->infer(ctx);
        if (outs.size() != node.outputs.size())
            fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": produces ", outs.size(), " outputs but model.txt lists ",
                 node.outputs.size());
        for (size_t k = 0; k < outs.size(); ++k) {
            const Value &v = graph.values()[static_cast<size_t>(node.outputs[k])];
            if (!fits_declared(outs[k].shape, v.declared_shape))
                fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": output '", v.name, "' has shape ",
                     shape_str(outs[k].shape), " but model.txt declares ", shape_str(v.declared_shape));
            plan.values[static_cast<size_t>(node.outputs[k])] = outs[k];
        }
        if (node.def->plan_value && outs.size() == 1) known_values.emplace(node.outputs[0], node.def->plan_value(ctx, plan_alloc));
        plan.node_outputs[static_cast<size_t>(node.index)] = std::move(outs);
        for (const NodeInput &in : node.inputs)
            if (in.kind == NodeInput::Weight) plan.fetch_order.push_back(in.weight);
    }

    // A value dies after its last consumer unless it is a graph output. One nobody consumes that is not an
    // output (a result outputs.txt leaves out) dies right after the op that computes it.
    std::vector<bool> is_output(graph.values().size(), false);
    for (int v : graph.outputs()) is_output[static_cast<size_t>(v)] = true;
    for (size_t v = 0; v < graph.values().size(); ++v) {
        const Value &val = graph.values()[v];
        if (is_output[v] || (val.consumers.empty() && val.producer < 0)) continue;
        int last = val.consumers.empty() ? val.producer : *std::max_element(val.consumers.begin(), val.consumers.end());
        plan.free_after[static_cast<size_t>(last)].push_back(static_cast<int>(v));
    }
    return plan;
}

} // namespace onnxstream
