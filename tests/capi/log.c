/*
 * The log callback: messages arrive only while a callback is set, only at or above its level, and
 * carry the model's diagnostics (load summary).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "capi_test.h"

static const char *kModel = "a:Relu*input:x(2)*output:y(2)\n";

typedef struct Log {
    int count;
    int below_level;
    onnxstream_log_level_t min_level;
    char load_message[512];
    int saw_load;
} Log;

static void on_log(void *user_data, onnxstream_log_level_t level, const char *message) {
    Log *log = (Log *)user_data;
    ++log->count;
    if (level < log->min_level) ++log->below_level;
    if (message && strstr(message, "loaded")) {
        log->saw_load = 1;
        strncpy(log->load_message, message, sizeof log->load_message - 1);
    }
}

static void run_once(onnxstream_model_t *m) {
    static const float x[2] = {-1, 1};
    static const int64_t shape[1] = {2};
    CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 1, shape, x, sizeof x));
    CHECK_OK(onnxstream_model_run(m));
}

/* Without a log callback the library writes nothing to stdout or stderr, even on errors. */
static void test_silent_by_default(void) {
    char dir[4096], out_path[4200], err_path[4200];
    FILE *out, *err;
    int saved_out, saved_err;
    long out_size, err_size;
    onnxstream_model_t *m;
    if (!test_temp_dir(dir, sizeof dir)) return;
    snprintf(out_path, sizeof out_path, "%s/stdout", dir);
    snprintf(err_path, sizeof err_path, "%s/stderr", dir);
    out = fopen(out_path, "w+");
    err = fopen(err_path, "w+");
    fflush(stdout);
    fflush(stderr);
    saved_out = dup(1);
    saved_err = dup(2);
    if (out && err && saved_out >= 0 && saved_err >= 0) {
        dup2(fileno(out), 1);
        dup2(fileno(err), 2);
        m = test_new_model(ONNXSTREAM_PROVIDER_PREFETCH);
        if (m) {
            if (onnxstream_model_load_string(m, "bad line\n", NULL) == ONNXSTREAM_OK) ++test_failures;
            if (onnxstream_model_load(m, "/nonexistent") == ONNXSTREAM_OK) ++test_failures;
            if (onnxstream_model_load_string(m, kModel, NULL) != ONNXSTREAM_OK) ++test_failures;
            if (onnxstream_model_run(m) == ONNXSTREAM_OK) ++test_failures; /* input not pushed */
            run_once(m);
            onnxstream_model_destroy(m);
        }
        fflush(stdout);
        fflush(stderr);
        dup2(saved_out, 1);
        dup2(saved_err, 2);
        close(saved_out);
        close(saved_err);
        fseek(out, 0, SEEK_END);
        fseek(err, 0, SEEK_END);
        out_size = ftell(out);
        err_size = ftell(err);
        if (out_size != 0) test_fail(__FILE__, __LINE__, "the library wrote %ld bytes to stdout", out_size);
        if (err_size != 0) test_fail(__FILE__, __LINE__, "the library wrote %ld bytes to stderr", err_size);
    } else {
        test_fail(__FILE__, __LINE__, "cannot redirect stdout/stderr");
    }
    if (out) fclose(out);
    if (err) fclose(err);
    test_remove_dir(dir);
}

int main(void) {
    Log log, other;
    onnxstream_model_t *m, *quiet;
    memset(&log, 0, sizeof log);
    memset(&other, 0, sizeof other);
    test_silent_by_default();

    /* Set before load at INFO: the load summary arrives. */
    m = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    if (!m) return test_finish("log");
    log.min_level = ONNXSTREAM_LOG_DEBUG;
    CHECK_OK(onnxstream_model_set_log_callback(m, on_log, &log, ONNXSTREAM_LOG_DEBUG));
    CHECK_OK(onnxstream_model_load_string(m, kModel, NULL));
    CHECK(log.count > 0);
    CHECK(log.saw_load);
    CHECK_CONTAINS(log.load_message, "1 ops");
    run_once(m);

    /* Cleared: nothing more arrives. */
    CHECK_OK(onnxstream_model_set_log_callback(m, NULL, &log, ONNXSTREAM_LOG_DEBUG));
    log.count = 0;
    run_once(m);
    CHECK(log.count == 0);

    /* A higher level filters the informational messages out. */
    other.min_level = ONNXSTREAM_LOG_ERROR;
    CHECK_OK(onnxstream_model_set_log_callback(m, on_log, &other, ONNXSTREAM_LOG_ERROR));
    run_once(m);
    CHECK(other.below_level == 0);
    CHECK(!other.saw_load);
    onnxstream_model_destroy(m);

    /* Callbacks are per model: another model's activity does not reach this one's callback. */
    memset(&log, 0, sizeof log);
    m = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    quiet = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    if (m && quiet) {
        CHECK_OK(onnxstream_model_set_log_callback(m, on_log, &log, ONNXSTREAM_LOG_DEBUG));
        CHECK_OK(onnxstream_model_load_string(quiet, kModel, NULL));
        run_once(quiet);
        CHECK(log.count == 0);
        CHECK_OK(onnxstream_model_load_string(m, kModel, NULL));
        CHECK(log.count > 0);
        CHECK(log.below_level == 0);
    }
    onnxstream_model_destroy(m);
    onnxstream_model_destroy(quiet);
    return test_finish("log");
}
