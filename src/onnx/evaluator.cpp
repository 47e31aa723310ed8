#include "onnx/evaluator.h"

#include <cstring>
#include <map>

#include "exec/executor.h"
#include "exec/threadpool.h"
#include "graph/graph.h"
#include "graph/planner.h"
#include "onnx/attr_text.h"
#include "ops/registry.h"
#include "util/checked.h"
#include "util/error.h"
#include "weights/prepare.h"
#include "weights/weight_files.h"
#include "xnnpack/init.h"

namespace onnxstream::importer {

namespace {

// Serves the folded node's inputs from memory, in the layout the op asks for.
class MemoryProvider : public WeightsProvider {
public:
    std::map<std::string, Tensor> tensors;
    Tensor fetch(const WeightSpec &spec, const Allocator &alloc) override {
        auto it = tensors.find(spec.file);
        if (it == tensors.end()) fail(ONNXSTREAM_ERR_INTERNAL, "constant folding: no tensor ", spec.file);
        return serve_layout(it->second, spec, alloc, nullptr);
    }
};

} // namespace

struct ConstantEvaluator::State {
    ThreadPool pool{1}; // folded tensors are small; leave the cores to the rest of the machine
    Allocator alloc;
};

ConstantEvaluator::ConstantEvaluator() : state_(std::make_unique<State>()) { init_kernels(); }
ConstantEvaluator::~ConstantEvaluator() = default;

ConstantEvaluator::Result ConstantEvaluator::evaluate(const Node &node, const std::vector<const ConstantData *> &inputs,
                                                      const std::string &model_dir, const FoldLimits &limits,
                                                      std::vector<ConstantData> &outputs) {
    if (!node.default_domain() || !Registry::builtin().find(node.op_type)) return Result::NoKernel;
    std::vector<AttributeText> attrs;
    try {
        attrs = attributes_text(node, model_dir);
    } catch (const Error &) {
        return Result::NoKernel; // the writer reports attributes model.txt cannot carry
    }

    ModelText text;
    OpLine line;
    line.line = 1;
    line.name = node.name.empty() ? node.op_type : node.name;
    line.type = node.op_type;
    line.attrs = std::move(attrs);
    line.has_attr_section = !line.attrs.empty();
    MemoryProvider provider;
    uint64_t in_bytes = 0;
    std::vector<std::optional<TensorInfo>> in_infos;
    for (size_t i = 0; i < inputs.size(); ++i) {
        TensorRef ref;
        if (!inputs[i]) {
            ref.present = false;
            line.inputs.push_back(ref);
            in_infos.push_back(std::nullopt);
            continue;
        }
        DType dtype;
        if (!dtype_of(inputs[i]->type(), dtype)) return Result::NoKernel;
        ref.is_weight = true;
        ref.name = cat("in", i, ".bin");
        ref.dtype = dtype;
        ref.shape = inputs[i]->shape();
        line.inputs.push_back(ref);
        Tensor t = make_tensor(state_->alloc, dtype, ref.shape);
        auto bytes = inputs[i]->bytes();
        if (!bytes->empty()) std::memcpy(t.raw(), bytes->data(), bytes->size());
        provider.tensors[ref.name] = t;
        in_infos.push_back(TensorInfo{dtype, ref.shape, {}});
        in_bytes += bytes->size();
    }
    for (size_t k = 0; k < node.outputs.size(); ++k) {
        TensorRef ref;
        ref.name = cat("out", k);
        line.outputs.push_back(ref);
    }
    text.ops.push_back(std::move(line));

    try {
        Graph graph(std::move(text), "constant folding");
        const onnxstream::Node &gn = graph.nodes()[0];
        std::vector<Shape> declared(gn.outputs.size());
        auto constant = [&](size_t i) -> const Tensor * {
            const NodeInput &in = gn.inputs[i];
            return in.kind == NodeInput::Weight ? &provider.tensors[in.weight.file] : nullptr;
        };
        InferContext ictx(gn.view(), in_infos, declared, constant);
        std::vector<TensorInfo> infos = gn.def->infer(ictx);
        if (infos.size() != gn.outputs.size())
            fail(ONNXSTREAM_ERR_INVALID_MODEL, "the op produces ", infos.size(), " outputs but the node lists ",
                 gn.outputs.size());
        uint64_t out_bytes = 0;
        for (const auto &info : infos)
            if (!checked::add(out_bytes, checked::bytes_or_fail(info.shape, dtype_size(info.dtype), gn.where), out_bytes))
                return Result::TooBig;
        if (out_bytes > limits.small_bytes && (out_bytes > limits.max_bytes || out_bytes > limits.growth * in_bytes))
            return Result::TooBig;

        Plan plan;
        plan.values.resize(graph.values().size());
        plan.node_outputs.push_back(infos);
        plan.free_after.resize(1);
        for (size_t k = 0; k < gn.outputs.size(); ++k) plan.values[static_cast<size_t>(gn.outputs[k])] = infos[k];
        for (const NodeInput &in : gn.inputs)
            if (in.kind == NodeInput::Weight) plan.fetch_order.push_back(in.weight);
        RunStats stats;
        const RunOptions options;
        std::vector<Tensor> results =
            Executor(graph, plan, provider, state_->alloc, state_->pool.get(), options).run({}, ProgressFn(), stats);
        outputs.clear();
        for (const Tensor &t : results) {
            std::string bytes(static_cast<const char *>(t.raw()), t.byte_size());
            outputs.push_back(ConstantData::in_memory(onnx_type_of(t.dtype()), t.shape(), std::move(bytes)));
        }
    } catch (const Error &e) {
        throw Error(e.status(), cat("while folding constant ", node.describe(), ": ", e.what()));
    }
    return Result::Folded;
}

} // namespace onnxstream::importer
