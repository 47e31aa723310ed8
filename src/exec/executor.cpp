#include "exec/executor.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "ops/layout.h"
#include "util/kernel_timer.h"
#include "util/worker_policy.h"
#include "util/error.h"
#include "util/stopwatch.h"
#include "weights/prepare.h"
#include "xnnpack/init.h"
#include "xnnpack/weights_cache.h"

namespace onnxstream {

namespace {
Tensor padded_copy(const Tensor &t, const Allocator &alloc) {
    Tensor copy = make_tensor(alloc, t.dtype(), t.shape());
    copy.set_layout(t.layout());
    copy.set_quant(t.quant());
    std::memcpy(copy.raw(), t.raw(), t.byte_size());
    return copy;
}

// A weight the op reads in row chunks straight from the provider (plus its LoRA deltas, if any).
class ProviderRows : public StreamedWeight {
public:
    // wait_ns: when profiling, the counter the time spent reading goes to (nullptr: not timed).
    ProviderRows(WeightsProvider &p, const WeightSpec &spec, const Allocator &alloc, uint64_t *wait_ns,
                 const LoraSet *lora, pthreadpool_t pool)
        : provider_(p), spec_(spec), alloc_(alloc), wait_ns_(wait_ns), lora_(lora), pool_(pool) {}
    Tensor read_rows(int64_t begin, int64_t end) const override {
        Stopwatch watch;
        Tensor rows = provider_.fetch_rows(spec_, begin, end, alloc_);
        if (lora_) rows = lora_->apply(spec_, rows, begin, alloc_, pool_);
        if (wait_ns_) *wait_ns_ += watch.elapsed_ns();
        return rows;
    }

private:
    WeightsProvider &provider_;
    const WeightSpec &spec_;
    const Allocator &alloc_;
    uint64_t *wait_ns_;
    const LoraSet *lora_;
    pthreadpool_t pool_;
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

// Ends the provider's run however Executor::run exits.
struct RunScope {
    WeightsProvider &provider;
    RunScope(WeightsProvider &p, const std::vector<WeightSpec> &order, const Allocator &alloc) : provider(p) {
        provider.begin_run(order, alloc);
    }
    ~RunScope() { provider.end_run(); }
};

} // namespace

// What one op gets: pointers into the run's live values, or into the tensors below, which live as long as
// the op runs (reserved up front, so the pointers stay valid).
struct Executor::NodeInputs {
    std::vector<const Tensor *> ptrs;
    std::vector<Tensor> weights;                          // fetched weights and shape-only streamed ones
    std::vector<Tensor> views;                            // reshaped, relaid or padded copies of values
    std::vector<bool> is_weight;
    std::vector<std::unique_ptr<ProviderRows>> streamed; // per input: rows read on demand
};

const Tensor &Executor::in_layout(int v, bool nhwc) {
    const Tensor &t = live_[static_cast<size_t>(v)];
    if ((t.layout() == Layout::NHWC) == nhwc) return t;
    Tensor &o = other_[static_cast<size_t>(v)];
    if (o.empty())
        o = naming_oom(current_, "layout copy of '", graph_.values()[static_cast<size_t>(v)].name + "': ",
                       [&] { return convert_layout(t, nhwc, alloc_, pool_, stats_->layout_transposes); });
    return o;
}

namespace {

// Weights served from a mapping drop their pages after the op (weights cache, min and balanced): a
// system call and a TLB flush per weight and run. An op that read a weight only to pack it, and whose every
// new operator this run came from the packed store, touched none of its pages: there is nothing to drop.
// Only float32 weights qualify; others are converted before packing, which reads them.
void note_untouched_weights(const Node &node, const RunContext &ctx, const xnn::CreationCounts &before) {
    if (node.def->packed_only_weight_mask == 0) return;
    const xnn::CreationCounts after = xnn::creation_counts();
    if (after.packed != before.packed || after.from_store == before.from_store) return;
    for (size_t k = 0; k < ctx.input_count(); ++k) {
        if (!node.def->reads_weight_only_to_pack(k) || !ctx.has_input(k) || !ctx.input_is_weight(k) ||
            ctx.is_streamed(k))
            continue;
        const Tensor &w = ctx.input(k);
        if (w.dtype() == DType::F32 && w.storage()) w.storage()->mark_pages_untouched();
    }
}

} // namespace

Tensor Executor::fetch_weight(const Node &node, const WeightSpec &spec) {
    Stopwatch watch;
    Tensor w = naming_oom(&node, "weight '", spec.file + "': ", [&] {
        Tensor stored = provider_.fetch(spec, alloc_);
        return lora_ ? lora_->apply(spec, stored, 0, alloc_, pool_) : stored;
    });
    const uint64_t ns = watch.elapsed_ns();
    stats_->weight_wait_us += ns / 1000;
    op_wait_ns_ += ns;
    return w;
}

void Executor::gather_inputs(const Node &node, const NodeLayout *layout, NodeInputs &in) {
    const bool follow = layout && layout->follow;
    const size_t count = node.inputs.size();
    in.views.reserve(2 * count); // a relaid view and its padded copy at most, per input
    in.weights.reserve(count);
    in.streamed.resize(count);
    in.is_weight.assign(count, false);
    // XNNPACK reads past the end of its inputs: a tensor without that slack (a zero-copy weight or graph
    // input, or a view of one) gets a padded copy, unless the op reads that weight input exactly.
    auto lacks_padding = [](const Tensor &t) { return !t.empty() && !t.storage()->padded(); };
    auto padded = [&](const Tensor &t, const char *what, const std::string &name) {
        return naming_oom(&node, what, name + "': ", [&] { return padded_copy(t, alloc_); });
    };
    for (size_t k = 0; k < count; ++k) {
        const NodeInput &ni = node.inputs[k];
        if (ni.kind == NodeInput::Value) {
            const Tensor &t = live_[static_cast<size_t>(ni.value)];
            const std::string &name = graph_.values()[static_cast<size_t>(ni.value)].name;
            if (t.empty() && node.def->reads_absent_values) { // a value of a branch that did not run
                in.ptrs.push_back(nullptr);
                continue;
            }
            if (t.empty()) {
                const int producer = graph_.values()[static_cast<size_t>(ni.value)].producer;
                if (producer >= 0 && graph_.nodes()[static_cast<size_t>(producer)].guard >= 0)
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": input '", name, "' was not computed: ",
                         graph_.nodes()[static_cast<size_t>(producer)].where, " was skipped by its ",
                         kGuardAttribute, ", and only ops under the same guard or IfMerge may read it");
                fail(ONNXSTREAM_ERR_INTERNAL, node.where, ": input '", name, "' is not available");
            }
            const Tensor *p = &t;
            if (follow && layout->in_nhwc[k]) {
                const Tensor &src = in_layout(ni.value, true);
                in.views.push_back(src.reshaped({src.dim(0), src.dim(2), src.dim(3), src.dim(1)}));
                in.views.back().set_layout(Layout::Plain);
                p = &in.views.back();
            } else if (k == 0 && node.def->nhwc == NhwcIo::Native) {
                p = &t;
            } else if (k == 0 && node.def->nhwc == NhwcIo::Same) {
                p = &in_layout(ni.value, layout && layout->out_nhwc[0]);
            } else if (t.layout() == Layout::NHWC) {
                p = &in_layout(ni.value, false);
            } else if (follow && !layout->in_shape[k].empty()) {
                in.views.push_back(t.reshaped(layout->in_shape[k]));
                p = &in.views.back();
            }
            if (lacks_padding(*p)) {
                in.views.push_back(padded(*p, "padded copy of '", name));
                p = &in.views.back();
            }
            in.ptrs.push_back(p);
        } else if (ni.kind == NodeInput::Weight && streams(node, k, options_)) {
            // Shape and layout only: the op reads the rows it needs through RunContext.
            Tensor info(ni.weight.dtype, ni.weight.shape, nullptr);
            info.set_quant(ni.weight.quant);
            info.set_layout(ni.weight.wanted);
            in.weights.push_back(std::move(info));
            in.ptrs.push_back(&in.weights.back());
            in.is_weight[k] = true;
            in.streamed[k] = std::make_unique<ProviderRows>(provider_, ni.weight, alloc_, profiler_ ? &op_wait_ns_ : nullptr,
                                                            lora_, pool_);
        } else if (ni.kind == NodeInput::Weight) {
            Tensor w = fetch_weight(node, ni.weight);
            if (lacks_padding(w) && !node.def->reads_weight_exactly(k)) {
                w = padded(w, "padded copy of weight '", ni.weight.file);
                stats_->weight_bytes_copied += w.byte_size();
            }
            if (follow && !layout->in_shape[k].empty()) w = w.reshaped(layout->in_shape[k]);
            in.weights.push_back(std::move(w));
            in.ptrs.push_back(&in.weights.back());
            in.is_weight[k] = true;
        } else {
            in.ptrs.push_back(nullptr);
        }
    }
}

void Executor::store_outputs(const Node &node, RunContext &ctx, const std::vector<TensorInfo> &out_infos, bool follow) {
    for (size_t k = 0; k < node.outputs.size(); ++k) {
        Tensor &out = ctx.output(k);
        const Value &v = graph_.values()[static_cast<size_t>(node.outputs[k])];
        if (out.empty()) fail(ONNXSTREAM_ERR_INTERNAL, node.where, ": output '", v.name, "' was not produced");
        if (out.dtype() != out_infos[k].dtype || out.shape() != out_infos[k].shape)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": output '", v.name, "' came out as ", dtype_name(out.dtype()),
                 " ", shape_str(out.shape()), " but the plan expects ", dtype_name(out_infos[k].dtype), " ",
                 shape_str(out_infos[k].shape), " (a data-dependent shape differs from model.txt's declaration)");
        if (follow) {
            const Shape &logical = plan_.node_outputs[static_cast<size_t>(node.index)][k].shape;
            out = out.reshaped(logical);
            out.set_layout(Layout::NHWC);
        }
        live_[static_cast<size_t>(node.outputs[k])] = std::move(out);
        if (observer_) (*observer_)(node.outputs[k], live_[static_cast<size_t>(node.outputs[k])]);
    }
}

