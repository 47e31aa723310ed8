// The engine behind one onnxstream_model_t: a loaded graph, its weights provider, thread pool, tracked
// allocator, pushed inputs and the outputs of the last run. The C API is thin glue over this class.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/executor.h"
#include "exec/range_data.h"
#include "exec/threadpool.h"
#include "graph/graph.h"
#include "graph/planner.h"
#include "weights/packed_store.h"
#include "weights/provider.h"
#include "weights/weight_cache.h"

namespace onnxstream {

struct ModelOptions {
    size_t threads = 0;
    onnxstream_provider_kind_t provider = ONNXSTREAM_PROVIDER_PREFETCH;
    uint64_t prefetch_bytes = 64ull << 20;
    uint64_t mapping_cache_bytes = 0; // process-wide budget set when a run starts
    // The pages of a run's freed buffers stay mapped for this model's next run (tensor/mapping_cache.h).
    bool keep_run_pages = false;
    // Bytes of prepared kernels ops may keep between runs when the provider is not the RAM one (which keeps
    // every op's): exec/kept_kernels.h. 0 = none.
    uint64_t kept_kernel_bytes = 0;
    // Weights the persistent weights cache serves that keep their pages mapped between runs when of at most
    // this size (WeightCacheOptions::kept_small_weight_bytes). 0 = none.
    uint64_t kept_small_weight_bytes = 0;
    // With a persistent cache and mapped weights dropped after each op: read packed-weights entries into
    // pooled blocks instead of mapping them, keeping up to this many bytes of free blocks
    // (weights/packed_store.h). 0 = map them.
    uint64_t packed_copy_pool_bytes = 0;
    RunOptions run; // memory/speed choices handed to ops
    std::string cache_path; // persistent prepared-weights cache ("" = none)
    uint64_t max_bytes = 0; // limit of the tracked allocator (0 = none)
    onnxstream_arithmetic_t arithmetic = ONNXSTREAM_ARITHMETIC_AUTO; // resolved into run.fp16_arithmetic at load
    bool profile = false; // record a per-op profile of every run (Model::profile)
};

// The arithmetic AUTO / FP32 / FP16 resolves to: FP16 when forced, or for AUTO when the CPU computes
// float16 natively and the model has float16 tensors.
bool resolve_fp16_arithmetic(onnxstream_arithmetic_t requested, bool cpu_fp16, bool model_has_f16);

using LogFn = std::function<void(onnxstream_log_level_t, const std::string &)>;

class Model {
public:
    explicit Model(const ModelOptions &options);
    ~Model();

    // A folder containing model.txt, or a model.txt path.
    void load_file(const std::string &path);
    // A folder's outputs.txt, when present, declares the outputs and their order (declare_outputs); a
    // model.txt given as text has the outputs it implies.
    void load_string(const std::string &text, const std::string &weights_dir, const std::string &source);
    bool loaded() const { return graph_ != nullptr; }
    const Graph &graph() const;

    // Replace the weights provider (a host callback provider). Keeps the folder.
    void set_provider(std::unique_ptr<WeightsProvider> provider);
    void add_output(const std::string &name);
    // LoRA while streaming (weights/lora.h): the modules of the file whose keys start with key_prefix
    // change the model's weights from the next run on. Returns the number of modules taken.
    size_t add_lora(const std::string &path, float scale, const std::string &key_prefix);
    void push_input(const std::string &name, DType dtype, const Shape &shape, const void *data, size_t bytes);
    void run(const ProgressFn &progress);

    // Static W8A8 activation ranges (range_data.txt; loaded automatically from the model folder at load).
    // read: replaces the ranges; throws IO/INVALID_MODEL for a bad file, INVALID_ARGUMENT for a name the
    // model lacks. write: writes the current ranges (after calibration, the calibrated ones) atomically.
    void read_range_data(const std::string &path);
    void write_range_data(const std::string &path) const;
    // Calibration: while on, runs compute in float and record percentile ranges (RangeRecorder) of the
    // tensors quantizable ops read and write, merged over runs; switching it on starts from no ranges,
    // switching it off makes later runs use the recorded ranges.
    void set_calibrate(bool on);
    bool calibrating() const { return calibrate_; }
    const RangeMap &ranges() const { return ranges_; }

