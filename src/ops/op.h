// The contract between the executor and operator implementations.
//
// An operator family file (conv.cpp, elementwise.cpp, ...) defines, per ONNX op type, an `infer`
// function (dtypes + shapes of the outputs from those of the inputs, checked before any op runs) and a
// `run` function (compute the outputs), and registers them in its register_*_ops(Registry&) function.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pthreadpool.h>

#include "ops/attributes.h"
#include "tensor/tensor.h"
#include "util/error.h"

namespace onnxstream {

namespace xnn {
class PackedStore;
}

// What an op implementation knows about the node it is running.
struct NodeView {
    const std::string &name;  // op name as written in model.txt
    const std::string &type;  // ONNX op type
    const std::string &where; // "model.txt:12 (/model.0/conv/Conv Conv)" for messages
    const Attributes &attrs;
};

class InferContext {
public:
    using ConstantFn = std::function<const Tensor *(size_t)>;
    InferContext(NodeView node, std::vector<std::optional<TensorInfo>> inputs, std::vector<Shape> declared,
                 ConstantFn constant)
        : node(node), inputs_(std::move(inputs)), declared_(std::move(declared)), constant_(std::move(constant)) {}

    NodeView node;
    const Attributes &attrs() const { return node.attrs; }

    size_t input_count() const { return inputs_.size(); }
    bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i].has_value(); }
    // Throws INVALID_MODEL naming the op when input i is missing.
    const TensorInfo &input(size_t i) const;
    // The value of input i when it is a weight (loaded from the provider on demand; keep such inputs
    // small: shapes, axes, pads) or an output the planner knows (OpDef::plan_value), or nullptr when it is
    // computed at run time.
    const Tensor *constant(size_t i) const { return has_input(i) ? constant_(i) : nullptr; }
    // Number of outputs declared in model.txt and the shape declared for output i.
    size_t output_count() const { return declared_.size(); }
    const Shape &declared_shape(size_t i) const { return declared_.at(i); }

    // Helpers for checks: throw INVALID_MODEL "<where>: <message>".
    template <typename... Args>[[noreturn]] void error(Args &&...args) const {
        fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": ", std::forward<Args>(args)...);
    }
    // The same with another status (a leading status is never part of the message).
    template <typename... Args>[[noreturn]] void error(Status status, Args &&...args) const {
        fail(status, node.where, ": ", std::forward<Args>(args)...);
    }
    void require_inputs(size_t min, size_t max) const;
    void require_dtype(size_t i, std::initializer_list<DType> allowed) const;

private:
    std::vector<std::optional<TensorInfo>> inputs_;
    std::vector<Shape> declared_;
    ConstantFn constant_;
};

// How attention (ScaledDotProductAttention) computes softmax(Q Kᵀ·scale + mask) V.
enum class AttentionAlgo {
    Auto,   // the fastest one whose working set fits RunOptions::attention_block_bytes
    Full,   // one (S x T) score matrix per batch-head: fastest for short sequences, most memory
    Sliced, // OnnxStream-style: Q split into attention_slices row parts, one (S/parts x T) block at a time
    Flash,  // online softmax over key blocks: never more than a (rows x key block) tile per thread
};

// Clipping range of an activation tensor (static W8A8 quantization, range_data.txt).
struct ActivationRange {
    float min = 0, max = 0;
};
// The ranges of a node's input 0 and output 0 when range data covers both (else `present` is false).
struct NodeActivationRanges {
    bool present = false;
    ActivationRange input, output;
};

