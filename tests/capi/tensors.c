/*
 * Pushing inputs, running, reading outputs: shape/dtype/size checks on push, state errors (run before
 * load or push), outputs by index and by escaped or original name, add_output keeping an intermediate,
 * input descriptions, partial view structs, memory statistics. The model (Add of a weight, Relu, Mul)
 * is checked against values computed here by hand.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

/* out = relu(x + b)^2, with the intermediate "mid.1" and the output "out.0" (escaped in model.txt). */
static const char *kModel = "add1:Add*input:input_2E_1(2,3);b.bin(float32:3)*output:mid_2E_1(2,3)\n"
                            "relu1:Relu*input:mid_2E_1(2,3)*output:z(2,3)\n"
                            "mul1:Mul*input:z(2,3);z(2,3)*output:out_2E_0(2,3)\n";
static const float kB[3] = {1.0f, 0.5f, -1.0f};
static const float kX[6] = {-3, -2, -1, 0, 1, 2};
/* mid = x + b = {-2, -1.5, -2, 1, 1.5, 1}; z = {0, 0, 0, 1, 1.5, 1}; out = {0, 0, 0, 1, 2.25, 1} */
static const float kMid[6] = {-2.0f, -1.5f, -2.0f, 1.0f, 1.5f, 1.0f};
static const float kOut[6] = {0.0f, 0.0f, 0.0f, 1.0f, 2.25f, 1.0f};
static const int64_t kShape[2] = {2, 3};

static void check_view(const onnxstream_tensor_view_t *v, const char *name, const float *expected) {
    size_t i;
    CHECK(strcmp(v->name, name) == 0);
    CHECK(v->dtype == ONNXSTREAM_DTYPE_FLOAT32);
    CHECK(v->rank == 2);
    if (v->rank == 2) CHECK(v->shape[0] == 2 && v->shape[1] == 3);
    CHECK(v->byte_size == 24);
    CHECK(v->data != NULL);
    if (v->data && v->byte_size == 24)
        for (i = 0; i < 6; ++i) CHECK_FLOAT(((const float *)v->data)[i], expected[i]);
}

static void test_state_errors(const char *dir) {
    onnxstream_model_t *m = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    onnxstream_tensor_view_t view;
    if (!m) return;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;

    CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_BAD_STATE);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "no model loaded");
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 2, kShape, kX, sizeof kX),
                 ONNXSTREAM_ERR_BAD_STATE);
    CHECK_STATUS(onnxstream_model_add_output(m, "z"), ONNXSTREAM_ERR_BAD_STATE);
    CHECK_STATUS(onnxstream_model_get_input(m, 0, &view), ONNXSTREAM_ERR_BAD_STATE);
    CHECK_STATUS(onnxstream_model_get_output_by_name(m, "z", &view), ONNXSTREAM_ERR_BAD_STATE);
    CHECK_STATUS(onnxstream_model_get_output(m, 0, &view), ONNXSTREAM_ERR_INVALID_ARGUMENT);

    /* Weights folder required for the built-in provider. */
    CHECK_STATUS(onnxstream_model_load_string(m, kModel, NULL), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "b.bin");
    CHECK_OK(onnxstream_model_load_string(m, kModel, dir));

    CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_BAD_STATE);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "input_2E_1");
    CHECK_CONTAINS(onnxstream_model_last_error(m), "not pushed");
    CHECK(onnxstream_model_output_count(m) == 0);
    onnxstream_model_destroy(m);
}

static void test_push_checks(onnxstream_model_t *m) {
    int64_t wrong_dims[2] = {3, 2};
    int64_t rank3[3] = {1, 2, 3};
    int64_t negative[2] = {-2, -3};
    int64_t i64[6] = {0, 1, 2, 3, 4, 5};

    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 2, wrong_dims, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "(3,2)");
    CHECK_CONTAINS(onnxstream_model_last_error(m), "(2,3)");
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 3, rank3, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 1, kShape, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 0, NULL, kX, 4),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 2, negative, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "negative");
    /* Byte size must be dtype size x element count. */
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 2, kShape, kX, 20),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "byte_size is 20");
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_INT64, 2, kShape, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "needs 48");
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", (onnxstream_dtype_t)0, 2, kShape, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "dtype");
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", (onnxstream_dtype_t)99, 2, kShape, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 17, kShape, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    /* Only graph inputs can be pushed. */
    CHECK_STATUS(onnxstream_model_push_tensor(m, "nope", ONNXSTREAM_DTYPE_FLOAT32, 2, kShape, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "input_2E_1"); /* lists the inputs */
    CHECK_STATUS(onnxstream_model_push_tensor(m, "z", ONNXSTREAM_DTYPE_FLOAT32, 2, kShape, kX, sizeof kX),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_push_tensor(m, "b.bin", ONNXSTREAM_DTYPE_FLOAT32, 1, kShape + 1, kB, sizeof kB),
                 ONNXSTREAM_ERR_INVALID_ARGUMENT);

    /* A well-formed int64 push is accepted (model.txt does not record activation dtypes) but the run
     * then fails its type check before any op runs, and leaves no outputs. */
    CHECK_OK(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_INT64, 2, kShape, i64, sizeof i64));
    {
        onnxstream_status_t s = onnxstream_model_run(m);
        CHECK(s == ONNXSTREAM_ERR_INVALID_MODEL || s == ONNXSTREAM_ERR_UNSUPPORTED);
        CHECK_CONTAINS(onnxstream_model_last_error(m), "add1");
        CHECK(onnxstream_model_output_count(m) == 0);
    }
}

