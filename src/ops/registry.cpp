#include "ops/registry.h"

namespace onnxstream {

std::vector<std::string> Registry::types() const {
    std::vector<std::string> out;
    for (const auto &kv : ops_) out.push_back(kv.first);
    return out;
}

const Registry &Registry::builtin() {
    static const Registry registry = [] {
        Registry r;
        register_arithmetic_ops(r);
        register_comparison_ops(r);
        register_unary_math_ops(r);
        register_cast_ops(r);
        register_bitwise_ops(r);
        register_activation_ops(r);
        register_conv_ops(r);
        register_matmul_gemm_ops(r);
        register_einsum_ops(r);
        register_normalization_ops(r);
        register_shape_ops(r);
        register_copy_ops(r);
        register_transpose_ops(r);
        register_gather_scatter_ops(r);
        register_reduce_ops(r);
        register_scan_sort_ops(r);
        register_recurrent_ops(r);
        register_resize_ops(r);
        register_pool_ops(r);
        register_attention_ops(r);
        register_feed_forward_ops(r);
        register_quantize_linear_ops(r);
        register_conv_integer_ops(r);
        register_grid_sample_ops(r);
        register_control_flow_ops(r);
        register_loss_ops(r);
        register_lrn_mvn_ops(r);
        register_window_function_ops(r);
        register_nms_ops(r);
        register_input_dims_ops(r);
        return r;
    }();
    return registry;
}

} // namespace onnxstream
