#include "exec/model.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "graph/layout_plan.h"
#include "graph/model_txt.h"
#include "tensor/mapping_cache.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/strings.h"
#include "weights/weight_cache.h"
#include "weights/weight_files.h"
#include "xnnpack/dynamic_quant.h"
#include "xnnpack/init.h"

namespace onnxstream {

namespace {
std::unique_ptr<WeightsProvider> make_builtin_provider(const ModelOptions &o) {
    switch (o.provider) {
    case ONNXSTREAM_PROVIDER_NOCACHE: return make_nocache_provider();
    case ONNXSTREAM_PROVIDER_AUTO: // resolved by the memory mode before a Model is made; prefetch otherwise
    case ONNXSTREAM_PROVIDER_PREFETCH: return make_prefetch_provider(o.prefetch_bytes);
    case ONNXSTREAM_PROVIDER_MMAP: return make_mmap_provider();
    case ONNXSTREAM_PROVIDER_RAM: return make_ram_provider();
    }
    fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "unknown provider kind ", static_cast<int>(o.provider));
}

// Constants for shape inference are only loaded when small; bigger ones fall back to model.txt's
// declared shapes.
constexpr size_t kMaxInferenceConstantBytes = 1 << 20;
} // namespace

Model::Model(const ModelOptions &options)
    : options_(options), pool_(options.threads), provider_(make_builtin_provider(options)),
      keep_prepared_(options.provider == ONNXSTREAM_PROVIDER_RAM || options.kept_kernel_bytes > 0) {
    if (options.provider != ONNXSTREAM_PROVIDER_RAM && options.kept_kernel_bytes > 0)
        kept_ = std::make_unique<KeptKernels>(options.kept_kernel_bytes);
    alloc_.set_limit(options.max_bytes);
    if (options.profile) profiler_ = std::make_unique<Profiler>();
    init_kernels();
}

Model::~Model() { release_mapping_cache_owner(this); }

const Graph &Model::graph() const {
    if (!graph_) fail(ONNXSTREAM_ERR_BAD_STATE, "no model is loaded");
    return *graph_;
}

void Model::load_file(const std::string &path) {
    // The handle's state is checked before the path, like load_string does, so the status does not
    // depend on whether the new path happens to exist.
    if (graph_) fail(ONNXSTREAM_ERR_BAD_STATE, "a model is already loaded in this handle; create a new one");
    std::string file = path;
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) file = (ends_with(path, "/") ? path : path + "/") + "model.txt";
    // Opening a directory "succeeds" and reads as empty text, which would pass for an empty model.
    if (::stat(file.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        fail(ONNXSTREAM_ERR_IO, "cannot read ", file, ": not a regular file");
    std::ifstream in(file, std::ios::binary);
    if (!in) fail(ONNXSTREAM_ERR_IO, "cannot open ", file, ": ", std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) fail(ONNXSTREAM_ERR_IO, "cannot read ", file);
    size_t slash = file.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : file.substr(0, slash);
    load(text.str(), folder, file, folder + "/outputs.txt");
}

namespace {

// outputs.txt (written by onnxstream-convert when the ONNX graph declares an output that model.txt cannot
// express as one: a tensor also read inside the graph): one escaped tensor name per line, in the ONNX
// graph's output order. Readers that do not know it (OnnxStream) ignore it.
void declare_outputs(Graph &graph, const std::string &path) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return; // no declaration: the outputs model.txt implies
    std::ifstream in(path);
    if (!in || !S_ISREG(st.st_mode)) fail(ONNXSTREAM_ERR_IO, "cannot read ", path, ": not a readable file");
    std::vector<int> declared;
    std::string name;
    for (int line = 1; std::getline(in, name); ++line) {
        if (!name.empty() && name.back() == '\r') name.pop_back();
        if (name.empty()) continue;
        const int v = graph.find_value(name);
        if (v < 0) fail(ONNXSTREAM_ERR_INVALID_MODEL, path, ":", line, ": '", name, "' is not a tensor of model.txt");
        if (graph.values()[static_cast<size_t>(v)].producer < 0)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, path, ":", line, ": '", name,
                 "' is a graph input, not a tensor an op computes");
        declared.push_back(v);
    }
    if (in.bad()) fail(ONNXSTREAM_ERR_IO, "cannot read ", path);
    graph.declare_outputs(declared);
}
} // namespace

