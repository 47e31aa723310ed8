/*
 * Model lifecycle and the context-free functions: create/destroy, option defaults and validation,
 * version, status and dtype names, error message plumbing, double load.
 */
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

static const char *kModel = "a:Relu*input:x(2)*output:y(2)\n";

static void test_versions(void) {
    char expected[64];
    CHECK(onnxstream_version() == ONNXSTREAM_VERSION);
    CHECK(ONNXSTREAM_VERSION == ONNXSTREAM_VERSION_MAJOR * 10000 + ONNXSTREAM_VERSION_MINOR * 100 +
                                    ONNXSTREAM_VERSION_PATCH);
    snprintf(expected, sizeof expected, "%d.%d.%d", ONNXSTREAM_VERSION_MAJOR, ONNXSTREAM_VERSION_MINOR,
             ONNXSTREAM_VERSION_PATCH);
    CHECK(onnxstream_version_string() != NULL);
    CHECK(strcmp(onnxstream_version_string(), expected) == 0);
    /* Names the kernel library and its API generation (both XNNPACK generations are supported). */
    CHECK(onnxstream_kernel_library() != NULL);
    CHECK(strncmp(onnxstream_kernel_library(), "XNNPACK 20", 10) == 0);
}

static void test_names(void) {
    static const struct {
        onnxstream_status_t status;
        const char *name;
    } statuses[] = {
        {ONNXSTREAM_OK, "ONNXSTREAM_OK"},
        {ONNXSTREAM_ERR_INVALID_ARGUMENT, "ONNXSTREAM_ERR_INVALID_ARGUMENT"},
        {ONNXSTREAM_ERR_INVALID_MODEL, "ONNXSTREAM_ERR_INVALID_MODEL"},
        {ONNXSTREAM_ERR_IO, "ONNXSTREAM_ERR_IO"},
        {ONNXSTREAM_ERR_UNSUPPORTED, "ONNXSTREAM_ERR_UNSUPPORTED"},
        {ONNXSTREAM_ERR_OUT_OF_MEMORY, "ONNXSTREAM_ERR_OUT_OF_MEMORY"},
        {ONNXSTREAM_ERR_CALLBACK, "ONNXSTREAM_ERR_CALLBACK"},
        {ONNXSTREAM_ERR_CANCELLED, "ONNXSTREAM_ERR_CANCELLED"},
        {ONNXSTREAM_ERR_BAD_STATE, "ONNXSTREAM_ERR_BAD_STATE"},
        {ONNXSTREAM_ERR_INTERNAL, "ONNXSTREAM_ERR_INTERNAL"},
    };
    static const struct {
        onnxstream_dtype_t dtype;
        const char *name;
        size_t size;
    } dtypes[] = {
        {ONNXSTREAM_DTYPE_FLOAT32, "float32", 4}, {ONNXSTREAM_DTYPE_FLOAT16, "float16", 2},
        {ONNXSTREAM_DTYPE_INT64, "int64", 8},     {ONNXSTREAM_DTYPE_UINT8, "uint8", 1},
        {ONNXSTREAM_DTYPE_INT8, "int8", 1},       {ONNXSTREAM_DTYPE_INT32, "int32", 4},
        {ONNXSTREAM_DTYPE_BOOL, "bool", 1},
    };
    size_t i;
    for (i = 0; i < sizeof statuses / sizeof statuses[0]; ++i)
        CHECK(strcmp(onnxstream_status_name(statuses[i].status), statuses[i].name) == 0);
    CHECK(strcmp(onnxstream_status_name((onnxstream_status_t)10), "ONNXSTREAM_UNKNOWN_STATUS") == 0);
    CHECK(strcmp(onnxstream_status_name((onnxstream_status_t)-1), "ONNXSTREAM_UNKNOWN_STATUS") == 0);
    for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
        CHECK(strcmp(onnxstream_dtype_name(dtypes[i].dtype), dtypes[i].name) == 0);
        CHECK(onnxstream_dtype_size(dtypes[i].dtype) == dtypes[i].size);
    }
    CHECK(strcmp(onnxstream_dtype_name((onnxstream_dtype_t)0), "unknown") == 0);
    CHECK(strcmp(onnxstream_dtype_name((onnxstream_dtype_t)99), "unknown") == 0);
    CHECK(onnxstream_dtype_size((onnxstream_dtype_t)0) == 0);
    CHECK(onnxstream_dtype_size((onnxstream_dtype_t)99) == 0);
}