void Executor::run_node(const Node &node) {
    current_ = &node;
    const NodeLayout *layout = plan_.layouts.empty() ? nullptr : &plan_.layouts[static_cast<size_t>(node.index)];
    const bool follow = layout && layout->follow;
    NodeInputs in;
    gather_inputs(node, layout, in);
    const auto &out_infos = follow ? layout->out_infos : plan_.node_outputs[static_cast<size_t>(node.index)];
    const size_t index = static_cast<size_t>(node.index);
    std::shared_ptr<void> *state = nullptr;
    bool deciding = false; // the op's first run with a place to keep kernels in a budget
    // Not a streamed weight's: its operators (one per chunk) would all stay alive through the run.
    auto streamed = [&] {
        return std::any_of(in.streamed.begin(), in.streamed.end(), [](const auto &rows) { return rows != nullptr; });
    };
    if (node_state_ && !kept_) {
        state = &node_state_->at(index);
    } else if (node_state_ && node.def->keeps_kernels_in_budget && kept_->offered(index) && !streamed()) {
        state = &node_state_->at(index);
        deciding = kept_->measuring(index);
    }
    Attributes remapped = layout && layout->attrs ? Attributes(layout->attrs.get(), node.where) : node.attrs;
    NodeView view{node.line->name, node.line->type, node.where, remapped};
    std::vector<bool> reusable = reusable_inputs(graph_, plan_, node, in.ptrs, in.views);
    RunContext ctx(view, std::move(in.ptrs), out_infos, alloc_, pool_, in.is_weight, state, &options_);
    if (options_.node_ranges) ctx.set_activation_ranges(&options_.node_ranges->at(static_cast<size_t>(node.index)));
    if (!reusable.empty()) ctx.set_reusable_inputs(std::move(reusable));
    ctx.set_transpose_counter(&stats_->layout_transposes);
    ctx.set_fp16_counters(&stats_->fp16_ops, &stats_->fp16_fallbacks);
    ctx.set_int8_counter(&stats_->int8_ops);
    ctx.set_weight_copy_counter(&stats_->weight_bytes_copied);
    ctx.set_weight_preparation(node.def, prepare_weight);
    if (layout && node.def->nhwc != NhwcIo::None) ctx.set_output_nhwc(layout->out_nhwc);
    for (size_t k = 0; k < in.streamed.size(); ++k)
        if (in.streamed[k]) ctx.set_streamed(k, in.streamed[k].get());
    // Blocks a budgeted op keeps come from new pages (its later runs allocate nothing of the kind).
    std::optional<KernelKeepingScope> keeping;
    if (state && kept_ && kept_->chosen(index)) keeping.emplace();
    // What keeping costs, on the measuring run: the kernel library's bytes the op still holds once it has run,
    // against the time it spent preparing them (nested in the profiler's count when profiling).
    struct Measure {
        uint64_t prepare_ns = 0, *outer = KernelPrepareTimer::sink(), bytes0 = kernel_library_bytes();
        Stopwatch watch;
        Measure() { KernelPrepareTimer::sink() = &prepare_ns; }
        ~Measure() {
            KernelPrepareTimer::sink() = outer;
            if (outer) *outer += prepare_ns;
        }
    };
    std::optional<Measure> measure;
    if (deciding) measure.emplace();
    const xnn::CreationCounts created_before = xnn::creation_counts();
    naming_oom(&node, "", "", [&] { node.def->run(ctx); });
    note_untouched_weights(node, ctx, created_before);
    if (deciding) {
        const uint64_t bytes1 = kernel_library_bytes();
        kept_->measured(index, *state != nullptr, bytes1 > measure->bytes0 ? bytes1 - measure->bytes0 : 0,
                        measure->prepare_ns, measure->watch.elapsed_ns());
        measure.reset();
        state->reset();
    }
    in.weights.clear(); // weights are dropped as soon as their op has run
    store_outputs(node, ctx, out_infos, follow);
    for (int v : plan_.free_after[static_cast<size_t>(node.index)]) {
        live_[static_cast<size_t>(v)] = Tensor();
        other_[static_cast<size_t>(v)] = Tensor();
    }
}