namespace {
// int4 weights compute only through XNNPACK's qd8_f32_qb4w kernels (2024 API): a build without them refuses
// such a model when it loads rather than when the first op runs.
void refuse_int4_without_kernels(const Graph &graph) {
    if (xnn::has_dynamic_quant_kernels()) return;
    for (const Node &node : graph.nodes())
        for (const NodeInput &in : node.inputs)
            if (in.kind == NodeInput::Weight && in.weight.quant.blockwise())
                fail(ONNXSTREAM_ERR_UNSUPPORTED, node.where, ": int4 weight '", in.weight.file,
                     "' needs XNNPACK's qd8_f32_qb4w fully connected kernels (2024 API, Debian 13); this build "
                     "uses the ", kernel_library_description());
}
} // namespace

void Model::load_string(const std::string &text, const std::string &weights_dir, const std::string &source) {
    load(text, weights_dir, source, "");
}

void Model::load(const std::string &text, const std::string &weights_dir, const std::string &source,
                 const std::string &outputs_file) {
    if (graph_) fail(ONNXSTREAM_ERR_BAD_STATE, "a model is already loaded in this handle; create a new one");
    auto graph = std::make_unique<Graph>(parse_model_txt(text, source), source);
    if (!outputs_file.empty()) declare_outputs(*graph, outputs_file);
    load_quant_scales(*graph, weights_dir); // per-channel int8 weights' scale files (small; read once)
    refuse_int4_without_kernels(*graph);
    if (!custom_provider_) {
        for (const Node &node : graph->nodes())
            for (const NodeInput &in : node.inputs) {
                if (in.kind != NodeInput::Weight) continue;
                if (weights_dir.empty())
                    fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, node.where, ": needs weight file ", in.weight.file,
                         " but no weights folder was given");
                provider_->set_folder(weights_dir);
                provider_->validate(in.weight);
            }
    }
    if (!custom_provider_ && !options_.cache_path.empty()) {
        // The cache serves prepared weights from a shared mapping and hands anything it lacks to the
        // built-in provider. max-speed keeps the mapped pages between runs.
        WeightCacheOptions co;
        co.keep_pages_mapped = options_.provider == ONNXSTREAM_PROVIDER_RAM;
        co.kept_small_weight_bytes = options_.kept_small_weight_bytes;
        std::unique_ptr<WeightsProvider> inner = std::move(provider_);
        std::unique_ptr<WeightCacheProvider> cache;
        try {
            cache = make_weight_cache_provider(std::move(inner), options_.cache_path, *graph, text, weights_dir, co);
        } catch (...) {
            provider_ = make_builtin_provider(options_); // the factory took the old one
            throw;
        }
        log(ONNXSTREAM_LOG_INFO, cat("weights cache ", options_.cache_path));
        if (xnn::has_weights_cache()) open_packed_store(*cache, co.keep_pages_mapped);
        provider_ = std::move(cache);
    }
    folder_ = weights_dir;
    provider_->set_folder(folder_);
    graph_ = std::move(graph);
    if (!weights_dir.empty()) {
        // OnnxStream keeps the activation ranges of a W8A8 model next to model.txt.
        const std::string range_file = weights_dir + "/range_data.txt";
        struct stat rst;
        if (::stat(range_file.c_str(), &rst) == 0) {
            try {
                read_range_data(range_file);
            } catch (...) {
                graph_.reset();
                throw;
            }
        }
    }
    inputs_.assign(graph_->inputs().size(), Tensor());
    bool has_f16 = false;
    for (const Node &node : graph_->nodes())
        for (const NodeInput &in : node.inputs)
            has_f16 = has_f16 || (in.kind == NodeInput::Weight && in.weight.dtype == DType::F16);
    options_.run.fp16_arithmetic = resolve_fp16_arithmetic(options_.arithmetic, cpu_has_fp16_arithmetic(), has_f16);
    log(ONNXSTREAM_LOG_INFO, cat("arithmetic: ", options_.run.fp16_arithmetic ? "fp16" : "fp32",
                                 options_.arithmetic == ONNXSTREAM_ARITHMETIC_AUTO ? " (auto)" : ""));
    log(ONNXSTREAM_LOG_INFO, cat("loaded ", source, ": ", graph_->nodes().size(), " ops, ", graph_->inputs().size(),
                                 " inputs, ", graph_->outputs().size(), " outputs"));
}