    // The last pushed tensor of graph input i (empty before a push).
    const Tensor &pushed_input(size_t i) const { return inputs_.at(i); }

    // Outputs of the last successful run, in graph.outputs() order.
    const std::vector<Tensor> &outputs() const { return outputs_; }
    const std::string &output_name(size_t i) const;
    // Index of an output by escaped or original name, or -1.
    int find_output(const std::string &name) const;

    Allocator &allocator() { return alloc_; }
    struct LastRun {
        RunStats exec;
        uint64_t bytes_read = 0, read_us = 0; // by the provider during the run (any thread)
        uint64_t weight_bytes_copied = 0;     // the executor's, the ops' and the provider's
        // Operators whose packed weights were mapped from the packed-weights file, and ones whose packing
        // this run wrote to it (PackedStoreFile; XNNPACK 2024 builds with a weights cache).
        uint64_t packed_mapped = 0, packed_stored = 0;
        // Ops keeping prepared kernels between runs within the mode's budget, and the bytes they hold.
        uint64_t kept_kernels = 0, kept_kernel_bytes = 0;
    };
    const LastRun &last_run() const { return last_run_; }
    // The per-op profiler (its last successful run's profile), or nullptr when profiling is off.
    const Profiler *profiler() const { return profiler_.get(); }
    size_t threads() const { return pool_.threads(); }
    // The resolved arithmetic (ModelOptions::arithmetic) of the loaded model.
    bool fp16_arithmetic() const { return options_.run.fp16_arithmetic; }
    void set_log(LogFn fn, onnxstream_log_level_t min_level) {
        log_ = std::move(fn);
        log_level_ = min_level;
    }
    void log(onnxstream_log_level_t level, const std::string &message) const {
        if (log_ && level >= log_level_) log_(level, message);
    }

private:
    void open_packed_store(const WeightCacheProvider &cache, bool keep_pages_mapped);
    // outputs_file: outputs.txt of the model's folder (used when it exists), or "".
    void load(const std::string &text, const std::string &weights_dir, const std::string &source,
              const std::string &outputs_file);
    int input_index(const std::string &name) const;
    const Plan &plan_for_inputs();

    ModelOptions options_;
    ThreadPool pool_;
    Allocator alloc_;
    std::unique_ptr<WeightsProvider> provider_;
    // XNNPACK's packed weights beside the weights cache (declared before node_state_, whose kept
    // operators hold entries of it until they are destroyed).
    std::unique_ptr<PackedStoreFile> packed_store_;
    bool custom_provider_ = false;
    std::string folder_;
    std::unique_ptr<Graph> graph_;
    std::vector<Tensor> inputs_; // per graph input; empty until pushed
    std::map<std::vector<int64_t>, Plan> plans_; // by input dtypes and shapes
    std::vector<Tensor> outputs_;
    // Prepared kernels kept between runs: every op's with the RAM provider, within
    // ModelOptions::kept_kernel_bytes (kept_) with the others. Never with a host's provider, whose weights
    // may change from run to run.
    bool keep_prepared_ = false;
    std::vector<std::shared_ptr<void>> node_state_;
    std::unique_ptr<KeptKernels> kept_;
    // The weights the kept kernels were prepared from change: drop them all.
    void drop_kept_kernels();
    LoraSet lora_;
    LastRun last_run_;
    std::unique_ptr<Profiler> profiler_; // when ModelOptions::profile
    RangeMap ranges_;
    std::vector<NodeActivationRanges> node_ranges_; // resolved ranges_ (empty: no W8A8)
    bool calibrate_ = false;
    std::unique_ptr<RangeRecorder> recorder_;
    void apply_ranges(const std::string &source);
    LogFn log_;
    bool fp16_fallback_logged_ = false;
    onnxstream_log_level_t log_level_ = ONNXSTREAM_LOG_WARNING;
};

} // namespace onnxstream