bool Executor::guard_holds(const Node &node) const {
    if (node.guard < 0) return true;
    const Tensor &g = live_[static_cast<size_t>(node.guard)];
    // Absent: the guard belongs to an enclosing branch that did not run.
    return !g.empty() && int_at(g, 0) != 0;
}

void Executor::skip_node(const Node &node) {
    for (int v : plan_.free_after[static_cast<size_t>(node.index)]) {
        live_[static_cast<size_t>(v)] = Tensor();
        other_[static_cast<size_t>(v)] = Tensor();
    }
}

void Executor::run_node_profiled(const Node &node) {
    OpTiming t;
    t.node = static_cast<size_t>(node.index);
    struct Sink { // the XNNPACK wrapper's preparation timers add to t.kernel_prepare_ns while the op runs
        explicit Sink(uint64_t *counter) { KernelPrepareTimer::sink() = counter; }
        ~Sink() { KernelPrepareTimer::sink() = nullptr; }
    } sink(&t.kernel_prepare_ns);
    op_wait_ns_ = 0;
    Stopwatch watch;
    run_node(node);
    t.duration_ns = watch.elapsed_ns();
    t.start_ns = profiler_->since_start(watch.started());
    t.weight_wait_ns = op_wait_ns_;
    t.memory_bytes = alloc_.current_bytes();
    profiler_->add_op(t);
}