bool resolve_fp16_arithmetic(onnxstream_arithmetic_t requested, bool cpu_fp16, bool model_has_f16) {
    if (requested == ONNXSTREAM_ARITHMETIC_FP16) return true;
    if (requested == ONNXSTREAM_ARITHMETIC_FP32) return false;
    return cpu_fp16 && model_has_f16;
}

void Model::set_provider(std::unique_ptr<WeightsProvider> provider) {
    provider_ = std::move(provider);
    provider_->set_folder(folder_);
    custom_provider_ = true;
    keep_prepared_ = false;
    kept_.reset();
    node_state_.clear();
}

void Model::add_output(const std::string &name) {
    int v = graph().find_value(name);
    if (v < 0) fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "no tensor named '", name, "' in the model");
    graph_->add_output(v);
    if (profiler_) profiler_->invalidate(); // it refers to the plans
    plans_.clear();
}

int Model::input_index(const std::string &name) const {
    int v = graph().find_value(name);
    const auto &ins = graph_->inputs();
    for (size_t i = 0; i < ins.size(); ++i)
        if (ins[i] == v) return static_cast<int>(i);
    std::string names;
    for (int in : ins) names += cat(names.empty() ? "" : ", ", graph_->values()[static_cast<size_t>(in)].name);
    fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "'", name, "' is not an input of the model (inputs: ", names, ")");
}

void Model::push_input(const std::string &name, DType dtype, const Shape &shape, const void *data, size_t bytes) {
    int i = input_index(name);
    const Value &v = graph_->values()[static_cast<size_t>(graph_->inputs()[static_cast<size_t>(i)])];
    if (!fits_declared(shape, v.declared_shape))
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "input '", v.name, "' has shape ", shape_str(shape),
             " but the model declares ", shape_str(v.declared_shape),
             std::find(v.declared_shape.begin(), v.declared_shape.end(), kAnyDim) == v.declared_shape.end()
                 ? " (a model takes other sizes when onnxstream-convert --resizable made it)"
                 : " ('?': any size)");
    const uint64_t expected = checked::bytes_or_fail(shape, dtype_size(dtype), cat("input '", v.name, "'"));
    if (bytes != expected)
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "input '", v.name, "': byte_size is ", bytes, " but ", dtype_name(dtype),
             " ", shape_str(shape), " needs ", expected);
    Tensor t;
    try {
        t = make_tensor(alloc_, dtype, shape);
    } catch (const Error &e) {
        if (e.status() != ONNXSTREAM_ERR_OUT_OF_MEMORY) throw;
        // The previous tensor of this input stays pushed (and counted) until the new one is in place.
        throw Error(e.status(), cat("input '", v.name, "': ", e.what()));
    }
    if (bytes) std::memcpy(t.raw(), data, bytes);
    inputs_[static_cast<size_t>(i)] = std::move(t);
}

size_t Model::add_lora(const std::string &path, float scale, const std::string &key_prefix) {
    size_t taken = lora_.add(graph(), path, scale, key_prefix);
    // Kernels prepared from the weights without this LoRA must be prepared again.
    drop_kept_kernels();
    return taken;
}

