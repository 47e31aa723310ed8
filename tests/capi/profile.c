/*
 * Profiling through the C API: ONNXSTREAM_FLAG_PROFILE, onnxstream_model_get_op_profile (fields against
 * hand-computed shapes, bytes and FLOPs), onnxstream_model_render_profile (both formats, argument checks),
 * the profile of the last successful run surviving a cancelled one, and onnxstream_measure_roofline.
 * Also ONNXSTREAM_FLAG_SPIN_WORKERS (thread pool workers kept spinning): accepted, same output with 2 threads.
 */
#include <stddef.h>
#include <string.h>

#include "capi_test.h"

/* y = x · W (2x3 · 3x4), z = relu(y), s = z + z */
static const char *kModel = "mm:MatMul*input:x(2,3);w.bin(float32:3,4)*output:y(2,4)\n"
                            "act:Relu*input:y(2,4)*output:z(2,4)\n"
                            "sum:Add*input:z(2,4);z(2,4)*output:s(2,4)\n";
static const float kX[6] = {1, 2, 3, -1, 0.5f, 2};
static const int64_t kXShape[2] = {2, 3};

static onnxstream_model_t *new_model_threads(uint32_t flags, int32_t threads) {
    onnxstream_model_options_t options;
    onnxstream_model_t *model = NULL;
    onnxstream_model_options_init(&options);
    options.threads = threads;
    options.provider = ONNXSTREAM_PROVIDER_NOCACHE;
    options.flags = flags;
    if (!CHECK_OK(onnxstream_model_create(&options, &model))) return NULL;
    return model;
}

static onnxstream_model_t *new_model(uint32_t flags) { return new_model_threads(flags, 1); }

/* s = 2 relu(x W), computed here. */
static void check_sum(onnxstream_model_t *m, const float *w) {
    onnxstream_tensor_view_t view;
    int r, c, k;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    if (!CHECK_OK(onnxstream_model_get_output_by_name(m, "s", &view))) return;
    for (r = 0; r < 2; ++r)
        for (c = 0; c < 4; ++c) {
            float y = 0;
            for (k = 0; k < 3; ++k) y += kX[r * 3 + k] * w[k * 4 + c];
            CHECK_FLOAT(((const float *)view.data)[r * 4 + c], 2 * (y > 0 ? y : 0));
        }
}

static int load(onnxstream_model_t *m, const char *dir) {
    return CHECK_OK(onnxstream_model_load_string(m, kModel, dir)) &&
           CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 2, kXShape, kX, sizeof kX));
}

static int cancel_first(void *user_data, const onnxstream_progress_t *p) {
    (void)user_data;
    (void)p;
    return 1;
}