// Run-time choices that trade memory for speed (set from the model's memory mode; ops read them).
struct RunOptions {
    AttentionAlgo attention = AttentionAlgo::Auto;
    int attention_slices = 0;          // Sliced: number of Q parts (0: derived from attention_block_bytes)
    size_t attention_block_bytes = 0;  // budget for score blocks of one attention op (0: no limit)
    size_t flash_tile_rows = 0, flash_tile_keys = 0; // Flash's tile before the budget (0: by the CPU's L2)
    // Conv/MatMul/Gemm weights bigger than this are streamed in output-channel chunks of at most this
    // many bytes (0: never chunk).
    size_t weight_chunk_bytes = 0;
    // Static W8A8: activation ranges per node (Graph::nodes() order) when the model has range data (ops read
    // their node's entry through RunContext::activation_ranges). Null: every op computes in float.
    const std::vector<NodeActivationRanges> *node_ranges = nullptr;
    // Keep rank-4 float activations channels-last between ops that can read and write them that way
    // (graph/layout_plan.h), so convolutions do not transpose their input and output on every call.
    bool nhwc_layout = true;
    // Keep the thread pool's workers spinning between parallel sections (util/worker_policy.h).
    bool spin_workers = false;
    // Conv and MatMul/Gemm with a weight compute float16 activations in float16 arithmetic (XNNPACK's f16
    // kernels) instead of widening them to float32: the model's arithmetic option, resolved at load.
    bool fp16_arithmetic = false;
    // Per-channel int8 weights (`--quantize w8`) of MatMul, Gemm and Conv compute in int8 through XNNPACK's
    // dynamically quantized kernels where the build has them (xnnpack/dynamic_quant.h); false: they are
    // dequantized to float32 (ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS).
    bool int8_weight_arithmetic = true;
    // XNNPACK's packed weights, kept beside the persistent weights cache (xnnpack/weights_cache.h): Conv,
    // MatMul and Gemm operators look theirs up there before packing (RunContext::packing_key). Null: none.
    xnn::PackedStore *packed_store = nullptr;
};

// What a kernel reads of a weight: its layout (OHWI: output channel, kernel positions, input channel, for
// kernels of rank >= 3; Plain otherwise) and element type (the stored one, or float32 from float16 or
// 8-bit quantized weights).
struct WeightPrep {
    Layout layout = Layout::Plain;
    DType dtype = DType::F32;
};

// weights/prepare.h's prepare_weight, which the executor hands to every RunContext (ops sit below the
// weights layer and cannot include it).
using PrepareWeightFn = Tensor (*)(const Tensor &stored, const WeightPrep &want, int64_t first_row,
                                   const Allocator &alloc, pthreadpool_t pool, uint64_t *bytes_copied);

struct OpDef;

// A weight input that the executor streams in row chunks (rows = dim 0, e.g. a Conv's output channels)
// instead of fetching it whole, because it is bigger than RunOptions::weight_chunk_bytes.
class StreamedWeight {
public:
    virtual ~StreamedWeight() = default;
    // Rows [begin, end) as a tensor of shape (end - begin, dims 1..), in the layout the op asked for, with
    // the weight's quantization parameters (per-row parameters stay indexed by the whole weight's rows).
    virtual Tensor read_rows(int64_t begin, int64_t end) const = 0;
};

class RunContext {
public:
    RunContext(NodeView node, std::vector<const Tensor *> inputs, const std::vector<TensorInfo> &out_infos,
               const Allocator &alloc, pthreadpool_t pool, std::vector<bool> weight_inputs = {},
               std::shared_ptr<void> *state = nullptr, const RunOptions *options = nullptr)
        : node(node), inputs_(std::move(inputs)), out_infos_(out_infos), outputs_(out_infos.size()),
          alloc_(alloc), pool_(pool), weight_inputs_(std::move(weight_inputs)), state_(state),
          options_(options ? options : &default_options()) {}

    NodeView node;
    const Attributes &attrs() const { return node.attrs; }

