/*
 * Every NULL argument of every function is ONNXSTREAM_ERR_INVALID_ARGUMENT with a message naming the
 * function and the argument, readable from onnxstream_last_error() (and from the model when there is
 * one). Functions without a status tolerate NULL.
 */
#include <string.h>

#include "capi_test.h"

static const char *kModel = "a:Relu*input:x(2)*output:y(2)\n";

/* Check status, thread message and (when model != NULL) model message. */
static void expect_null(onnxstream_model_t *model, onnxstream_status_t got, const char *function,
                        const char *argument_message, int line) {
    if (!test_check_status(__FILE__, line, function, got, ONNXSTREAM_ERR_INVALID_ARGUMENT)) return;
    test_check_contains(__FILE__, line, "onnxstream_last_error()", onnxstream_last_error(), function);
    test_check_contains(__FILE__, line, "onnxstream_last_error()", onnxstream_last_error(), argument_message);
    if (model)
        test_check_contains(__FILE__, line, "onnxstream_model_last_error()", onnxstream_model_last_error(model),
                            argument_message);
}
#define EXPECT_NULL(model, call, function, message) expect_null(model, call, function, message, __LINE__)

static onnxstream_status_t read_nothing(void *user_data, const onnxstream_weight_request_t *req, void *dst) {
    (void)user_data;
    (void)req;
    (void)dst;
    return ONNXSTREAM_OK;
}
static onnxstream_status_t acquire_nothing(void *user_data, const onnxstream_weight_request_t *req,
                                           const void **data, void **token) {
    (void)user_data;
    (void)req;
    *data = NULL;
    *token = NULL;
    return ONNXSTREAM_OK;
}
static int destroyed = 0;
static void count_destroy(void *user_data) {
    (void)user_data;
    ++destroyed;
}
static int progress_fn(void *user_data, const onnxstream_progress_t *p) {
    (void)user_data;
    (void)p;
    return 0;
}