static void check_ops(onnxstream_model_t *m) {
    onnxstream_op_profile_t op;
    size_t i;
    uint64_t previous_end = 0;
    CHECK(onnxstream_model_profile_op_count(m) == 3);
    for (i = 0; i < 3; ++i) {
        memset(&op, 0, sizeof op);
        op.struct_size = sizeof op;
        if (!CHECK_OK(onnxstream_model_get_op_profile(m, i, &op))) return;
        CHECK(op.op_index == i);
        CHECK(op.line == i + 1);
        CHECK(op.start_ns >= previous_end);
        previous_end = op.start_ns + op.duration_ns;
        CHECK(op.kernel_prepare_ns <= op.duration_ns && op.weight_wait_ns <= op.duration_ns);
        CHECK(op.memory_bytes > 0);
    }
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    CHECK_OK(onnxstream_model_get_op_profile(m, 0, &op));
    CHECK(strcmp(op.op_name, "mm") == 0 && strcmp(op.op_type, "MatMul") == 0);
    CHECK(strcmp(op.inputs, "float32[2,3], w:float32[3,4]") == 0);
    CHECK(strcmp(op.outputs, "float32[2,4]") == 0);
    CHECK(op.flops == 2 * 2 * 4 * 3);       /* 2 per multiply-add, M x N x K */
    CHECK(op.weight_bytes == 3 * 4 * 4);    /* W */
    CHECK(op.activation_bytes == (6 + 8) * 4); /* x in, y out */
    memset(&op, 0, sizeof op);
    op.struct_size = sizeof op;
    CHECK_OK(onnxstream_model_get_op_profile(m, 2, &op));
    CHECK(strcmp(op.op_type, "Add") == 0 && op.flops == 0 && op.weight_bytes == 0);
    CHECK(op.activation_bytes == 3 * 8 * 4);

    /* A caller built against an older, shorter struct: nothing past its struct_size is written. */
    memset(&op, 0x5a, sizeof op);
    op.struct_size = (uint32_t)offsetof(onnxstream_op_profile_t, inputs);
    CHECK_OK(onnxstream_model_get_op_profile(m, 0, &op));
    CHECK(strcmp(op.op_type, "MatMul") == 0);
    CHECK(op.flops == 0x5a5a5a5a5a5a5a5aull);

    op.struct_size = sizeof op;
    CHECK_STATUS(onnxstream_model_get_op_profile(m, 3, &op), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "out of range");
    CHECK_STATUS(onnxstream_model_get_op_profile(m, 0, NULL), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_get_op_profile(NULL, 0, &op), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    op.struct_size = 0;
    CHECK_STATUS(onnxstream_model_get_op_profile(m, 0, &op), ONNXSTREAM_ERR_INVALID_ARGUMENT);
}

static void check_render(onnxstream_model_t *m) {
    const char *text = NULL;
    size_t length = 0;
    onnxstream_roofline_t peak;
    if (CHECK_OK(onnxstream_model_render_profile(m, ONNXSTREAM_PROFILE_TRACE_JSON, NULL, &text, &length))) {
        CHECK(length == strlen(text));
        CHECK_CONTAINS(text, "\"traceEvents\"");
        CHECK_CONTAINS(text, "\"name\":\"MatMul\"");
        CHECK_CONTAINS(text, "\"op\":\"mm\"");
        CHECK_CONTAINS(text, "\"flops\":48");
        CHECK_CONTAINS(text, "\"cat\":\"weight read\",\"name\":\"w.bin\"");
    }
    if (CHECK_OK(onnxstream_model_render_profile(m, ONNXSTREAM_PROFILE_SUMMARY, NULL, &text, NULL))) {
        CHECK_CONTAINS(text, "MatMul");
        CHECK_CONTAINS(text, "total");
        CHECK(strstr(text, "% peak") == NULL);
    }
    memset(&peak, 0, sizeof peak);
    peak.struct_size = sizeof peak;
    peak.flops_per_s = 1e9;
    peak.bytes_per_s = 1e9;
    if (CHECK_OK(onnxstream_model_render_profile(m, ONNXSTREAM_PROFILE_SUMMARY, &peak, &text, &length)))
        CHECK_CONTAINS(text, "% peak");
    CHECK_STATUS(onnxstream_model_render_profile(m, (onnxstream_profile_format_t)7, NULL, &text, NULL),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "unknown format");
    CHECK_STATUS(onnxstream_model_render_profile(m, ONNXSTREAM_PROFILE_SUMMARY, NULL, NULL, NULL),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_render_profile(NULL, ONNXSTREAM_PROFILE_SUMMARY, NULL, &text, NULL),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    peak.struct_size = 0;
    CHECK_STATUS(onnxstream_model_render_profile(m, ONNXSTREAM_PROFILE_SUMMARY, &peak, &text, NULL),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
}

static void check_roofline(void) {
    onnxstream_roofline_t r;
    memset(&r, 0, sizeof r);
    CHECK_STATUS(onnxstream_measure_roofline(1, &r), ONNXSTREAM_ERR_INVALID_ARGUMENT); /* struct_size 0 */
    r.struct_size = sizeof r;
    CHECK_STATUS(onnxstream_measure_roofline(-1, &r), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_measure_roofline(1, NULL), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    if (CHECK_OK(onnxstream_measure_roofline(1, &r))) CHECK(r.flops_per_s > 1e6 && r.bytes_per_s > 1e6);
}

int main(void) {
    char dir[256];
    const float w[12] = {1, 0, -1, 2, 0.5f, 1, 0, -2, 1, 1, 1, 1};
    const char *text = NULL;
    onnxstream_model_t *off, *on;
    if (!test_temp_dir(dir, sizeof dir) || !test_write_file(dir, "w.bin", w, sizeof w)) return test_finish("profile");

    /* Without the flag there is no profile, and asking for one says how to get it. */
    off = new_model(0);
    if (off && load(off, dir) && CHECK_OK(onnxstream_model_run(off))) {
        CHECK(onnxstream_model_profile_op_count(off) == 0);
        CHECK_STATUS(onnxstream_model_render_profile(off, ONNXSTREAM_PROFILE_SUMMARY, NULL, &text, NULL),
                     ONNXSTREAM_ERR_BAD_STATE);
        CHECK_CONTAINS(onnxstream_model_last_error(off), "ONNXSTREAM_FLAG_PROFILE");
    }
    onnxstream_model_destroy(off);
    CHECK(onnxstream_model_profile_op_count(NULL) == 0);

    on = new_model(ONNXSTREAM_FLAG_PROFILE);
    if (on && load(on, dir)) {
        CHECK(onnxstream_model_profile_op_count(on) == 0); /* before the first run */
        CHECK_STATUS(onnxstream_model_render_profile(on, ONNXSTREAM_PROFILE_TRACE_JSON, NULL, &text, NULL),
                     ONNXSTREAM_ERR_BAD_STATE);
        if (CHECK_OK(onnxstream_model_run(on))) {
            check_ops(on);
            check_render(on);
            /* A cancelled run leaves the last successful run's profile in place. */
            CHECK_OK(onnxstream_model_set_progress_callback(on, cancel_first, NULL));
            CHECK_STATUS(onnxstream_model_run(on), ONNXSTREAM_ERR_CANCELLED);
            check_ops(on);
        }
    }
    onnxstream_model_destroy(on);

    /* Workers kept spinning: the same result, from a 2-thread pool. */
    on = new_model_threads(ONNXSTREAM_FLAG_SPIN_WORKERS | ONNXSTREAM_FLAG_PROFILE, 2);
    if (on && load(on, dir) && CHECK_OK(onnxstream_model_run(on))) {
        check_sum(on, w);
        CHECK(onnxstream_model_profile_op_count(on) == 3);
    }
    onnxstream_model_destroy(on);
    off = new_model_threads(0, 2);
    if (off && load(off, dir) && CHECK_OK(onnxstream_model_run(off))) check_sum(off, w);
    onnxstream_model_destroy(off);
    check_roofline();
    test_remove_dir(dir);
    return test_finish("profile");
}