static void test_options(void) {
    onnxstream_model_options_t o;
    onnxstream_model_t *model = NULL;
    memset(&o, 0xAB, sizeof o);
    onnxstream_model_options_init(&o);
    CHECK(o.struct_size == sizeof o);
    CHECK(o.threads == 0);
    CHECK(o.provider == ONNXSTREAM_PROVIDER_AUTO);
    CHECK(o.flags == 0);
    CHECK(o.prefetch_bytes == 0);
    CHECK(o.memory_mode == ONNXSTREAM_MEMORY_BALANCED);
    CHECK(o.attention == ONNXSTREAM_ATTENTION_AUTO);
    CHECK(o.attention_slices == 0);
    CHECK(o.reserved0 == 0);
    CHECK(o.weight_chunk_bytes == 0);
    CHECK(o.cache_path == NULL);
    onnxstream_model_options_init(NULL); /* does nothing */

    /* NULL options = defaults. */
    CHECK_OK(onnxstream_model_create(NULL, &model));
    CHECK(model != NULL);
    onnxstream_model_destroy(model);

    /* Every provider kind. */
    {
        int kind;
        for (kind = ONNXSTREAM_PROVIDER_AUTO; kind <= ONNXSTREAM_PROVIDER_RAM; ++kind) {
            model = test_new_model(kind);
            CHECK(model != NULL);
            onnxstream_model_destroy(model);
        }
    }

    /* struct_size 0: the caller forgot onnxstream_model_options_init. */
    onnxstream_model_options_init(&o);
    o.struct_size = 0;
    model = (onnxstream_model_t *)&o; /* must be reset to NULL on failure */
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK(model == NULL);
    CHECK_CONTAINS(onnxstream_last_error(), "struct_size");

    onnxstream_model_options_init(&o);
    o.threads = -1;
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_last_error(), "threads");
    onnxstream_model_options_init(&o);
    o.provider = 4;
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_last_error(), "provider");
    onnxstream_model_options_init(&o);
    o.provider = -2;
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    /* Memory modes and attention kinds: every valid value works, others are named in the error. */
    {
        int v;
        for (v = ONNXSTREAM_MEMORY_BALANCED; v <= ONNXSTREAM_MEMORY_MAX_SPEED; ++v) {
            onnxstream_model_options_init(&o);
            o.memory_mode = v;
            CHECK_OK(onnxstream_model_create(&o, &model));
            onnxstream_model_destroy(model);
        }
        for (v = ONNXSTREAM_ATTENTION_AUTO; v <= ONNXSTREAM_ATTENTION_FLASH; ++v) {
            onnxstream_model_options_init(&o);
            o.attention = v;
            o.attention_slices = 4;
            CHECK_OK(onnxstream_model_create(&o, &model));
            onnxstream_model_destroy(model);
        }
    }
    onnxstream_model_options_init(&o);
    o.memory_mode = 3;
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_last_error(), "memory mode");
    onnxstream_model_options_init(&o);
    o.attention = -1;
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_last_error(), "attention");
    onnxstream_model_options_init(&o);
    o.attention_slices = -3;
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_last_error(), "attention_slices");
    onnxstream_model_options_init(&o);
    o.reserved0 = 1;
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_last_error(), "reserved0");
    onnxstream_model_options_init(&o);
    o.flags = ONNXSTREAM_FLAG_KEEP_ALL_OUTPUTS;
    CHECK_STATUS(onnxstream_model_create(&o, &model), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_last_error(), "flags");

    /* An older, smaller struct: fields past struct_size are not read (here: garbage flags). */
    onnxstream_model_options_init(&o);
    o.struct_size = (uint32_t)offsetof(onnxstream_model_options_t, flags);
    o.threads = 1;
    o.flags = 0xFFFFFFFFu;
    o.prefetch_bytes = 12345;
    CHECK_OK(onnxstream_model_create(&o, &model));
    onnxstream_model_destroy(model);

    onnxstream_model_options_init(&o);
    o.threads = 2;
    o.provider = ONNXSTREAM_PROVIDER_PREFETCH;
    o.prefetch_bytes = 1;
    CHECK_OK(onnxstream_model_create(&o, &model));
    onnxstream_model_destroy(model);
}

