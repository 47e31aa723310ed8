/*
 * Threads and one model handle:
 *   (a) two models run in two threads at once, each N times, every output equal to the reference;
 *   (b) while thread A is inside onnxstream_model_run (held in its progress callback), thread B's calls on
 *       the same model (run, push_tensor, set_*, get_output, memory_stats, load) are refused with
 *       ONNXSTREAM_ERR_BAD_STATE ("another thread is running this model"), A's run then finishes correctly
 *       and A's model error message was not touched by B;
 *   (c) from inside its own progress callback, a thread may read the model but not run or change it.
 * The reference is computed directly in C.
 */
#include <pthread.h>
#include <string.h>

#include "capi_test.h"

static const char *kModel = "first:Add*input:x(64);x(64)*output:a(64)\n"
                            "second:Relu*input:a(64)*output:b(64)\n"
                            "third:Mul*input:b(64);a(64)*output:c(64)\n"
                            "fourth:Add*input:c(64);x(64)*output:d(64)\n";
static const int64_t kShape[1] = {64};

static void make_input(float *x, float scale) {
    int i;
    for (i = 0; i < 64; ++i) x[i] = scale * ((float)i - 20.0f) / 16.0f;
}

/* d = relu(2x) * 2x + x */
static int output_ok(onnxstream_model_t *m, const float *x) {
    onnxstream_tensor_view_t view;
    int i;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    if (onnxstream_model_get_output(m, 0, &view) != ONNXSTREAM_OK || view.byte_size != 64 * sizeof(float)) return 0;
    for (i = 0; i < 64; ++i) {
        float a = 2 * x[i], b = a > 0 ? a : 0, d = b * a + x[i];
        float got = ((const float *)view.data)[i];
        if (got - d > 1e-5f || d - got > 1e-5f) return 0;
    }
    return 1;
}

static onnxstream_model_t *new_model(const float *x) {
    onnxstream_model_t *m = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    if (!m) return NULL;
    CHECK_OK(onnxstream_model_load_string(m, kModel, NULL));
    CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, kShape, x, 64 * sizeof(float)));
    return m;
}

/* ---- (a) two models, two threads ---------------------------------------------------------------- */

#define RUNS 200

typedef struct Worker {
    onnxstream_model_t *model;
    const float *x;
    int ok_runs, bad_runs;
} Worker;

static void *worker_main(void *arg) {
    Worker *w = (Worker *)arg;
    int i;
    for (i = 0; i < RUNS; ++i) {
        if (onnxstream_model_run(w->model) == ONNXSTREAM_OK && output_ok(w->model, w->x))
            ++w->ok_runs;
        else
            ++w->bad_runs;
    }
    return NULL;
}

static void test_two_models_two_threads(void) {
    float x1[64], x2[64];
    Worker w[2];
    pthread_t t[2];
    int i;
    make_input(x1, 1.0f);
    make_input(x2, -3.0f);
    memset(w, 0, sizeof w);
    w[0].x = x1;
    w[1].x = x2;
    w[0].model = new_model(x1);
    w[1].model = new_model(x2);
    if (!w[0].model || !w[1].model) return;
    for (i = 0; i < 2; ++i) CHECK(pthread_create(&t[i], NULL, worker_main, &w[i]) == 0);
    for (i = 0; i < 2; ++i) CHECK(pthread_join(t[i], NULL) == 0);
    for (i = 0; i < 2; ++i) {
        CHECK(w[i].ok_runs == RUNS);
        CHECK(w[i].bad_runs == 0);
        onnxstream_model_destroy(w[i].model);
    }
}

/* ---- (b) one model, a second thread during a run ------------------------------------------------ */

typedef struct Handshake {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int a_in_run;   /* A's progress callback is waiting */
    int b_done;     /* B has made its calls */
    int callbacks;
    onnxstream_model_t *model;
    const float *x;
    /* B's results */
    onnxstream_status_t run, push, set_progress, set_log, set_max, get_output, stats, load, add_output;
    char run_message[512];
    char model_message_seen_by_b[64];
} Handshake;

static int hold_first_op(void *user_data, const onnxstream_progress_t *p) {
    Handshake *h = (Handshake *)user_data;
    ++h->callbacks;
    if (p->op_index != 1) return 0;
    pthread_mutex_lock(&h->mutex);
    h->a_in_run = 1;
    pthread_cond_broadcast(&h->cond);
    while (!h->b_done) pthread_cond_wait(&h->cond, &h->mutex);
    pthread_mutex_unlock(&h->mutex);
    return 0;
}

static void *intruder_main(void *arg) {
    Handshake *h = (Handshake *)arg;
    onnxstream_tensor_view_t view;
    onnxstream_memory_stats_t stats;
    pthread_mutex_lock(&h->mutex);
    while (!h->a_in_run) pthread_cond_wait(&h->cond, &h->mutex);
    pthread_mutex_unlock(&h->mutex);

    h->run = onnxstream_model_run(h->model);
    strncpy(h->run_message, onnxstream_last_error(), sizeof h->run_message - 1);
    h->push = onnxstream_model_push_tensor(h->model, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, kShape, h->x, 64 * 4);
    h->set_progress = onnxstream_model_set_progress_callback(h->model, NULL, NULL);
    h->set_log = onnxstream_model_set_log_callback(h->model, NULL, NULL, ONNXSTREAM_LOG_ERROR);
    h->set_max = onnxstream_model_set_max_bytes(h->model, 1);
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    h->get_output = onnxstream_model_get_output(h->model, 0, &view);
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    h->stats = onnxstream_model_memory_stats(h->model, &stats, 1);
    h->load = onnxstream_model_load_string(h->model, kModel, NULL);
    h->add_output = onnxstream_model_add_output(h->model, "a");

    pthread_mutex_lock(&h->mutex);
    h->b_done = 1;
    pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->mutex);
    return NULL;
}

