#include "exec/executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "ops/layout.h"
#include "util/error.h"

namespace onnxstream {

namespace {
Tensor padded_copy(const Tensor &t, const Allocator &alloc) {
    Tensor copy = make_tensor(alloc, t.dtype(), t.shape());
    copy.set_layout(t.layout());
    copy.set_quant(t.quant());
    std::memcpy(copy.raw(), t.raw(), t.byte_size());
    return copy;
}

// A weight the op reads in row chunks straight from the provider.
class ProviderRows : public StreamedWeight {
public:
    ProviderRows(WeightsProvider &p, const WeightSpec &spec, const Allocator &alloc)
        : provider_(p), spec_(spec), alloc_(alloc) {}
    Tensor read_rows(int64_t begin, int64_t end) const override {
        return provider_.fetch_rows(spec_, begin, end, alloc_);
    }

private:
    WeightsProvider &provider_;
    const WeightSpec &spec_;
    const Allocator &alloc_;
};

// Only float (or 8-bit quantized) weights of rank >= 2 over the chunk budget stream.
// Inputs whose storage the op's output 0 may take over (OpDef::output_may_reuse_input): an activation
// this run produced, dying at this node, read once by it, not a graph output, and held by nothing else
// (its live slot, plus the view the layout plan made of it, if any).
std::vector<bool> reusable_inputs(const Graph &graph, const Plan &plan, const Node &node,
                                  const std::vector<const Tensor *> &in_ptrs, const std::vector<Tensor> &views) {
    if (!node.def->output_may_reuse_input || node.inputs.size() > 2) return {};
    const auto &dying = plan.free_after[static_cast<size_t>(node.index)];
    const auto &outputs = graph.outputs();
    std::vector<bool> reusable(node.inputs.size(), false);
    bool any = false;
    for (size_t k = 0; k < node.inputs.size(); ++k) {
        const NodeInput &in = node.inputs[k];
        const Tensor *t = in_ptrs[k];
        if (in.kind != NodeInput::Value || !t || t->empty() || !t->storage()->is_activation()) continue;
        if (std::find(dying.begin(), dying.end(), in.value) == dying.end()) continue;
        if (std::find(outputs.begin(), outputs.end(), in.value) != outputs.end()) continue;
        size_t reads = 0;
        for (const NodeInput &other : node.inputs) reads += other.kind == NodeInput::Value && other.value == in.value;
        const bool via_view = !views.empty() && t >= views.data() && t < views.data() + views.size();
        if (reads != 1 || t->storage().use_count() != (via_view ? 2 : 1)) continue;
        reusable[k] = any = true;
    }
    if (!any) reusable.clear();
    return reusable;
}

bool streams(const Node &node, size_t input, const RunOptions &options) {
    if (options.weight_chunk_bytes == 0 || !node.def->streamable(input)) return false;
    const NodeInput &in = node.inputs[input];
    if (in.kind != NodeInput::Weight || in.weight.shape.size() < 2 || in.weight.shape[0] < 2) return false;
    const DType d = in.weight.dtype;
    const bool floating = d == DType::F32 || d == DType::F16 || ((d == DType::U8 || d == DType::I8) && in.weight.quant.present);
    return floating && in.weight.byte_size() > options.weight_chunk_bytes;
}

// t (a rank-4 float32 activation) in the other layout; one or one-pixel channels only change the label.
Tensor convert_layout(const Tensor &t, bool to_nhwc, const Allocator &alloc, pthreadpool_t pool, uint64_t &count) {
    const size_t n = static_cast<size_t>(t.dim(0)), c = static_cast<size_t>(t.dim(1));
    const size_t hw = static_cast<size_t>(t.dim(2) * t.dim(3));
    Tensor out = t;
    if (c != 1 && hw != 1) {
        out = make_tensor(alloc, t.dtype(), t.shape());
        if (to_nhwc) nchw_to_nhwc(t.data<float>(), out.data<float>(), n, c, hw, pool);
        else nhwc_to_nchw(t.data<float>(), out.data<float>(), n, c, hw, pool);
        ++count;
    }
    out.set_layout(to_nhwc ? Layout::NHWC : Layout::Plain);
    return out;
}

// The allocator does not know which op or weight it allocates for: out-of-memory errors (max_bytes, an
// injected fault, a failed mmap) get the op's location and `what` in front, once.
template <typename F> auto naming_oom(const Node *node, const char *what, const std::string &detail, F &&f)
    -> decltype(f()) {
    try {
        return f();
    } catch (const Error &e) {
        if (!node || e.status() != ONNXSTREAM_ERR_OUT_OF_MEMORY ||
            std::strncmp(e.what(), node->where.c_str(), node->where.size()) == 0)
            throw;
        throw Error(e.status(), cat(node->where, ": ", what, detail, e.what()));
    }
}

// Ends the provider's run however execute() exits.
struct RunScope {
    WeightsProvider &provider;
    RunScope(WeightsProvider &p, const std::vector<WeightSpec> &order, const Allocator &alloc) : provider(p) {
        provider.begin_run(order, alloc);
    }
    ~RunScope() { provider.end_run(); }
};
} // namespace

std::vector<Tensor> execute(const Graph &graph, const Plan &plan, const std::vector<Tensor> &inputs,
                            WeightsProvider &provider, const Allocator &alloc, pthreadpool_t pool,
                            const ProgressFn &progress, RunStats &stats,
                            std::vector<std::shared_ptr<void>> *node_state, const RunOptions &options,
                            const ValueObserver *observer) {
    using Clock = std::chrono::steady_clock;
    auto us_since = [](Clock::time_point t) {
        return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t).count());
    };
    stats = RunStats();
    auto run_start = Clock::now();
    std::vector<Tensor> live(graph.values().size());
    // A value's copy in the other layout, made once for the consumers that need it (layout plan).
    std::vector<Tensor> other(graph.values().size());
    const Node *current = nullptr; // the op being run, for out-of-memory messages
    auto in_layout = [&](int v, bool nhwc) -> const Tensor & {
        const Tensor &t = live[static_cast<size_t>(v)];
        if ((t.layout() == Layout::NHWC) == nhwc) return t;
        Tensor &o = other[static_cast<size_t>(v)];
        if (o.empty())
            o = naming_oom(current, "layout copy of '", graph.values()[static_cast<size_t>(v)].name + "': ",
                           [&] { return convert_layout(t, nhwc, alloc, pool, stats.layout_transposes); });
        return o;
    };
    for (size_t i = 0; i < graph.inputs().size(); ++i) live[static_cast<size_t>(graph.inputs()[i])] = inputs.at(i);
    if (observer)
        for (size_t i = 0; i < graph.inputs().size(); ++i) (*observer)(graph.inputs()[i], inputs.at(i));

    const auto &nodes = graph.nodes();
    // Streamed weights are read by their ops in chunks, never fetched whole: keep them out of read-ahead.
    std::vector<WeightSpec> fetch_order;
    fetch_order.reserve(plan.fetch_order.size());
    for (const Node &node : nodes)
        for (size_t k = 0; k < node.inputs.size(); ++k)
            if (node.inputs[k].kind == NodeInput::Weight && !streams(node, k, options))
                fetch_order.push_back(node.inputs[k].weight);
    RunScope scope(provider, fetch_order, alloc);
    for (const Node &node : nodes) {
        current = &node;
        auto start = Clock::now();
        std::vector<Tensor> weights; // alive for the duration of this op only
        std::vector<Tensor> views;   // inputs as a layout-independent op sees them (NodeLayout::follow)
        std::vector<const Tensor *> in_ptrs;
        const NodeLayout *layout = plan.layouts.empty() ? nullptr : &plan.layouts[static_cast<size_t>(node.index)];
        const bool follow = layout && layout->follow;
        views.reserve(node.inputs.size());
        std::vector<bool> is_weight;
        std::vector<std::unique_ptr<ProviderRows>> streamed(node.inputs.size());
        weights.reserve(node.inputs.size());
        for (size_t k = 0; k < node.inputs.size(); ++k) {
            const NodeInput &in = node.inputs[k];
            if (in.kind == NodeInput::Value) {
                const Tensor &t = live[static_cast<size_t>(in.value)];
                if (t.empty())
                    fail(ONNXSTREAM_ERR_INTERNAL, node.where, ": input '", graph.values()[static_cast<size_t>(in.value)].name,
                         "' is not available");
                if (follow && layout->in_nhwc[k]) {
                    const Tensor &src = in_layout(in.value, true);
                    views.push_back(src.reshaped({src.dim(0), src.dim(2), src.dim(3), src.dim(1)}));
                    views.back().set_layout(Layout::Plain);
                    in_ptrs.push_back(&views.back());
                } else if (k == 0 && node.def->nhwc == NhwcIo::Native) {
                    in_ptrs.push_back(&t);
                } else if (k == 0 && node.def->nhwc == NhwcIo::Same) {
                    in_ptrs.push_back(&in_layout(in.value, layout && layout->out_nhwc[0]));
                } else if (t.layout() == Layout::NHWC) {
                    in_ptrs.push_back(&in_layout(in.value, false));
                } else if (follow && !layout->in_shape[k].empty()) {
                    views.push_back(t.reshaped(layout->in_shape[k]));
                    in_ptrs.push_back(&views.back());
                } else {
                    in_ptrs.push_back(&t);
                }
            } else if (in.kind == NodeInput::Weight && streams(node, k, options)) {
                // Shape and layout only: the op reads the rows it needs through RunContext.
                Tensor info(in.weight.dtype, in.weight.shape, nullptr);
                info.set_quant(in.weight.quant);
                info.set_layout(in.weight.wanted);
                weights.push_back(std::move(info));
                in_ptrs.push_back(&weights.back());
                is_weight.resize(in_ptrs.size(), false);
                is_weight.back() = true;
                streamed[k] = std::make_unique<ProviderRows>(provider, in.weight, alloc);
            } else if (in.kind == NodeInput::Weight) {
                auto fetch_start = Clock::now();
                const std::string about = in.weight.file + "': ";
                Tensor w = naming_oom(&node, "weight '", about, [&] { return provider.fetch(in.weight, alloc); });
                stats.weight_wait_us += us_since(fetch_start);
                if (!w.storage()->padded() && !node.def->reads_weights_exactly)
                    w = naming_oom(&node, "padded copy of weight '", about, [&] { return padded_copy(w, alloc); });
                if (follow && !layout->in_shape[k].empty()) w = w.reshaped(layout->in_shape[k]);
                weights.push_back(std::move(w));
                in_ptrs.push_back(&weights.back());
                is_weight.resize(in_ptrs.size(), false);
                is_weight.back() = true;
            } else {
                in_ptrs.push_back(nullptr);
            }
        }
        const auto &out_infos = follow ? layout->out_infos : plan.node_outputs[static_cast<size_t>(node.index)];
        std::shared_ptr<void> *state = node_state ? &node_state->at(static_cast<size_t>(node.index)) : nullptr;
        RunOptions node_options = options;
        if (options.node_ranges) node_options.activation_ranges = &options.node_ranges->at(static_cast<size_t>(node.index));
        Attributes remapped = layout && layout->attrs ? Attributes(layout->attrs.get(), node.where) : node.attrs;
        NodeView view{node.line->name, node.line->type, node.where, remapped};
        std::vector<bool> reusable = reusable_inputs(graph, plan, node, in_ptrs, views);
        RunContext ctx(view, std::move(in_ptrs), out_infos, alloc, pool, std::move(is_weight), state, &node_options);
        if (!reusable.empty()) ctx.set_reusable_inputs(std::move(reusable));
        ctx.set_transpose_counter(&stats.layout_transposes);
        ctx.set_fp16_counters(&stats.fp16_ops, &stats.fp16_fallbacks);
        if (layout && node.def->nhwc != NhwcIo::None) ctx.set_output_nhwc(layout->out_nhwc);
        for (size_t k = 0; k < streamed.size(); ++k)
            if (streamed[k]) ctx.set_streamed(k, streamed[k].get());
        naming_oom(&node, "", "", [&] { node.def->run(ctx); });
        weights.clear();

        for (size_t k = 0; k < node.outputs.size(); ++k) {
            Tensor &out = ctx.output(k);
            const Value &v = graph.values()[static_cast<size_t>(node.outputs[k])];
            if (out.empty()) fail(ONNXSTREAM_ERR_INTERNAL, node.where, ": output '", v.name, "' was not produced");
            if (out.dtype() != out_infos[k].dtype || out.shape() != out_infos[k].shape)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": output '", v.name, "' came out as ",
                     dtype_name(out.dtype()), " ", shape_str(out.shape()), " but the plan expects ",
                     dtype_name(out_infos[k].dtype), " ", shape_str(out_infos[k].shape),
                     " (a data-dependent shape differs from model.txt's declaration)");
            if (follow) {
                const Shape &logical = plan.node_outputs[static_cast<size_t>(node.index)][k].shape;
                out = out.reshaped(logical);
                out.set_layout(Layout::NHWC);
            }
            live[static_cast<size_t>(node.outputs[k])] = std::move(out);
            if (observer) (*observer)(node.outputs[k], live[static_cast<size_t>(node.outputs[k])]);
        }
        for (int v : plan.free_after[static_cast<size_t>(node.index)]) {
            live[static_cast<size_t>(v)] = Tensor();
            other[static_cast<size_t>(v)] = Tensor();
        }

        if (progress) {
            OpProgress p{static_cast<size_t>(node.index), nodes.size(), node.line, us_since(start),
                         alloc.current_bytes(), alloc.peak_bytes()};
            if (progress(p))
                fail(ONNXSTREAM_ERR_CANCELLED, "run cancelled by the progress callback after ", node.where);
        }
    }
    current = nullptr;
    stats.run_us = us_since(run_start);
    std::vector<Tensor> outputs;
    // Users always get NCHW (the plan never leaves an output NHWC; this keeps it so whatever an op did).
    for (int v : graph.outputs()) outputs.push_back(in_layout(v, false));
    return outputs;
}

} // namespace onnxstream