    size_t input_count() const { return inputs_.size(); }
    bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
    const Tensor &input(size_t i) const { return *inputs_.at(i); }
    // True when input i is a weight (constant for the model's lifetime), not computed at run time.
    bool input_is_weight(size_t i) const { return i < weight_inputs_.size() && weight_inputs_[i]; }
    // Per-node state kept from one run to the next (e.g. an XNNPACK operator with packed weights), or
    // nullptr when the model does not keep prepared kernels. An op that uses it must check that what it
    // stored still matches (shapes, and weight identity via storage pointers of weight inputs only).
    std::shared_ptr<void> *state() const { return state_; }
    // The model's memory/speed choices for this run.
    const RunOptions &options() const { return *options_; }
    // This node's activation ranges for static W8A8 (RunOptions::node_ranges), or nullptr.
    const NodeActivationRanges *activation_ranges() const { return ranges_; }
    void set_activation_ranges(const NodeActivationRanges *ranges) { ranges_ = ranges; }
    // Channels-last tensors (Layout::NHWC; only for ops with OpDef::nhwc set): input i arrives with its
    // logical NCHW shape but NHWC data; output k should be written NHWC (and marked so with set_layout).
    bool input_nhwc(size_t i) const { return has_input(i) && input(i).layout() == Layout::NHWC; }
    bool output_nhwc(size_t k) const { return k < output_nhwc_.size() && output_nhwc_[k]; }
    void set_output_nhwc(std::vector<bool> flags) { output_nhwc_ = std::move(flags); }
    // Ops that transpose an activation between NCHW and NHWC count it here (RunStats::layout_transposes).
    void count_transpose() const {
        if (transposes_) ++*transposes_;
    }
    void set_transpose_counter(uint64_t *counter) { transposes_ = counter; }
    // Ops that computed in float16 arithmetic, and ones that fell back to float32 because XNNPACK has no
    // float16 kernels for this CPU (RunStats::fp16_ops, fp16_fallbacks).
    void count_fp16(bool computed) const {
        uint64_t *c = computed ? fp16_ops_ : fp16_fallbacks_;
        if (c) ++*c;
    }
    void set_fp16_counters(uint64_t *ops, uint64_t *fallbacks) {
        fp16_ops_ = ops;
        fp16_fallbacks_ = fallbacks;
    }
    // Ops that computed an 8-bit weight in int8 arithmetic (RunStats::int8_ops).
    void count_int8() const {
        if (int8_ops_) ++*int8_ops_;
    }
    void set_int8_counter(uint64_t *ops) { int8_ops_ = ops; }
    // Bytes an op wrote converting or reordering a weight for its kernel (RunStats::weight_bytes_copied).
    void count_weight_copy(size_t bytes) const {
        if (weight_copies_) *weight_copies_ += bytes;
    }
    void set_weight_copy_counter(uint64_t *counter) { weight_copies_ = counter; }
    // Input i's weight rows as the kernel reads them (weights/prepare.h): `rows` is input(i) itself or a chunk
    // of it from read_weight_rows that starts at first_row. The layout is the one the op's definition asks
    // for input i (OpDef::ohwi_weight_input); the element type is float32 for the float32 kernels or, with
    // `dtype`, the one a float16 or 8-bit kernel reads. Returns rows itself when nothing changes. Errors
    // name the op.
    Tensor kernel_weight(size_t i, const Tensor &rows, int64_t first_row, DType dtype = DType::F32) const;
    void set_weight_preparation(const OpDef *def, PrepareWeightFn prepare) {
        def_ = def;
        prepare_ = prepare;
    }
    // Only for the op's OpDef::streamable_weight_input: when the weight is streamed, input(i) has its
    // dtype/shape/layout but no data, and the op reads it in chunks of at most
    // weight_chunk_rows(i) rows through read_weight_rows. Otherwise input(i) is the whole weight.
    void set_streamed(size_t i, const StreamedWeight *w) {
        if (streamed_.size() <= i) streamed_.resize(i + 1, nullptr);
        streamed_[i] = w;
    }
    bool is_streamed(size_t i) const { return i < streamed_.size() && streamed_[i] != nullptr; }
    Tensor read_weight_rows(size_t i, int64_t begin, int64_t end) const { return streamed_.at(i)->read_rows(begin, end); }
    // The key under which XNNPACK's packing of weight input i is kept in RunOptions::packed_store
    // (xnn::PackingScope): `first_row` and `part` tell apart the operators made from one weight (chunks,
    // blocks). 0, for no caching, when there is no store or when an input other than input 0 (the
    // activation) is computed at run time: biases and scales are packed with the weight.
    uint64_t packing_key(size_t i, int64_t first_row = 0, uint64_t part = 0) const;
    // Rows per chunk so a chunk of input i stays within the chunk budget (at least 1; all rows when the
    // input is not streamed). `float_bytes`: count rows as float32 (what the kernel will hold).
    int64_t weight_chunk_rows(size_t i, bool float_bytes = true) const;