static void test_concurrent_calls_refused(void) {
    float x[64];
    Handshake h;
    pthread_t b;
    int round;
    make_input(x, 0.5f);
    for (round = 0; round < 3; ++round) {
        memset(&h, 0, sizeof h);
        pthread_mutex_init(&h.mutex, NULL);
        pthread_cond_init(&h.cond, NULL);
        h.x = x;
        h.model = new_model(x);
        if (!h.model) return;
        CHECK_OK(onnxstream_model_set_progress_callback(h.model, hold_first_op, &h));
        CHECK(pthread_create(&b, NULL, intruder_main, &h) == 0);
        CHECK_OK(onnxstream_model_run(h.model)); /* thread A */
        CHECK(pthread_join(b, NULL) == 0);
        CHECK(h.callbacks == 4);
        CHECK(output_ok(h.model, x));
        CHECK(strcmp(onnxstream_model_last_error(h.model), "") == 0); /* B's refusals did not land here */

        CHECK_STATUS(h.run, ONNXSTREAM_ERR_BAD_STATE);
        CHECK_CONTAINS(h.run_message, "onnxstream_model_run: another thread is running this model");
        CHECK_STATUS(h.push, ONNXSTREAM_ERR_BAD_STATE);
        CHECK_STATUS(h.set_progress, ONNXSTREAM_ERR_BAD_STATE);
        CHECK_STATUS(h.set_log, ONNXSTREAM_ERR_BAD_STATE);
        CHECK_STATUS(h.set_max, ONNXSTREAM_ERR_BAD_STATE);
        CHECK_STATUS(h.get_output, ONNXSTREAM_ERR_BAD_STATE);
        CHECK_STATUS(h.stats, ONNXSTREAM_ERR_BAD_STATE);
        CHECK_STATUS(h.load, ONNXSTREAM_ERR_BAD_STATE);
        CHECK_STATUS(h.add_output, ONNXSTREAM_ERR_BAD_STATE);

        /* Nothing B tried took effect: no budget was set, the callback is still there; and now that A is
         * done, B's thread (here: the main thread again) may use the model. */
        h.callbacks = 0;
        h.b_done = 1;
        CHECK_OK(onnxstream_model_run(h.model));
        CHECK(h.callbacks == 4);
        CHECK(output_ok(h.model, x));
        onnxstream_model_destroy(h.model);
        pthread_mutex_destroy(&h.mutex);
        pthread_cond_destroy(&h.cond);
    }
}

/* ---- (c) calls from the run's own callback ------------------------------------------------------ */

typedef struct Reentry {
    onnxstream_model_t *model;
    int calls;
    onnxstream_status_t run, push, set_max, stats, get_output;
    char run_message[512];
} Reentry;

static int reenter(void *user_data, const onnxstream_progress_t *p) {
    Reentry *r = (Reentry *)user_data;
    onnxstream_memory_stats_t stats;
    onnxstream_tensor_view_t view;
    float x[64];
    ++r->calls;
    if (p->op_index != 2) return 0;
    make_input(x, 1.0f);
    r->run = onnxstream_model_run(r->model);
    strncpy(r->run_message, onnxstream_last_error(), sizeof r->run_message - 1);
    r->push = onnxstream_model_push_tensor(r->model, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, kShape, x, sizeof x);
    r->set_max = onnxstream_model_set_max_bytes(r->model, 1);
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    r->stats = onnxstream_model_memory_stats(r->model, &stats, 0);
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    r->get_output = onnxstream_model_get_input(r->model, 0, &view);
    return 0;
}

static void test_reentry_from_callback(void) {
    float x[64];
    Reentry r;
    make_input(x, 1.0f);
    memset(&r, 0, sizeof r);
    r.model = new_model(x);
    if (!r.model) return;
    CHECK_OK(onnxstream_model_run(r.model));
    CHECK_OK(onnxstream_model_set_progress_callback(r.model, reenter, &r));
    CHECK_OK(onnxstream_model_run(r.model));
    CHECK(r.calls == 4);
    CHECK(output_ok(r.model, x));
    CHECK_STATUS(r.run, ONNXSTREAM_ERR_BAD_STATE);
    CHECK_CONTAINS(r.run_message, "called from a callback during onnxstream_model_run");
    CHECK_STATUS(r.push, ONNXSTREAM_ERR_BAD_STATE);
    CHECK_STATUS(r.set_max, ONNXSTREAM_ERR_BAD_STATE);
    CHECK_OK(r.stats);
    CHECK_OK(r.get_output); /* get_input: reading is allowed */
    onnxstream_model_destroy(r.model);
}

int main(void) {
    test_two_models_two_threads();
    test_concurrent_calls_refused();
    test_reentry_from_callback();
    return test_finish("threads");
}
