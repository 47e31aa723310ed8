/*
 * The public header must compile on its own as C (C99, -Wall -Wextra -pedantic -Werror) and declare
 * what it documents. This file includes nothing else before it on purpose.
 */
#include "onnxstream.h"

/* C99 has no _Static_assert: a negative array size fails the build. */
#define STATIC_CHECK(name, cond) typedef char static_check_##name[(cond) ? 1 : -1]

STATIC_CHECK(version, ONNXSTREAM_VERSION ==
                          ONNXSTREAM_VERSION_MAJOR * 10000 + ONNXSTREAM_VERSION_MINOR * 100 + ONNXSTREAM_VERSION_PATCH);
STATIC_CHECK(ok_is_zero, ONNXSTREAM_OK == 0);
STATIC_CHECK(status_values, ONNXSTREAM_ERR_INVALID_ARGUMENT == 1 && ONNXSTREAM_ERR_INVALID_MODEL == 2 &&
                                ONNXSTREAM_ERR_IO == 3 && ONNXSTREAM_ERR_UNSUPPORTED == 4 &&
                                ONNXSTREAM_ERR_OUT_OF_MEMORY == 5 && ONNXSTREAM_ERR_CALLBACK == 6 &&
                                ONNXSTREAM_ERR_CANCELLED == 7 && ONNXSTREAM_ERR_BAD_STATE == 8 &&
                                ONNXSTREAM_ERR_INTERNAL == 9);
STATIC_CHECK(dtype_values, ONNXSTREAM_DTYPE_FLOAT32 == 1 && ONNXSTREAM_DTYPE_FLOAT16 == 2 &&
                               ONNXSTREAM_DTYPE_INT64 == 3 && ONNXSTREAM_DTYPE_UINT8 == 4 &&
                               ONNXSTREAM_DTYPE_INT8 == 5 && ONNXSTREAM_DTYPE_INT32 == 6 &&
                               ONNXSTREAM_DTYPE_BOOL == 7);
STATIC_CHECK(provider_values, ONNXSTREAM_PROVIDER_NOCACHE == 0 && ONNXSTREAM_PROVIDER_PREFETCH == 1 &&
                                  ONNXSTREAM_PROVIDER_MMAP == 2 && ONNXSTREAM_PROVIDER_RAM == 3);
STATIC_CHECK(struct_size_first, sizeof(((onnxstream_model_options_t *)0)->struct_size) == 4);

/* Every entry point, taken by address with its documented type. */
typedef onnxstream_status_t (*create_fn)(const onnxstream_model_options_t *, onnxstream_model_t **);
typedef onnxstream_status_t (*push_fn)(onnxstream_model_t *, const char *, onnxstream_dtype_t, size_t,
                                       const int64_t *, const void *, size_t);

int main(void) {
    create_fn create = onnxstream_model_create;
    push_fn push = onnxstream_model_push_tensor;
    void (*fns[])(void) = {
        (void (*)(void))onnxstream_version,
        (void (*)(void))onnxstream_version_string,
        (void (*)(void))onnxstream_kernel_library,
        (void (*)(void))onnxstream_status_name,
        (void (*)(void))onnxstream_dtype_name,
        (void (*)(void))onnxstream_dtype_size,
        (void (*)(void))onnxstream_last_error,
        (void (*)(void))onnxstream_model_options_init,
        (void (*)(void))onnxstream_model_destroy,
        (void (*)(void))onnxstream_model_last_error,
        (void (*)(void))onnxstream_model_load,
        (void (*)(void))onnxstream_model_load_string,
        (void (*)(void))onnxstream_model_add_output,
        (void (*)(void))onnxstream_model_set_weights_provider,
        (void (*)(void))onnxstream_model_set_progress_callback,
        (void (*)(void))onnxstream_model_set_log_callback,
        (void (*)(void))onnxstream_model_run,
        (void (*)(void))onnxstream_model_input_count,
        (void (*)(void))onnxstream_model_get_input,
        (void (*)(void))onnxstream_model_output_count,
        (void (*)(void))onnxstream_model_get_output,
        (void (*)(void))onnxstream_model_get_output_by_name,
        (void (*)(void))onnxstream_model_memory_stats,
        (void (*)(void))onnxstream_model_run_stats,
    };
    onnxstream_weights_provider_t provider = {0};
    onnxstream_tensor_view_t view = {0};
    onnxstream_progress_t progress = {0};
    onnxstream_memory_stats_t stats = {0};
    onnxstream_weight_request_t request = {0};
    onnxstream_run_stats_t run_stats = {0};
    size_t i;
    (void)provider;
    (void)view;
    (void)progress;
    (void)stats;
    (void)request;
    (void)run_stats;
    for (i = 0; i < sizeof fns / sizeof fns[0]; ++i)
        if (!fns[i]) return 1;
    return (create && push && onnxstream_version() == ONNXSTREAM_VERSION) ? 0 : 1;
}