    size_t output_count() const { return out_infos_.size(); }
    const TensorInfo &output_info(size_t i) const { return out_infos_.at(i); }
    // Allocate output i with the dtype/shape that infer produced.
    Tensor &alloc_output(size_t i);
    // Allocate output i with a shape only known at run time (checked against inference by the executor).
    Tensor &alloc_output(size_t i, DType dtype, const Shape &shape);
    // Set output i to an existing tensor (e.g. a view sharing an input's storage).
    void set_output(size_t i, Tensor t) { outputs_.at(i) = std::move(t); }
    // Inputs whose storage alloc_output(0) may take over (set by the executor; see OpDef).
    void set_reusable_inputs(std::vector<bool> reusable) { reusable_ = std::move(reusable); }
    Tensor &output(size_t i) { return outputs_.at(i); }
    std::vector<Tensor> &outputs() { return outputs_; }

    const Allocator &allocator() const { return alloc_; }
    pthreadpool_t pool() const { return pool_; }
    // Scratch memory that is tracked like tensors and freed when the returned tensor goes away.
    Tensor scratch(DType dtype, const Shape &shape) const { return make_tensor(alloc_, dtype, shape); }

    template <typename... Args>[[noreturn]] void error(Status status, Args &&...args) const {
        fail(status, node.where, ": ", std::forward<Args>(args)...);
    }

private:
    std::vector<const Tensor *> inputs_;
    const std::vector<TensorInfo> &out_infos_;
    std::vector<Tensor> outputs_;
    std::vector<bool> reusable_;
    const Allocator &alloc_;
    pthreadpool_t pool_;
    std::vector<bool> weight_inputs_;
    std::shared_ptr<void> *state_;
    const RunOptions *options_;
    std::vector<const StreamedWeight *> streamed_;
    std::vector<bool> output_nhwc_;
    uint64_t *transposes_ = nullptr;
    uint64_t *fp16_ops_ = nullptr, *fp16_fallbacks_ = nullptr;
    uint64_t *int8_ops_ = nullptr;
    uint64_t *weight_copies_ = nullptr;
    const OpDef *def_ = nullptr;
    PrepareWeightFn prepare_ = nullptr;
    const NodeActivationRanges *ranges_ = nullptr;
    static const RunOptions &default_options() {
        static const RunOptions defaults;
        return defaults;
    }
};

using InferFn = std::vector<TensorInfo> (*)(const InferContext &);
using RunFn = void (*)(RunContext &);

// Channels-last support of an op with OpDef::nhwc set: it handles Layout::NHWC on input 0 and writes output 0
// NHWC when RunContext::output_nhwc(0) (and marks it with set_layout).
enum class NhwcIo {
    None,
    // Input 0 arrives in the layout output 0 is to be written in (the executor converts it), and the op
    // costs the same either way (GroupNormalization).
    Same,
    // Input 0 in either layout, output 0 in either; NCHW costs the op a transpose each way, since it
    // computes channels-last (Conv). The plan keeps such ops' neighbours NHWC.
    Native,
};

// An op output's value when the planner can know it without running the graph (InputDims: it depends on
// input shapes only). The planner hands it to the op's consumers through InferContext::constant.
using PlanValueFn = Tensor (*)(const InferContext &ctx, const Allocator &alloc);