const Plan &Model::plan_for_inputs() {
    std::vector<int64_t> key;
    std::vector<TensorInfo> infos;
    for (size_t i = 0; i < inputs_.size(); ++i) {
        if (inputs_[i].empty())
            fail(ONNXSTREAM_ERR_BAD_STATE, "input '", graph_->values()[static_cast<size_t>(graph_->inputs()[i])].name,
                 "' was not pushed before the run");
        // A resizable model has one plan per set of input shapes, made when the shapes are first pushed.
        key.push_back(static_cast<int64_t>(inputs_[i].dtype()));
        key.push_back(static_cast<int64_t>(inputs_[i].rank()));
        key.insert(key.end(), inputs_[i].shape().begin(), inputs_[i].shape().end());
        infos.push_back(inputs_[i].info());
    }
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    auto load_constant = [this](const WeightSpec &spec) -> Tensor {
        if (spec.byte_size() > kMaxInferenceConstantBytes) return Tensor();
        return provider_->fetch(spec, alloc_);
    };
    Plan plan = make_plan(*graph_, infos, load_constant);
    if (options_.run.nhwc_layout) plan_layouts(*graph_, plan);
    return plans_.emplace(key, std::move(plan)).first->second;
}

void Model::open_packed_store(const WeightCacheProvider &cache, bool keep_pages_mapped) {
    const WeightCacheStats &cs = cache.stats();
    const std::string path = options_.cache_path + ".xnnpack";
    packed_store_ = std::make_unique<PackedStoreFile>(path, packed_store_identity(cs.content_hash, cs.file_bytes),
                                                      keep_pages_mapped, options_.packed_copy_pool_bytes);
    const PackedStoreStats ps = packed_store_->stats();
    if (!ps.error.empty())
        log(ONNXSTREAM_LOG_WARNING, cat("packed weights will not be kept: ", ps.error));
    else if (ps.built)
        log(ONNXSTREAM_LOG_INFO, cat("packed weights: building ", path,
                                     ps.rebuild_reason.empty() ? "" : cat(" (", ps.rebuild_reason, ")")));
    else
        log(ONNXSTREAM_LOG_INFO, cat("packed weights: ", path, ", ", ps.entries, " entries"));
}

void Model::run(const ProgressFn &progress) {
    graph();
    // Freed tensor pages are reused within the run and given back at its end, or kept for this model's
    // next run (mapping_cache.h).
    begin_mapping_cache_run(options_.mapping_cache_bytes, this, options_.keep_run_pages);
    struct EndMappingCacheRun {
        ~EndMappingCacheRun() { end_mapping_cache_run(); }
    } end_mapping_cache_run_guard;
    outputs_.clear();
    const Plan &plan = plan_for_inputs();
    uint64_t bytes0 = provider_->bytes_read(), us0 = provider_->read_us(), copied0 = provider_->bytes_copied();
    LastRun stats;
    if (keep_prepared_) node_state_.resize(graph_->nodes().size());
    if (kept_ && kept_->nodes() != graph_->nodes().size()) kept_->reset(graph_->nodes().size());
    ValueObserver observer;
    if (calibrate_) observer = [this](int value, const Tensor &t) { recorder_->observe(value, t); };
    // A calibrating run records the ranges of the float computation: int8 arithmetic's own rounding of the
    // activations would move them.
    RunOptions run_options = options_.run;
    if (calibrate_) run_options.int8_weight_arithmetic = false;
    // Packed weights are of the model's own weights: not of a LoRA's, nor of a calibrating run's.
    if (lora_.empty() && !calibrate_) run_options.packed_store = packed_store_.get();
    const PackedStoreStats packed0 = packed_store_ ? packed_store_->stats() : PackedStoreStats();
    Executor executor(*graph_, plan, *provider_, alloc_, pool_.get(), run_options, keep_prepared_ ? &node_state_ : nullptr);
    if (!lora_.empty()) executor.set_lora(&lora_);
    executor.set_kept_kernels(kept_.get());
    // The profile of a run is kept only when the run succeeds (as last_run_). The provider's read-ahead has
    // stopped when executor.run returns or throws, so no read reports to the profiler afterwards.
    struct StopObserving {
        WeightsProvider &provider;
        ~StopObserving() { provider.set_read_observer(nullptr); }
    } stop_observing{*provider_};
    if (profiler_) {
        profiler_->prepare(*graph_, plan);
        provider_->set_read_observer(profiler_.get());
        executor.set_profiler(profiler_.get());
    }
    outputs_ = executor.run(inputs_, progress, stats.exec, calibrate_ ? &observer : nullptr);
    if (profiler_) profiler_->commit();
    stats.bytes_read = provider_->bytes_read() - bytes0;
    stats.read_us = provider_->read_us() - us0;
    stats.weight_bytes_copied = stats.exec.weight_bytes_copied + (provider_->bytes_copied() - copied0);
    if (run_options.packed_store) {
        packed_store_->run_completed();
        const PackedStoreStats packed = packed_store_->stats();
        stats.packed_mapped = packed.mapped - packed0.mapped;
        stats.packed_stored = packed.stored - packed0.stored;
        if (packed.built && !packed0.entries && packed.entries)
            log(ONNXSTREAM_LOG_INFO, cat("packed weights: wrote ", packed_store_->path(), " (", packed.entries,
                                         " entries, ", packed.file_bytes, " bytes)"));
        if (!packed.error.empty() && packed0.error.empty())
            log(ONNXSTREAM_LOG_WARNING, cat("packed weights will not be kept: ", packed.error));
    }
    if (kept_) {
        for (size_t node : kept_->choose(stats.exec.run_us * 1000)) node_state_.at(node).reset();
        stats.kept_kernels = kept_->kept();
        stats.kept_kernel_bytes = kept_->bytes();
    }
    last_run_ = stats;
    if (stats.exec.fp16_fallbacks > 0 && !fp16_fallback_logged_) {
        fp16_fallback_logged_ = true;
        log(ONNXSTREAM_LOG_WARNING, cat("fp16 arithmetic: XNNPACK has no float16 kernels for this CPU; ",
                                        stats.exec.fp16_fallbacks, " ops computed in float32 instead"));
    }
    log(ONNXSTREAM_LOG_INFO, cat("run: ", stats.exec.run_us / 1000.0, " ms, weights ", stats.bytes_read, " bytes read in ",
                                 stats.read_us / 1000.0, " ms, waited ", stats.exec.weight_wait_us / 1000.0, " ms"));
}

