#include "ops/op.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <mutex>

#include "util/hash64.h"
#include "util/worker_policy.h"

namespace onnxstream {

const TensorInfo &InferContext::input(size_t i) const {
    if (!has_input(i)) error("input ", i, " is missing");
    return *inputs_[i];
}

void InferContext::require_inputs(size_t min, size_t max) const {
    size_t present = 0;
    for (size_t i = 0; i < inputs_.size(); ++i)
        if (inputs_[i]) present = i + 1;
    if (inputs_.size() < min || present > max)
        error("expects ", min == max ? cat(min) : cat(min, " to ", max), " inputs, got ", inputs_.size());
    for (size_t i = 0; i < min; ++i)
        if (!inputs_[i]) error("required input ", i, " is omitted");
}

void InferContext::require_dtype(size_t i, std::initializer_list<DType> allowed) const {
    const TensorInfo &in = input(i);
    for (DType d : allowed)
        if (in.dtype == d) return;
    std::string names;
    for (DType d : allowed) names += cat(names.empty() ? "" : ", ", dtype_name(d));
    fail(ONNXSTREAM_ERR_UNSUPPORTED, node.where, ": input ", i, " has dtype ", dtype_name(in.dtype),
         ", supported: ", names);
}

namespace {
// Out-of-memory messages say which output the allocation was for (the executor adds the op's location).
Tensor alloc_named(const Allocator &alloc, const NodeView &node, size_t i, DType dtype, const Shape &shape) {
    try {
        return make_tensor(alloc, dtype, shape);
    } catch (const Error &e) {
        if (e.status() != ONNXSTREAM_ERR_OUT_OF_MEMORY) throw;
        throw Error(e.status(), cat(node.where, ": output ", i, " (", dtype_name(dtype), " ", shape_str(shape), "): ",
                                    e.what()));
    }
}
} // namespace

Tensor &RunContext::alloc_output(size_t i) {
    const TensorInfo &info = out_infos_.at(i);
    for (size_t k = 0; i == 0 && k < reusable_.size(); ++k) {
        const Tensor *in = reusable_[k] ? inputs_.at(k) : nullptr;
        if (in && in->dtype() == info.dtype && in->shape() == info.shape) {
            outputs_[0] = Tensor(info.dtype, info.shape, in->storage());
            outputs_[0].set_quant(info.quant);
            reusable_.clear(); // one output, one reuse
            return outputs_[0];
        }
    }
    outputs_.at(i) = alloc_named(alloc_, node, i, info.dtype, info.shape);
    outputs_[i].storage()->mark_activation();
    outputs_[i].set_quant(info.quant);
    return outputs_[i];
}

Tensor &RunContext::alloc_output(size_t i, DType dtype, const Shape &shape) {
    outputs_.at(i) = alloc_named(alloc_, node, i, dtype, shape);
    outputs_[i].storage()->mark_activation();
    return outputs_[i];
}

namespace {
struct ForContext {
    const std::function<void(size_t, size_t)> *fn;
    std::mutex mutex;
    std::exception_ptr error; // the first exception thrown by any tile
};
void for_tile(void *ctx, size_t begin, size_t count) {
    auto *c = static_cast<ForContext *>(ctx);
    // An exception must not unwind through pthreadpool's C frames (that terminates the process): keep
    // the first one and rethrow it on the calling thread once every tile has finished.
    try {
        (*c->fn)(begin, begin + count);
    } catch (...) {
        std::lock_guard<std::mutex> lock(c->mutex);
        if (!c->error) c->error = std::current_exception();
    }
}
} // namespace

void parallel_for(pthreadpool_t pool, size_t n, size_t tile, const std::function<void(size_t, size_t)> &fn) {
    if (n == 0) return;
    if (tile == 0) tile = 1;
    if (!pool || n <= tile) {
        fn(0, n);
        return;
    }
    ForContext ctx;
    ctx.fn = &fn;
    // Workers sleep when the loop is done instead of spinning, unless the model asked otherwise
    // (xnnpack/compat.h, operator_flags: why).
    pthreadpool_parallelize_1d_tile_1d(pool, for_tile, &ctx, n, tile, spin_workers() ? 0 : PTHREADPOOL_FLAG_YIELD_WORKERS);
    if (ctx.error) std::rethrow_exception(ctx.error);
}

} // namespace onnxstream

namespace onnxstream {

int64_t RunContext::weight_chunk_rows(size_t i, bool float_bytes) const {
    const Tensor &w = input(i);
    const int64_t rows = w.rank() ? w.dim(0) : 1;
    if (!is_streamed(i) || rows <= 1) return std::max<int64_t>(rows, 1);
    const size_t elem = float_bytes ? sizeof(float) : dtype_size(w.dtype());
    const size_t row_bytes = static_cast<size_t>(w.numel() / rows) * elem;
    const size_t budget = std::max<size_t>(options().weight_chunk_bytes, 1);
    int64_t chunk = std::clamp<int64_t>(static_cast<int64_t>(budget / std::max<size_t>(row_bytes, 1)), 1, rows);
    // Whole SIMD tiles: a chunk of a Conv's output channels is the N of XNNPACK's GEMM, whose kernels work
    // in tiles of 8, 16 or 32 columns (32: XNNPACK 2024's AVX-512 kernels), so 80 channels would cost as
    // much as 96 (docs/benchmarks.md, "Conv kernels").
    if (chunk < rows && chunk >= 32) chunk -= chunk % 32;
    else if (chunk < rows && chunk > 16) chunk = 16;
    return chunk;
}

uint64_t RunContext::packing_key(size_t i, int64_t first_row, uint64_t part) const {
    if (!options().packed_store) return 0;
    // Biases and scales come from the other inputs: all of them must be constant too.
    for (size_t k = 1; k < input_count(); ++k)
        if (has_input(k) && !input_is_weight(k)) return 0;
    if (!input_is_weight(i)) return 0;
    // `where` names the node's model.txt line, unique in the model; the store belongs to one model.txt.
    Hash64 h;
    h.update_str(node.where);
    h.update_u64(i);
    h.update_u64(static_cast<uint64_t>(first_row));
    h.update_u64(part);
    return h.digest() | 1; // never 0, which means "no caching"
}

Tensor RunContext::kernel_weight(size_t i, const Tensor &rows, int64_t first_row, DType dtype) const {
    if (!prepare_ || !def_) fail(ONNXSTREAM_ERR_INTERNAL, node.where, ": no weight preparation was set up");
    const WeightPrep want{def_->kernel_layout(i), dtype};
    // Only weights count: a kernel computed at run time (a Conv whose W is an activation) is not on the weight path.
    uint64_t copied = 0;
    try {
        Tensor t = prepare_(rows, want, first_row, alloc_, pool_, &copied);
        if (input_is_weight(i)) count_weight_copy(static_cast<size_t>(copied));
        return t;
    } catch (const Error &e) {
        if (e.status() == ONNXSTREAM_ERR_OUT_OF_MEMORY || std::strncmp(e.what(), node.where.c_str(), node.where.size()) == 0)
            throw;
        fail(e.status(), node.where, ": input ", i, ": ", e.what());
    }
}

} // namespace onnxstream