struct OpDef {
    InferFn infer = nullptr;
    RunFn run = nullptr;
    PlanValueFn plan_value = nullptr;
    // Index of an input whose kernel the op reads in OHWI layout (Conv: 1), or -1. The op prepares it
    // (RunContext::kernel_weight); providers serve it in the layout they hold, OnnxStream's "_nhwc.bin"
    // twin when it exists.
    int ohwi_weight_input = -1;
    // Weight inputs (one bit per input index) that the op's float32 kernels read as float32 whatever their
    // stored float type: the persistent cache stores float16 ones widened, so no run widens them again.
    uint32_t f32_weight_mask = 0;
    // Weight inputs (one bit per input index) the op reads exactly: packed by XNNPACK at operator creation
    // or read by the op's own loops. Every other input reaches the op readable kTensorPadding bytes past
    // its end (XNNPACK's read-past-the-end slack): the executor gives a padded copy to any that lacks it
    // (a zero-copy weight or graph input), so ops never copy for slack themselves.
    uint32_t exact_weight_mask = 0;
    // Weight inputs (one bit per input index) the op reads only to pack them into XNNPACK operators: when
    // every operator it creates in a run comes from the packed store, it has read nothing of them, and the
    // executor tells their storage so (Storage::mark_pages_untouched).
    uint32_t packed_only_weight_mask = 0;
    // Index of a weight input the op can read in row chunks (RunContext::is_streamed), or -1.
    int streamable_weight_input = -1;
    // What the op does with channels-last tensors (graph/layout_plan.h).
    NhwcIo nhwc = NhwcIo::None;
    // Output 0 element i depends only on element i of each same-shaped input (elementwise ops with at
    // most two inputs): the executor lets alloc_output(0) take over an input's storage when that input
    // dies at this op, so e.g. SiLU's Mul needs no third full-size tensor.
    bool output_may_reuse_input = false;
    // Further such inputs, one bit per input index, for ops with more than one big weight.
    uint32_t streamable_weight_mask = 0;
    // Value inputs that were not computed this run (outputs of an If branch that did not run) reach the op
    // as absent inputs instead of failing the run (IfMerge).
    bool reads_absent_values = false;
    // Inputs (one bit per input index) whose values decide an output's shape (NonMaxSuppression's selected
    // count): the converter names the ones computed at run time when it cannot give the output a static shape.
    uint32_t shape_value_mask = 0;
    // The op may keep its prepared kernels in RunContext::state under a byte budget (exec/kept_kernels.h):
    // all it keeps is memory of the kernel library (xnn's allocator), and it lets go of the resident pages
    // of packed weights mapped from a file after each run. Ops without it keep state only in max-speed.
    bool keeps_kernels_in_budget = false;
    // The layout input i's kernel is read in (RunContext::kernel_weight).
    Layout kernel_layout(size_t input) const {
        return ohwi_weight_input == static_cast<int>(input) ? Layout::OHWI : Layout::Plain;
    }
    bool reads_weight_exactly(size_t input) const { return input < 32 && ((exact_weight_mask >> input) & 1u) != 0; }
    bool widens_to_f32(size_t input) const { return input < 32 && ((f32_weight_mask >> input) & 1u) != 0; }
    bool streamable(size_t input) const {
        return streamable_weight_input == static_cast<int>(input) ||
               (input < 32 && ((streamable_weight_mask >> input) & 1u) != 0);
    }

    // Named setters for registration (C++17 has no designated initializers), so each registration says
    // which fields it sets: r.add("Conv", infer, run).with_ohwi_weight_input(1).with_reads_weights_exactly().
    OpDef &with_plan_value(PlanValueFn fn) {
        plan_value = fn;
        return *this;
    }
    OpDef &with_ohwi_weight_input(int input) {
        ohwi_weight_input = input;
        return *this;
    }
    OpDef &with_f32_weight_mask(uint32_t mask) {
        f32_weight_mask = mask;
        return *this;
    }
    OpDef &with_reads_weights_exactly(uint32_t inputs = ~0u) {
        exact_weight_mask = inputs;
        return *this;
    }
    OpDef &with_weights_read_only_to_pack(uint32_t inputs) {
        packed_only_weight_mask = inputs;
        return *this;
    }
    bool reads_weight_only_to_pack(size_t input) const {
        return input < 32 && ((packed_only_weight_mask >> input) & 1u) != 0;
    }
    OpDef &with_streamable_weight_input(int input) {
        streamable_weight_input = input;
        return *this;
    }
    OpDef &with_nhwc(NhwcIo io) {
        nhwc = io;
        return *this;
    }
    OpDef &with_kernels_kept_in_budget() {
        keeps_kernels_in_budget = true;
        return *this;
    }
    OpDef &with_output_may_reuse_input() {
        output_may_reuse_input = true;
        return *this;
    }
    OpDef &with_streamable_weight_mask(uint32_t mask) {
        streamable_weight_mask = mask;
        return *this;
    }
    OpDef &with_absent_values() {
        reads_absent_values = true;
        return *this;
    }
    OpDef &with_shape_value_inputs(uint32_t mask) {
        shape_value_mask = mask;
        return *this;
    }
};

// Run fn(i) for i in [0, n) on the pool, in tiles of `tile` indices (fn gets begin, end).
void parallel_for(pthreadpool_t pool, size_t n, size_t tile, const std::function<void(size_t, size_t)> &fn);

} // namespace onnxstream
