// IfMerge: the outputs of a run-time If (the converter's flatten_if pass). Inputs: the condition, then the
// then-branch's N outputs, then the else-branch's N; outputs: N. The branch that did not run left its
// values absent, so the op hands on the taken branch's tensors without copying them.
#include "ops/registry.h"

namespace onnxstream {

namespace {

size_t branch_outputs(const InferContext &ctx) {
    const size_t inputs = ctx.input_count(), outputs = ctx.output_count();
    if (outputs == 0 || inputs != 1 + 2 * outputs)
        ctx.error("IfMerge takes the condition and two values per output: ", outputs, " output",
                  outputs == 1 ? "" : "s", " need ", 1 + 2 * outputs, " inputs, got ", inputs);
    return outputs;
}

std::vector<TensorInfo> infer_if_merge(const InferContext &ctx) {
    const size_t n = branch_outputs(ctx);
    const TensorInfo &cond = ctx.input(0);
    if (cond.dtype != DType::Bool || shape_numel(cond.shape) != 1)
        ctx.error("the condition is ", dtype_name(cond.dtype), " ", shape_str(cond.shape), "; it must be one bool");
    std::vector<TensorInfo> out;
    for (size_t k = 0; k < n; ++k) {
        const TensorInfo &a = ctx.input(1 + k), &b = ctx.input(1 + n + k);
        if (a.dtype != b.dtype || a.shape != b.shape)
            ctx.error("output ", k, " is ", dtype_name(a.dtype), " ", shape_str(a.shape), " from the then-branch but ",
                      dtype_name(b.dtype), " ", shape_str(b.shape), " from the else-branch; both must match");
        out.push_back({a.dtype, a.shape, a.quant});
    }
    return out;
}

void run_if_merge(RunContext &ctx) {
    const size_t n = ctx.output_count();
    if (!ctx.has_input(0)) ctx.error(ONNXSTREAM_ERR_INTERNAL, "the condition was not computed");
    const bool taken = int_at(ctx.input(0), 0) != 0;
    const size_t first = taken ? 1 : 1 + n;
    for (size_t k = 0; k < n; ++k) {
        if (!ctx.has_input(first + k))
            ctx.error(ONNXSTREAM_ERR_INTERNAL, "output ", k, " of the ", taken ? "then" : "else",
                      "-branch was not computed although the condition chose it");
        ctx.set_output(k, ctx.input(first + k));
    }
}

} // namespace

void register_control_flow_ops(Registry &r) { r.add("IfMerge", infer_if_merge, run_if_merge).with_absent_values(); }

} // namespace onnxstream