void Model::drop_kept_kernels() {
    node_state_.clear();
    if (kept_) kept_->reset(0);
}

void Model::apply_ranges(const std::string &source) {
    node_ranges_ = resolve_ranges(*graph_, ranges_, source);
    options_.run.node_ranges = ranges_.empty() ? nullptr : &node_ranges_;
    drop_kept_kernels(); // prepared float kernels of ops that now compute in uint8
}

void Model::read_range_data(const std::string &path) {
    graph();
    RangeMap ranges = onnxstream::read_range_data(path);
    RangeMap old = std::move(ranges_);
    ranges_ = std::move(ranges);
    try {
        apply_ranges(path);
    } catch (...) {
        ranges_ = std::move(old);
        apply_ranges(path);
        throw;
    }
    size_t quantized = 0;
    for (const auto &r : node_ranges_) quantized += r.present ? 1 : 0;
    log(ONNXSTREAM_LOG_INFO, cat("range data ", path, ": ", ranges_.size(), " ranges, ", quantized,
                                 " ops with input and output ranges"));
}

void Model::write_range_data(const std::string &path) const {
    graph();
    onnxstream::write_range_data(path, calibrate_ && recorder_ ? recorder_->ranges() : ranges_);
}

void Model::set_calibrate(bool on) {
    graph();
    if (on == calibrate_) return;
    calibrate_ = on;
    if (on) {
        recorder_ = std::make_unique<RangeRecorder>(*graph_);
        options_.run.node_ranges = nullptr;
        drop_kept_kernels();
    } else {
        ranges_ = recorder_->ranges();
        recorder_.reset();
        apply_ranges("calibration");
    }
}

const std::string &Model::output_name(size_t i) const {
    return graph().values()[static_cast<size_t>(graph_->outputs().at(i))].name;
}

int Model::find_output(const std::string &name) const {
    int v = graph().find_value(name);
    const auto &outs = graph_->outputs();
    for (size_t i = 0; i < outs.size() && i < outputs_.size(); ++i)
        if (outs[i] == v) return static_cast<int>(i);
    return -1;
}

} // namespace onnxstream
