/*
 * Soak: 200 consecutive runs of the real YOLOv8n in one process. Every run's output must match ONNX
 * Runtime's published reference (relative L2 <= 1e-4), and resident memory, sampled from
 * /proc/self/statm after every run, must not grow beyond noise once the first WARMUP runs have warmed
 * the allocator, the thread pools and the page cache: a leak of one small tensor per run would add
 * megabytes over 200 runs. Prints the RSS curve (MB at runs 1, 10, 25, 50, 100, 150, 200) and the trend
 * between the mean of the 40 runs after the warm-up and the mean of the last 40.
 * Usage: yolov8n_soak SHARED_DIR [RUNS]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "onnxstream.h"
#include "yolov8n_data.h"

/* Growth allowed from the last warm-up sample to any later one, and between the two 40-run window means. */
#define WARMUP 25
#define MAX_GROWTH_MB 8.0
#define MAX_TREND_MB 2.0

static double rss_mb(void) {
    long pages_total = 0, pages_resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    int ok = fscanf(f, "%ld %ld", &pages_total, &pages_resident) == 2;
    fclose(f);
    return ok ? (double)pages_resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0) : -1;
}

static double rel_l2(const float *got, const float *want, size_t n) {
    double err = 0, ref = 0;
    for (size_t i = 0; i < n; ++i) {
        double d = (double)got[i] - want[i];
        err += d * d;
        ref += (double)want[i] * want[i];
    }
    return sqrt(err / (ref > 0 ? ref : 1));
}

static double mean(const double *v, int from, int to) { /* runs from..to, 1-based, inclusive */
    double s = 0;
    for (int i = from; i <= to; ++i) s += v[i - 1];
    return s / (to - from + 1);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SHARED_DIR [RUNS]\n", argv[0]);
        return 2;
    }
    const int runs = argc > 2 ? atoi(argv[2]) : 200;
    if (runs < WARMUP + 80) {
        fprintf(stderr, "RUNS must be at least %d (the trend compares two windows of 40 runs after the warm-up)\n",
                WARMUP + 80);
        return 2;
    }
    char model_dir[4096];
    snprintf(model_dir, sizeof model_dir, "%s/models/yolov8n", argv[1]);
    float *input = NULL, *expected = NULL;
    if (!load_yolov8n_data(argv[1], &input, &expected)) return 1;
    const size_t n_out = YOLOV8N_OUTPUT_FLOATS;
    const size_t in_size = YOLOV8N_INPUT_FLOATS * sizeof(float);

    onnxstream_model_options_t options;
    onnxstream_model_options_init(&options);
    onnxstream_model_t *model = NULL;
    if (onnxstream_model_create(&options, &model) != ONNXSTREAM_OK ||
        onnxstream_model_load(model, model_dir) != ONNXSTREAM_OK) {
        fprintf(stderr, "load: %s\n", onnxstream_last_error());
        onnxstream_model_destroy(model);
        return 1;
    }
    const int64_t shape[4] = {1, 3, 640, 640};
    double *rss = calloc((size_t)runs, sizeof(double));
    int failures = 0;
    double worst_err = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < runs && rss; ++r) {
        onnxstream_tensor_view_t out;
        memset(&out, 0, sizeof out);
        out.struct_size = sizeof out;
        if (onnxstream_model_push_tensor(model, "images", ONNXSTREAM_DTYPE_FLOAT32, 4, shape, input, in_size) !=
                ONNXSTREAM_OK ||
            onnxstream_model_run(model) != ONNXSTREAM_OK || onnxstream_model_get_output(model, 0, &out) != ONNXSTREAM_OK) {
            fprintf(stderr, "run %d: %s\n", r + 1, onnxstream_model_last_error(model));
            ++failures;
            break;
        }
        double err = out.byte_size == n_out * 4 ? rel_l2((const float *)out.data, expected, n_out) : INFINITY;
        if (err > worst_err) worst_err = err;
        if (!(err <= 1e-4)) {
            fprintf(stderr, "run %d: relative L2 error %.3g against ONNX Runtime's output\n", r + 1, err);
            ++failures;
        }
        rss[r] = rss_mb();
        if ((r + 1) % 50 == 0) {
            printf("  %d/%d runs, RSS %.1f MB\n", r + 1, runs, rss[r]);
            fflush(stdout);
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    onnxstream_model_destroy(model);
    if (!rss || failures) {
        free(rss);
        printf("0 passed, 1 failed\n");
        return 1;
    }

    const double base = rss[WARMUP - 1];
    double lo = base, hi = base;
    for (int r = WARMUP; r < runs; ++r) {
        if (rss[r] < lo) lo = rss[r];
        if (rss[r] > hi) hi = rss[r];
    }
    const double early = mean(rss, WARMUP + 1, WARMUP + 40), late = mean(rss, runs - 39, runs);
    const double seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    const int marks[] = {1, 10, 25, 50, 100, 150, 200};
    printf("RSS MB at run:");
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; ++i)
        if (marks[i] <= runs) printf(" %d=%.1f", marks[i], rss[marks[i] - 1]);
    printf("\nruns %d-%d: min %.1f max %.1f MB (growth over run %d: %.2f MB); mean of runs %d-%d %.2f, of runs "
           "%d-%d %.2f (trend %+.2f MB)\n",
           WARMUP, runs, lo, hi, WARMUP, hi - base, WARMUP + 1, WARMUP + 40, early, runs - 39, runs, late,
           late - early);
    printf("%d runs in %.1f s (%.3f s/run), worst relative L2 vs ONNX Runtime %.2e\n", runs, seconds,
           seconds / runs, worst_err);
    int ok = 1;
    if (hi - base > MAX_GROWTH_MB) {
        printf("FAIL: RSS grew %.2f MB after run %d (allowed %.1f)\n", hi - base, WARMUP, MAX_GROWTH_MB);
        ok = 0;
    }
    if (late - early > MAX_TREND_MB) {
        printf("FAIL: RSS trend %+.2f MB between the first and last windows (allowed %.1f)\n", late - early,
               MAX_TREND_MB);
        ok = 0;
    }
    free(rss);
    free(input);
    free(expected);
    printf("%d passed, %d failed\n", ok, !ok);
    return ok ? 0 : 1;
}