static void test_run_and_outputs(const char *dir) {
    onnxstream_model_t *m = test_new_model(ONNXSTREAM_PROVIDER_PREFETCH);
    onnxstream_tensor_view_t view, small;
    onnxstream_memory_stats_t stats;
    float x2[6];
    size_t i;
    if (!m) return;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    CHECK_OK(onnxstream_model_load_string(m, kModel, dir));

    /* Inputs as declared. */
    CHECK(onnxstream_model_input_count(m) == 1);
    CHECK_OK(onnxstream_model_get_input(m, 0, &view));
    CHECK(strcmp(view.name, "input_2E_1") == 0);
    CHECK(view.rank == 2 && view.shape[0] == 2 && view.shape[1] == 3);
    CHECK(view.dtype == ONNXSTREAM_DTYPE_FLOAT32);
    CHECK(view.data == NULL);
    CHECK_STATUS(onnxstream_model_get_input(m, 1, &view), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "out of range");

    test_push_checks(m);

    /* Push by the escaped name, run, read by index. */
    CHECK_OK(onnxstream_model_push_tensor(m, "input_2E_1", ONNXSTREAM_DTYPE_FLOAT32, 2, kShape, kX, sizeof kX));
    CHECK_OK(onnxstream_model_run(m));
    CHECK(onnxstream_model_output_count(m) == 1);
    CHECK_OK(onnxstream_model_get_output(m, 0, &view));
    check_view(&view, "out_2E_0", kOut);
    CHECK_STATUS(onnxstream_model_get_output(m, 1, &view), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "out of range");
    CHECK_STATUS(onnxstream_model_get_output(m, (size_t)-1, &view), ONNXSTREAM_ERR_INVALID_ARGUMENT);

    /* By escaped and original names. */
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    CHECK_OK(onnxstream_model_get_output_by_name(m, "out_2E_0", &view));
    check_view(&view, "out_2E_0", kOut);
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    CHECK_OK(onnxstream_model_get_output_by_name(m, "out.0", &view));
    check_view(&view, "out_2E_0", kOut);
    CHECK_STATUS(onnxstream_model_get_output_by_name(m, "mid.1", &view), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_get_output_by_name(m, "nope", &view), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "nope");

    /* A view struct from an older header (smaller struct_size) gets only the fields that fit. */
    memset(&small, 0xAB, sizeof small);
    small.struct_size = (uint32_t)offsetof(onnxstream_tensor_view_t, rank);
    CHECK_OK(onnxstream_model_get_output(m, 0, &small));
    CHECK(strcmp(small.name, "out_2E_0") == 0);
    CHECK(small.dtype == ONNXSTREAM_DTYPE_FLOAT32);
    {
        unsigned char pattern[sizeof small.rank];
        memset(pattern, 0xAB, sizeof pattern);
        CHECK(memcmp(&small.rank, pattern, sizeof pattern) == 0);
    }

    /* Pushed inputs stay set: running again gives the same result. Push by the original name. */
    CHECK_OK(onnxstream_model_run(m));
    CHECK_OK(onnxstream_model_get_output(m, 0, &view));
    check_view(&view, "out_2E_0", kOut);
    for (i = 0; i < 6; ++i) x2[i] = kX[i] + 1.0f;
    CHECK_OK(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 2, kShape, x2, sizeof x2));
    CHECK_OK(onnxstream_model_run(m));
    CHECK_OK(onnxstream_model_get_output(m, 0, &view));
    for (i = 0; i < 6; ++i) {
        float y = x2[i] + kB[i % 3];
        float z = y > 0 ? y : 0;
        CHECK_FLOAT(((const float *)view.data)[i], z * z);
    }

    /* Keep an intermediate, by its original name. */
    CHECK_OK(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 2, kShape, kX, sizeof kX));
    CHECK_STATUS(onnxstream_model_add_output(m, "nope"), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(m), "nope");
    CHECK_OK(onnxstream_model_add_output(m, "mid.1"));
    CHECK_OK(onnxstream_model_add_output(m, "mid_2E_1")); /* same tensor: no duplicate */
    CHECK_OK(onnxstream_model_run(m));
    CHECK(onnxstream_model_output_count(m) == 2);
    CHECK_OK(onnxstream_model_get_output(m, 0, &view));
    check_view(&view, "out_2E_0", kOut);
    CHECK_OK(onnxstream_model_get_output(m, 1, &view));
    check_view(&view, "mid_2E_1", kMid);
    CHECK_OK(onnxstream_model_get_output_by_name(m, "mid.1", &view));
    check_view(&view, "mid_2E_1", kMid);

    /* Memory: the pushed input plus the two outputs are alive; the peak saw at least that. */
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_OK(onnxstream_model_memory_stats(m, &stats, 0));
    CHECK(stats.current_bytes >= 3 * 24);
    CHECK(stats.peak_bytes >= stats.current_bytes);
    CHECK_OK(onnxstream_model_memory_stats(m, &stats, 1)); /* report, then reset the peak */
    CHECK_OK(onnxstream_model_memory_stats(m, &stats, 0));
    CHECK(stats.peak_bytes == stats.current_bytes);
    {
        onnxstream_run_stats_t rs;
        memset(&rs, 0, sizeof rs);
        rs.struct_size = sizeof rs;
        CHECK_OK(onnxstream_model_run_stats(m, &rs));
        CHECK(rs.weight_bytes_read == sizeof kB);
    }

    /* A failed run clears the previous outputs. */
    CHECK_OK(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT16, 2, kShape, kX, 12));
    CHECK_OK(onnxstream_model_get_input(m, 0, &view));
    CHECK(view.dtype == ONNXSTREAM_DTYPE_FLOAT16);
    CHECK(onnxstream_model_run(m) != ONNXSTREAM_OK);
    CHECK(onnxstream_model_output_count(m) == 0);
    CHECK_STATUS(onnxstream_model_get_output(m, 0, &view), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    onnxstream_model_destroy(m);
}

