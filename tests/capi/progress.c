/*
 * The progress callback: called once per op in order with the op's name and type; returning nonzero
 * cancels the run with ONNXSTREAM_ERR_CANCELLED, frees the intermediates, and a later run succeeds.
 */
#include <math.h>
#include <string.h>

#include "capi_test.h"

static const char *kModel = "first:Add*input:x(4);x(4)*output:a(4)\n"
                            "second:Relu*input:a(4)*output:b(4)\n"
                            "third:Mul*input:b(4);a(4)*output:c(4)\n"
                            "fourth:Sigmoid*input:c(4)*output:d(4)\n";
static const char *kNames[4] = {"first", "second", "third", "fourth"};
static const char *kTypes[4] = {"Add", "Relu", "Mul", "Sigmoid"};
static const float kX[4] = {-1.0f, 0.0f, 0.5f, 2.0f};
static const int64_t kShape[1] = {4};

typedef struct Progress {
    int calls;
    int cancel_at; /* op index at which to return nonzero, or -1 */
    int out_of_order;
    int bad_fields;
    uint64_t last_peak;
} Progress;

static int on_progress(void *user_data, const onnxstream_progress_t *p) {
    Progress *s = (Progress *)user_data;
    if ((int)p->op_index != s->calls) ++s->out_of_order;
    if (p->struct_size < sizeof *p || p->op_count != 4 || p->op_index >= 4 ||
        strcmp(p->op_name, kNames[p->op_index]) != 0 || strcmp(p->op_type, kTypes[p->op_index]) != 0 ||
        p->peak_bytes < p->current_bytes || p->peak_bytes < s->last_peak)
        ++s->bad_fields;
    s->last_peak = p->peak_bytes;
    ++s->calls;
    return (int)p->op_index == s->cancel_at;
}

static void check_output(onnxstream_model_t *m) {
    onnxstream_tensor_view_t view;
    int i;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    if (!CHECK_OK(onnxstream_model_get_output(m, 0, &view))) return;
    CHECK(strcmp(view.name, "d") == 0);
    for (i = 0; i < 4; ++i) {
        /* a = 2x, b = relu(a), c = b*a, d = sigmoid(c) */
        float a = 2 * kX[i], b = a > 0 ? a : 0, c = b * a;
        float d = 1.0f / (1.0f + expf(-c));
        CHECK_FLOAT(((const float *)view.data)[i], d);
    }
}

int main(void) {
    onnxstream_model_t *m = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    onnxstream_memory_stats_t stats;
    Progress s;
    int at;
    if (!m) return test_finish("progress");
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_OK(onnxstream_model_load_string(m, kModel, NULL));
    CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, kShape, kX, sizeof kX));

    /* Without a callback. */
    CHECK_OK(onnxstream_model_run(m));
    check_output(m);

    /* Called after every op, in order. */
    memset(&s, 0, sizeof s);
    s.cancel_at = -1;
    CHECK_OK(onnxstream_model_set_progress_callback(m, on_progress, &s));
    CHECK_OK(onnxstream_model_run(m));
    CHECK(s.calls == 4);
    CHECK(s.out_of_order == 0);
    CHECK(s.bad_fields == 0);
    check_output(m);

    /* Cancel after each op in turn (after the last one too: the run still reports cancellation). */
    for (at = 0; at < 4; ++at) {
        memset(&s, 0, sizeof s);
        s.cancel_at = at;
        CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_CANCELLED);
        CHECK(s.calls == at + 1); /* nothing runs after the cancelling op */
        CHECK_CONTAINS(onnxstream_model_last_error(m), "cancelled");
        CHECK_CONTAINS(onnxstream_model_last_error(m), kNames[at]);
        CHECK(onnxstream_model_output_count(m) == 0);
        /* Intermediates are freed: only the pushed input is alive. */
        CHECK_OK(onnxstream_model_memory_stats(m, &stats, 0));
        CHECK(stats.current_bytes == sizeof kX);

        /* The next run starts from scratch and succeeds. */
        s.cancel_at = -1;
        s.calls = 0;
        CHECK_OK(onnxstream_model_run(m));
        CHECK(s.calls == 4);
        check_output(m);
    }

    /* Cleared: no more calls. */
    CHECK_OK(onnxstream_model_set_progress_callback(m, NULL, NULL));
    s.calls = 0;
    CHECK_OK(onnxstream_model_run(m));
    CHECK(s.calls == 0);
    onnxstream_model_destroy(m);
    return test_finish("progress");
}
