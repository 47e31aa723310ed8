// Op type -> implementation. Each family file registers its ops in its register_*_ops function;
// registry.cpp calls them all once (explicit calls, no static-initialiser tricks).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ops/op.h"

namespace onnxstream {

class Registry {
public:
    // Registers `type` with default OpDef fields besides infer and run; the returned entry takes the
    // OpDef::with_* setters for the others.
    OpDef &add(const std::string &type, InferFn infer, RunFn run) {
        OpDef &def = ops_[type];
        def = OpDef{};
        def.infer = infer;
        def.run = run;
        return def;
    }
    const OpDef *find(const std::string &type) const {
        auto it = ops_.find(type);
        return it == ops_.end() ? nullptr : &it->second;
    }
    std::vector<std::string> types() const;

    // The registry with every built-in op.
    static const Registry &builtin();

private:
    std::map<std::string, OpDef> ops_;
};

// One per op family file, each registering the ops that file implements.
void register_arithmetic_ops(Registry &r);      // ops/arithmetic.cpp
void register_comparison_ops(Registry &r);      // ops/comparison.cpp
void register_unary_math_ops(Registry &r);      // ops/unary_math.cpp
void register_cast_ops(Registry &r);            // ops/cast.cpp
void register_bitwise_ops(Registry &r);         // ops/bitwise.cpp
void register_activation_ops(Registry &r);      // ops/activation.cpp
void register_conv_ops(Registry &r);            // ops/conv.cpp
void register_matmul_gemm_ops(Registry &r);     // ops/matmul_gemm.cpp
void register_einsum_ops(Registry &r);          // ops/einsum.cpp
void register_normalization_ops(Registry &r);   // ops/normalization.cpp
void register_shape_ops(Registry &r);           // ops/shape_ops.cpp
void register_copy_ops(Registry &r);            // ops/copy_ops.cpp
void register_transpose_ops(Registry &r);       // ops/transpose.cpp
void register_gather_scatter_ops(Registry &r);  // ops/gather_scatter.cpp
void register_reduce_ops(Registry &r);          // ops/reduce.cpp
void register_scan_sort_ops(Registry &r);       // ops/scan_sort.cpp
void register_recurrent_ops(Registry &r);       // ops/recurrent.cpp
void register_resize_ops(Registry &r);          // ops/resize.cpp
void register_pool_ops(Registry &r);            // ops/pool.cpp
void register_attention_ops(Registry &r);       // ops/attention.cpp
void register_feed_forward_ops(Registry &r);    // ops/feed_forward.cpp
void register_quantize_linear_ops(Registry &r); // ops/quantize_linear.cpp
void register_conv_integer_ops(Registry &r);    // ops/conv_integer.cpp
void register_grid_sample_ops(Registry &r);     // ops/grid_sample.cpp
void register_control_flow_ops(Registry &r);    // ops/control_flow.cpp
void register_loss_ops(Registry &r);            // ops/loss.cpp
void register_lrn_mvn_ops(Registry &r);         // ops/lrn_mvn.cpp
void register_window_function_ops(Registry &r); // ops/window_functions.cpp
void register_nms_ops(Registry &r);             // ops/nms.cpp
void register_input_dims_ops(Registry &r);      // ops/input_dims.cpp

} // namespace onnxstream