static void test_scalar_and_every_provider(const char *dir) {
    /* A scalar weight "(float32:)" broadcast over a 1-D input, with each built-in provider. */
    static const char *model = "m:Mul*input:x(4);s.bin(float32:)*output:y(4)\n";
    static const float x[4] = {1, -2, 3, 0.5f};
    const int64_t shape[1] = {4};
    int kind;
    for (kind = ONNXSTREAM_PROVIDER_NOCACHE; kind <= ONNXSTREAM_PROVIDER_RAM; ++kind) {
        onnxstream_model_t *m = test_new_model(kind);
        onnxstream_tensor_view_t view;
        int run;
        if (!m) continue;
        memset(&view, 0, sizeof view);
        view.struct_size = sizeof view;
        CHECK_OK(onnxstream_model_load_string(m, model, dir));
        CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, shape, x, sizeof x));
        for (run = 0; run < 2; ++run) {
            CHECK_OK(onnxstream_model_run(m));
            if (CHECK_OK(onnxstream_model_get_output(m, 0, &view))) {
                CHECK(view.rank == 1 && view.shape[0] == 4);
                CHECK_FLOAT(((const float *)view.data)[0], -1.5f);
                CHECK_FLOAT(((const float *)view.data)[1], 3.0f);
                CHECK_FLOAT(((const float *)view.data)[2], -4.5f);
                CHECK_FLOAT(((const float *)view.data)[3], -0.75f);
            }
        }
        onnxstream_model_destroy(m);
    }
}

static void test_load_from_folder(const char *dir) {
    /* onnxstream_model_load with a folder and with a model.txt path. */
    char path[4200];
    onnxstream_model_t *m;
    onnxstream_tensor_view_t view;
    int variant;
    if (!test_write_file(dir, "model.txt", kModel, strlen(kModel))) return;
    for (variant = 0; variant < 3; ++variant) {
        m = test_new_model(ONNXSTREAM_PROVIDER_MMAP);
        if (!m) return;
        if (variant == 0) snprintf(path, sizeof path, "%s", dir);
        else if (variant == 1) snprintf(path, sizeof path, "%s/", dir);
        else snprintf(path, sizeof path, "%s/model.txt", dir);
        memset(&view, 0, sizeof view);
        view.struct_size = sizeof view;
        CHECK_OK(onnxstream_model_load(m, path));
        CHECK_OK(onnxstream_model_push_tensor(m, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 2, kShape, kX, sizeof kX));
        CHECK_OK(onnxstream_model_run(m));
        if (CHECK_OK(onnxstream_model_get_output_by_name(m, "out.0", &view))) check_view(&view, "out_2E_0", kOut);
        onnxstream_model_destroy(m);
    }
}

int main(void) {
    char dir[4096];
    if (!test_temp_dir(dir, sizeof dir)) return test_finish("tensors");
    if (test_write_file(dir, "b.bin", kB, sizeof kB)) {
        static const float s = -1.5f;
        test_write_file(dir, "s.bin", &s, sizeof s);
        test_state_errors(dir);
        test_run_and_outputs(dir);
        test_scalar_and_every_provider(dir);
        test_load_from_folder(dir);
    }
    test_remove_dir(dir);
    return test_finish("tensors");
}