static void test_errors_and_state(void) {
    onnxstream_model_t *model = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    onnxstream_model_t *other = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    if (!model || !other) return;
    onnxstream_model_destroy(NULL); /* no-op */
    CHECK(strcmp(onnxstream_model_last_error(NULL), "") == 0);
    CHECK(strcmp(onnxstream_model_last_error(model), "") == 0);
    CHECK(onnxstream_model_input_count(model) == 0);
    CHECK(onnxstream_model_output_count(model) == 0);
    CHECK(onnxstream_model_input_count(NULL) == 0);
    CHECK(onnxstream_model_output_count(NULL) == 0);

    /* A failure sets both the model's and the thread's message... */
    CHECK_STATUS(onnxstream_model_load_string(model, "not a model\n", NULL), ONNXSTREAM_ERR_INVALID_MODEL);
    CHECK_CONTAINS(onnxstream_model_last_error(model), "model.txt:1:1:");
    CHECK(strcmp(onnxstream_model_last_error(model), onnxstream_last_error()) == 0);
    /* ...only the failing model's, and a success on the model clears its message. */
    CHECK(strcmp(onnxstream_model_last_error(other), "") == 0);
    CHECK_OK(onnxstream_model_load_string(model, kModel, NULL));
    CHECK(strcmp(onnxstream_model_last_error(model), "") == 0);
    CHECK(onnxstream_model_input_count(model) == 1);

    /* One model per handle. */
    CHECK_STATUS(onnxstream_model_load_string(model, kModel, NULL), ONNXSTREAM_ERR_BAD_STATE);
    CHECK_CONTAINS(onnxstream_model_last_error(model), "already loaded");
    CHECK_STATUS(onnxstream_model_load(model, "/nonexistent"), ONNXSTREAM_ERR_BAD_STATE);

    /* A failed load leaves the handle empty and reusable. */
    CHECK_STATUS(onnxstream_model_load(other, "/nonexistent/dir"), ONNXSTREAM_ERR_IO);
    CHECK_CONTAINS(onnxstream_model_last_error(other), "/nonexistent/dir");
    CHECK(onnxstream_model_input_count(other) == 0);
    CHECK_OK(onnxstream_model_load_string(other, kModel, NULL));
    onnxstream_model_destroy(model);
    onnxstream_model_destroy(other);
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    fputs(text, f);
    return fclose(f) == 0;
}

/* Range data (static W8A8) and calibration: argument and state checks, bad files, a calibrated run. */
static void test_range_data(void) {
    char dir[4096], good[4200], bad[4200], out[4200];
    static const int64_t shape[] = {2};
    static const float x[] = {-1.0f, 2.0f};
    onnxstream_model_t *model = NULL;
    if (!test_temp_dir(dir, sizeof dir)) return;
    snprintf(good, sizeof good, "%s/good.txt", dir);
    snprintf(bad, sizeof bad, "%s/bad.txt", dir);
    snprintf(out, sizeof out, "%s/out.txt", dir);
    CHECK(write_text(good, "a,0,2\r\nx,-1,2\n"));
    CHECK_STATUS(onnxstream_model_read_range_data(NULL, good), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_set_calibrate(NULL, 1), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_OK(onnxstream_model_create(NULL, &model));
    CHECK_STATUS(onnxstream_model_read_range_data(model, good), ONNXSTREAM_ERR_BAD_STATE);
    CHECK_STATUS(onnxstream_model_set_calibrate(model, 1), ONNXSTREAM_ERR_BAD_STATE);
    CHECK_OK(onnxstream_model_load_string(model, kModel, NULL));
    CHECK_STATUS(onnxstream_model_read_range_data(model, NULL), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(onnxstream_model_write_range_data(model, NULL), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_OK(onnxstream_model_read_range_data(model, good));
    CHECK_STATUS(onnxstream_model_read_range_data(model, "/nonexistent/range_data.txt"), ONNXSTREAM_ERR_IO);
    CHECK(write_text(bad, "nosuchop,0,1\n"));
    CHECK_STATUS(onnxstream_model_read_range_data(model, bad), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK_CONTAINS(onnxstream_model_last_error(model), "nosuchop");
    CHECK(write_text(bad, "a,3,1\n"));
    CHECK_STATUS(onnxstream_model_read_range_data(model, bad), ONNXSTREAM_ERR_INVALID_MODEL);
    CHECK_CONTAINS(onnxstream_model_last_error(model), "bad.txt:1");
    CHECK(write_text(bad, "a;0;1\n"));
    CHECK_STATUS(onnxstream_model_read_range_data(model, bad), ONNXSTREAM_ERR_INVALID_MODEL);
    CHECK_OK(onnxstream_model_write_range_data(model, out)); /* the good ranges stayed */
    CHECK_OK(onnxstream_model_read_range_data(model, out));
    CHECK_OK(onnxstream_model_set_calibrate(model, 1));
    CHECK_OK(onnxstream_model_push_tensor(model, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, shape, x, sizeof x));
    CHECK_OK(onnxstream_model_run(model));
    CHECK_OK(onnxstream_model_write_range_data(model, out));
    CHECK_OK(onnxstream_model_set_calibrate(model, 0));
    CHECK_OK(onnxstream_model_run(model));
    onnxstream_model_destroy(model);
    test_remove_dir(dir);
}

int main(void) {
    CHECK(strcmp(onnxstream_last_error(), "") == 0);
    test_versions();
    test_names();
    test_options();
    test_errors_and_state();
    test_range_data();
    return test_finish("lifecycle");
}
