/* Prints the layout of every struct and the value of every constant in onnxstream.h as
 * "type field value" rows. build.rs compiles and runs it; src/sys.rs's layout test compares the rows
 * with the hand-written Rust mirror, so the FFI cannot drift silently when the header changes. */
#include <stddef.h>
#include <stdio.h>

#include "onnxstream.h"

#define SIZE(T) printf("%s sizeof %lu\n", #T, (unsigned long)sizeof(T))
#define FIELD(T, f) printf("%s %s %lu\n", #T, #f, (unsigned long)offsetof(T, f))
#define CONST(c) printf("const %s %lu\n", #c, (unsigned long)(c))

int main(void) {
    SIZE(onnxstream_status_t);
    SIZE(onnxstream_dtype_t);
    SIZE(onnxstream_log_level_t);
    SIZE(onnxstream_profile_format_t);

    SIZE(onnxstream_model_options_t);
    FIELD(onnxstream_model_options_t, struct_size);
    FIELD(onnxstream_model_options_t, threads);
    FIELD(onnxstream_model_options_t, provider);
    FIELD(onnxstream_model_options_t, flags);
    FIELD(onnxstream_model_options_t, prefetch_bytes);
    FIELD(onnxstream_model_options_t, memory_mode);
    FIELD(onnxstream_model_options_t, attention);
    FIELD(onnxstream_model_options_t, attention_slices);
    FIELD(onnxstream_model_options_t, reserved0);
    FIELD(onnxstream_model_options_t, weight_chunk_bytes);
    FIELD(onnxstream_model_options_t, cache_path);
    FIELD(onnxstream_model_options_t, max_bytes);
    FIELD(onnxstream_model_options_t, arithmetic);
    FIELD(onnxstream_model_options_t, kept_kernel_bytes);

    SIZE(onnxstream_weight_request_t);
    FIELD(onnxstream_weight_request_t, struct_size);
    FIELD(onnxstream_weight_request_t, file);
    FIELD(onnxstream_weight_request_t, dtype);
    FIELD(onnxstream_weight_request_t, rank);
    FIELD(onnxstream_weight_request_t, shape);
    FIELD(onnxstream_weight_request_t, byte_size);
    FIELD(onnxstream_weight_request_t, error_message);
    FIELD(onnxstream_weight_request_t, error_message_capacity);
    FIELD(onnxstream_weight_request_t, bytes_produced);

    SIZE(onnxstream_weights_provider_t);
    FIELD(onnxstream_weights_provider_t, struct_size);
    FIELD(onnxstream_weights_provider_t, read);
    FIELD(onnxstream_weights_provider_t, acquire);
    FIELD(onnxstream_weights_provider_t, release);
    FIELD(onnxstream_weights_provider_t, prefetch);
    FIELD(onnxstream_weights_provider_t, destroy);

    SIZE(onnxstream_progress_t);
    FIELD(onnxstream_progress_t, struct_size);
    FIELD(onnxstream_progress_t, op_index);
    FIELD(onnxstream_progress_t, op_count);
    FIELD(onnxstream_progress_t, op_name);
    FIELD(onnxstream_progress_t, op_type);
    FIELD(onnxstream_progress_t, elapsed_us);
    FIELD(onnxstream_progress_t, current_bytes);
    FIELD(onnxstream_progress_t, peak_bytes);

    SIZE(onnxstream_tensor_view_t);
    FIELD(onnxstream_tensor_view_t, struct_size);
    FIELD(onnxstream_tensor_view_t, name);
    FIELD(onnxstream_tensor_view_t, dtype);
    FIELD(onnxstream_tensor_view_t, rank);
    FIELD(onnxstream_tensor_view_t, shape);
    FIELD(onnxstream_tensor_view_t, data);
    FIELD(onnxstream_tensor_view_t, byte_size);

    SIZE(onnxstream_memory_stats_t);
    FIELD(onnxstream_memory_stats_t, struct_size);
    FIELD(onnxstream_memory_stats_t, current_bytes);
    FIELD(onnxstream_memory_stats_t, peak_bytes);

    SIZE(onnxstream_run_stats_t);
    FIELD(onnxstream_run_stats_t, struct_size);
    FIELD(onnxstream_run_stats_t, run_us);
    FIELD(onnxstream_run_stats_t, weight_bytes_read);
    FIELD(onnxstream_run_stats_t, weight_read_us);
    FIELD(onnxstream_run_stats_t, weight_wait_us);
    FIELD(onnxstream_run_stats_t, layout_transposes);
    FIELD(onnxstream_run_stats_t, fp16_ops);
    FIELD(onnxstream_run_stats_t, fp16_fallbacks);
    FIELD(onnxstream_run_stats_t, arithmetic);
    FIELD(onnxstream_run_stats_t, weight_bytes_copied);
    FIELD(onnxstream_run_stats_t, int8_ops);
    FIELD(onnxstream_run_stats_t, packed_weights_mapped);
    FIELD(onnxstream_run_stats_t, packed_weights_stored);
    FIELD(onnxstream_run_stats_t, kept_kernels);
    FIELD(onnxstream_run_stats_t, kept_kernel_bytes);

    SIZE(onnxstream_op_profile_t);
    FIELD(onnxstream_op_profile_t, struct_size);
    FIELD(onnxstream_op_profile_t, op_index);
    FIELD(onnxstream_op_profile_t, line);
    FIELD(onnxstream_op_profile_t, op_name);
    FIELD(onnxstream_op_profile_t, op_type);
    FIELD(onnxstream_op_profile_t, inputs);
    FIELD(onnxstream_op_profile_t, outputs);
    FIELD(onnxstream_op_profile_t, start_ns);
    FIELD(onnxstream_op_profile_t, duration_ns);
    FIELD(onnxstream_op_profile_t, weight_wait_ns);
    FIELD(onnxstream_op_profile_t, kernel_prepare_ns);
    FIELD(onnxstream_op_profile_t, flops);
    FIELD(onnxstream_op_profile_t, weight_bytes);
    FIELD(onnxstream_op_profile_t, activation_bytes);
    FIELD(onnxstream_op_profile_t, memory_bytes);

    SIZE(onnxstream_roofline_t);
    FIELD(onnxstream_roofline_t, struct_size);
    FIELD(onnxstream_roofline_t, flops_per_s);
    FIELD(onnxstream_roofline_t, bytes_per_s);

    CONST(ONNXSTREAM_VERSION);
    CONST(ONNXSTREAM_OK);
    CONST(ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CONST(ONNXSTREAM_ERR_INVALID_MODEL);
    CONST(ONNXSTREAM_ERR_IO);
    CONST(ONNXSTREAM_ERR_UNSUPPORTED);
    CONST(ONNXSTREAM_ERR_OUT_OF_MEMORY);
    CONST(ONNXSTREAM_ERR_CALLBACK);
    CONST(ONNXSTREAM_ERR_CANCELLED);
    CONST(ONNXSTREAM_ERR_BAD_STATE);
    CONST(ONNXSTREAM_ERR_INTERNAL);
    CONST(ONNXSTREAM_DTYPE_FLOAT32);
    CONST(ONNXSTREAM_DTYPE_FLOAT16);
    CONST(ONNXSTREAM_DTYPE_INT64);
    CONST(ONNXSTREAM_DTYPE_UINT8);
    CONST(ONNXSTREAM_DTYPE_INT8);
    CONST(ONNXSTREAM_DTYPE_INT32);
    CONST(ONNXSTREAM_DTYPE_BOOL);
    CONST(ONNXSTREAM_DTYPE_FLOAT64);
    CONST(ONNXSTREAM_DTYPE_INT16);
    CONST(ONNXSTREAM_DTYPE_UINT16);
    CONST(ONNXSTREAM_DTYPE_UINT32);
    CONST(ONNXSTREAM_DTYPE_UINT64);
    CONST(ONNXSTREAM_DTYPE_BFLOAT16);
    CONST(ONNXSTREAM_DTYPE_FLOAT8E4M3FN);
    CONST(ONNXSTREAM_DTYPE_FLOAT8E4M3FNUZ);
    CONST(ONNXSTREAM_DTYPE_FLOAT8E5M2);
    CONST(ONNXSTREAM_DTYPE_FLOAT8E5M2FNUZ);
    CONST(ONNXSTREAM_DTYPE_INT4);
    CONST(ONNXSTREAM_DTYPE_UINT4);
    CONST(ONNXSTREAM_PROVIDER_AUTO);
    CONST(ONNXSTREAM_MEMORY_BALANCED);
    CONST(ONNXSTREAM_MEMORY_MIN);
    CONST(ONNXSTREAM_MEMORY_MAX_SPEED);
    CONST(ONNXSTREAM_ATTENTION_AUTO);
    CONST(ONNXSTREAM_ATTENTION_FULL);
    CONST(ONNXSTREAM_ATTENTION_SLICED);
    CONST(ONNXSTREAM_ATTENTION_FLASH);
    CONST(ONNXSTREAM_PROVIDER_NOCACHE);
    CONST(ONNXSTREAM_PROVIDER_PREFETCH);
    CONST(ONNXSTREAM_PROVIDER_MMAP);
    CONST(ONNXSTREAM_PROVIDER_RAM);
    CONST(ONNXSTREAM_FLAG_KEEP_ALL_OUTPUTS);
    CONST(ONNXSTREAM_FLAG_NCHW_ONLY);
    CONST(ONNXSTREAM_FLAG_PROFILE);
    CONST(ONNXSTREAM_FLAG_SPIN_WORKERS);
    CONST(ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS);
    CONST(ONNXSTREAM_PROFILE_TRACE_JSON);
    CONST(ONNXSTREAM_PROFILE_SUMMARY);
    CONST(ONNXSTREAM_LOG_DEBUG);
    CONST(ONNXSTREAM_LOG_INFO);
    CONST(ONNXSTREAM_LOG_WARNING);
    CONST(ONNXSTREAM_LOG_ERROR);
    return 0;
}