int main(void) {
    onnxstream_model_t *m = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    onnxstream_model_options_t options;
    onnxstream_weights_provider_t provider;
    onnxstream_tensor_view_t view;
    onnxstream_memory_stats_t stats;
    onnxstream_run_stats_t run_stats;
    float data[2] = {1, 2};
    int64_t shape[1] = {2};
    if (!m) return test_finish("null_args");
    onnxstream_model_options_init(&options);
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    memset(&run_stats, 0, sizeof run_stats);
    run_stats.struct_size = sizeof run_stats;
    memset(&provider, 0, sizeof provider);
    provider.struct_size = sizeof provider;
    provider.read = read_nothing;
    provider.destroy = count_destroy;

    EXPECT_NULL(NULL, onnxstream_model_create(&options, NULL), "onnxstream_model_create", "out is NULL");

    EXPECT_NULL(NULL, onnxstream_model_load(NULL, "x"), "onnxstream_model_load", "model is NULL");
    EXPECT_NULL(m, onnxstream_model_load(m, NULL), "onnxstream_model_load", "path is NULL");
    EXPECT_NULL(NULL, onnxstream_model_load_string(NULL, kModel, NULL), "onnxstream_model_load_string",
                "model is NULL");
    EXPECT_NULL(m, onnxstream_model_load_string(m, NULL, NULL), "onnxstream_model_load_string",
                "model_txt is NULL");

    EXPECT_NULL(NULL, onnxstream_model_set_weights_provider(NULL, &provider, NULL),
                "onnxstream_model_set_weights_provider", "model is NULL");
    EXPECT_NULL(m, onnxstream_model_set_weights_provider(m, NULL, NULL), "onnxstream_model_set_weights_provider",
                "provider is NULL");
    /* Bad vtables are argument errors too, and the provider is not taken (destroy not called). */
    provider.struct_size = 0;
    EXPECT_NULL(m, onnxstream_model_set_weights_provider(m, &provider, NULL), "weights provider", "struct_size");
    provider.struct_size = sizeof provider;
    provider.read = NULL;
    EXPECT_NULL(m, onnxstream_model_set_weights_provider(m, &provider, NULL), "weights provider",
                "neither read nor acquire");
    provider.acquire = acquire_nothing;
    EXPECT_NULL(m, onnxstream_model_set_weights_provider(m, &provider, NULL), "weights provider",
                "acquire but no release");
    CHECK(destroyed == 0);

    EXPECT_NULL(NULL, onnxstream_model_set_progress_callback(NULL, progress_fn, NULL),
                "onnxstream_model_set_progress_callback", "model is NULL");
    EXPECT_NULL(NULL, onnxstream_model_set_log_callback(NULL, NULL, NULL, ONNXSTREAM_LOG_INFO),
                "onnxstream_model_set_log_callback", "model is NULL");
    EXPECT_NULL(NULL, onnxstream_model_run(NULL), "onnxstream_model_run", "model is NULL");
    EXPECT_NULL(NULL, onnxstream_model_memory_stats(NULL, &stats, 0), "onnxstream_model_memory_stats",
                "model is NULL");
    EXPECT_NULL(m, onnxstream_model_memory_stats(m, NULL, 0), "onnxstream_model_memory_stats", "stats is NULL");
    stats.struct_size = 0;
    EXPECT_NULL(m, onnxstream_model_memory_stats(m, &stats, 0), "onnxstream_model_memory_stats", "struct_size is 0");
    EXPECT_NULL(NULL, onnxstream_model_run_stats(NULL, &run_stats), "onnxstream_model_run_stats", "model is NULL");
    EXPECT_NULL(m, onnxstream_model_run_stats(m, NULL), "onnxstream_model_run_stats", "stats is NULL");
    run_stats.struct_size = 0;
    EXPECT_NULL(m, onnxstream_model_run_stats(m, &run_stats), "onnxstream_model_run_stats", "struct_size is 0");

    /* Argument checks come before state checks: these fail the same way before a load... */
    EXPECT_NULL(NULL, onnxstream_model_add_output(NULL, "y"), "onnxstream_model_add_output", "model is NULL");
    EXPECT_NULL(m, onnxstream_model_add_output(m, NULL), "onnxstream_model_add_output", "name is NULL");

    CHECK_OK(onnxstream_model_load_string(m, kModel, NULL));

    /* ...and after it. */
    EXPECT_NULL(m, onnxstream_model_add_output(m, NULL), "onnxstream_model_add_output", "name is NULL");

    EXPECT_NULL(NULL, onnxstream_model_push_tensor(NULL, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, shape, data, 8),
                "onnxstream_model_push_tensor", "model is NULL");
    EXPECT_NULL(m, onnxstream_model_push_tensor(m, NULL, ONNXSTREAM_DTYPE_FLOAT32, 1, shape, data, 8),
                "onnxstream_model_push_tensor", "name is NULL");
    EXPECT_NULL(m, onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, NULL, data, 8),
                "onnxstream_model_push_tensor", "shape is NULL");
    EXPECT_NULL(m, onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, shape, NULL, 8),
                "onnxstream_model_push_tensor", "data is NULL");

    EXPECT_NULL(NULL, onnxstream_model_get_input(NULL, 0, &view), "onnxstream_model_get_input", "model is NULL");
    EXPECT_NULL(m, onnxstream_model_get_input(m, 0, NULL), "onnxstream_model_get_input", "view is NULL");
    EXPECT_NULL(NULL, onnxstream_model_get_output(NULL, 0, &view), "onnxstream_model_get_output", "model is NULL");
    EXPECT_NULL(m, onnxstream_model_get_output(m, 0, NULL), "onnxstream_model_get_output", "view is NULL");
    EXPECT_NULL(NULL, onnxstream_model_get_output_by_name(NULL, "y", &view), "onnxstream_model_get_output_by_name",
                "model is NULL");
    EXPECT_NULL(m, onnxstream_model_get_output_by_name(m, NULL, &view), "onnxstream_model_get_output_by_name",
                "name is NULL");
    EXPECT_NULL(m, onnxstream_model_get_output_by_name(m, "y", NULL), "onnxstream_model_get_output_by_name",
                "view is NULL");
    view.struct_size = 0;
    EXPECT_NULL(m, onnxstream_model_get_input(m, 0, &view), "onnxstream_model_get_input", "struct_size is 0");
    EXPECT_NULL(m, onnxstream_model_get_output(m, 0, &view), "onnxstream_model_get_output", "struct_size is 0");
    EXPECT_NULL(m, onnxstream_model_get_output_by_name(m, "y", &view), "onnxstream_model_get_output_by_name",
                "struct_size is 0");

    /* Functions without a status accept NULL. */
    onnxstream_model_destroy(NULL);
    onnxstream_model_options_init(NULL);
    CHECK(strcmp(onnxstream_model_last_error(NULL), "") == 0);
    CHECK(onnxstream_model_input_count(NULL) == 0);
    CHECK(onnxstream_model_output_count(NULL) == 0);

    /* Clearing callbacks with NULL is allowed. */
    CHECK_OK(onnxstream_model_set_progress_callback(m, NULL, NULL));
    CHECK_OK(onnxstream_model_set_log_callback(m, NULL, NULL, ONNXSTREAM_LOG_DEBUG));

    onnxstream_model_destroy(m);
    CHECK(destroyed == 0);
    return test_finish("null_args");
}