std::vector<Tensor> Executor::run(const std::vector<Tensor> &inputs, const ProgressFn &progress, RunStats &stats,
                                  const ValueObserver *observer) {
    stats = RunStats();
    stats_ = &stats;
    observer_ = observer;
    Stopwatch run_watch;
    live_.assign(graph_.values().size(), Tensor());
    other_.assign(graph_.values().size(), Tensor());
    // Whatever happens, the run's tensors are released when run() returns or throws.
    struct Release {
        Executor &e;
        ~Release() {
            e.live_.clear();
            e.other_.clear();
            e.current_ = nullptr;
            e.stats_ = nullptr;
            e.observer_ = nullptr;
        }
    } release{*this};
    for (size_t i = 0; i < graph_.inputs().size(); ++i) live_[static_cast<size_t>(graph_.inputs()[i])] = inputs.at(i);
    if (observer)
        for (size_t i = 0; i < graph_.inputs().size(); ++i) (*observer)(graph_.inputs()[i], inputs.at(i));

    const auto &nodes = graph_.nodes();
    // Streamed weights are read by their ops in chunks, never fetched whole: keep them out of read-ahead.
    std::vector<WeightSpec> fetch_order;
    fetch_order.reserve(plan_.fetch_order.size());
    // So are the weights of guarded nodes (run-time If branches): only the branch that runs reads its own.
    for (const Node &node : nodes)
        for (size_t k = 0; k < node.inputs.size() && node.guard < 0; ++k)
            if (node.inputs[k].kind == NodeInput::Weight && !streams(node, k, options_))
                fetch_order.push_back(node.inputs[k].weight);
    ScopedWorkerPolicy worker_policy(options_.spin_workers);
    if (profiler_) profiler_->begin_run();
    RunScope scope(provider_, fetch_order, alloc_);
    for (const Node &node : nodes) {
        Stopwatch node_watch;
        if (!guard_holds(node)) skip_node(node);
        else if (profiler_) run_node_profiled(node);
        else run_node(node);
        if (progress) {
            OpProgress p{static_cast<size_t>(node.index), nodes.size(), node.line, node_watch.elapsed_us(),
                         alloc_.current_bytes(), alloc_.peak_bytes()};
            if (progress(p))
                fail(ONNXSTREAM_ERR_CANCELLED, "run cancelled by the progress callback after ", node.where);
        }
    }
    current_ = nullptr;
    stats.run_us = run_watch.elapsed_us();
    if (profiler_) profiler_->end_run(run_watch.elapsed_ns());
    std::vector<Tensor> outputs;
    // Users always get NCHW (the plan never leaves an output NHWC; this keeps it so whatever an op did).
    for (int v : graph_.outputs()) {
        if (live_[static_cast<size_t>(v)].empty())
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "output '", graph_.values()[static_cast<size_t>(v)].name,
                 "' was not computed in this run: it belongs to an If branch that did not run");
        outputs.push_back(in_layout(v, false));
    }
    return outputs;
}

} // namespace onnxstream
