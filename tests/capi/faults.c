/*
 * Fault injection through the C API, on a four-op model with five weights:
 *   - a host weights provider failing at the k-th request, for every k of a run, in read and in zero-copy
 *     (acquire) mode: ONNXSTREAM_ERR_CALLBACK naming the weight file, no output, no tensor memory left
 *     behind, every acquire released once, and the same model runs correctly once the host recovers;
 *   - providers producing short data (read / acquire reporting fewer bytes through req->bytes_produced);
 *   - the built-in file providers (nocache, prefetch: read on its background thread) losing or truncating
 *     a weight file after load: ONNXSTREAM_ERR_IO naming the file, then a good run once it is back;
 *   - max_bytes: every budget below the run's tracked peak fails with ONNXSTREAM_ERR_OUT_OF_MEMORY naming
 *     the op and the limit, the peak itself runs, and onnxstream_model_set_max_bytes lifts it.
 * The reference is a direct C evaluation of the model (loops below), not the engine.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

/* conv1: (1,2,5,5) * w1 (4,2,3,3) + b1, pads 1 -> (1,4,5,5); relu; conv2: 1x1 w2 (3,4,1,1) + b2 -> (1,3,5,5);
 * add: + b3 (3,1,1). */
static const char *kModel =
    "conv1:Conv*input:x(1,2,5,5);w1.bin(float32:4,2,3,3);b1.bin(float32:4)*output:c1(1,4,5,5)"
    "*dilations:1,1;group:1;kernel_shape:3,3;pads:1,1,1,1;strides:1,1\n"
    "relu:Relu*input:c1(1,4,5,5)*output:r1(1,4,5,5)\n"
    "conv2:Conv*input:r1(1,4,5,5);w2.bin(float32:3,4,1,1);b2.bin(float32:3)*output:c2(1,3,5,5)"
    "*dilations:1,1;group:1;kernel_shape:1,1;pads:0,0,0,0;strides:1,1\n"
    "add:Add*input:c2(1,3,5,5);b3.bin(float32:3,1,1)*output:out(1,3,5,5)\n";

#define NWEIGHTS 5
static float kW1[72], kB1[4], kW2[12], kB2[3], kB3[3], kX[50], kOut[75];
static const int64_t kXShape[4] = {1, 2, 5, 5};
static const char *kFiles[NWEIGHTS] = {"w1.bin", "b1.bin", "w2.bin", "b2.bin", "b3.bin"};
static const float *kData[NWEIGHTS] = {kW1, kB1, kW2, kB2, kB3};
static const size_t kBytes[NWEIGHTS] = {sizeof kW1, sizeof kB1, sizeof kW2, sizeof kB2, sizeof kB3};

static void init_data(void) {
    int i, o, y, x, c, ky, kx;
    float r1[100];
    for (i = 0; i < 72; ++i) kW1[i] = (float)((i * 7) % 13) * 0.125f - 0.75f;
    for (i = 0; i < 4; ++i) kB1[i] = 0.25f * (float)i - 0.5f;
    for (i = 0; i < 12; ++i) kW2[i] = (float)((i * 5) % 7) * 0.25f - 0.75f;
    for (i = 0; i < 3; ++i) kB2[i] = 0.5f * (float)i;
    for (i = 0; i < 3; ++i) kB3[i] = 10.0f * (float)(i + 1);
    for (i = 0; i < 50; ++i) kX[i] = (float)((i * 3) % 11) * 0.2f - 1.0f;
    for (o = 0; o < 4; ++o)
        for (y = 0; y < 5; ++y)
            for (x = 0; x < 5; ++x) {
                float acc = kB1[o];
                for (c = 0; c < 2; ++c)
                    for (ky = 0; ky < 3; ++ky)
                        for (kx = 0; kx < 3; ++kx) {
                            int iy = y + ky - 1, ix = x + kx - 1;
                            if (iy < 0 || iy >= 5 || ix < 0 || ix >= 5) continue;
                            acc += kW1[((o * 2 + c) * 3 + ky) * 3 + kx] * kX[(c * 5 + iy) * 5 + ix];
                        }
                r1[(o * 5 + y) * 5 + x] = acc > 0 ? acc : 0;
            }
    for (o = 0; o < 3; ++o)
        for (i = 0; i < 25; ++i) {
            float acc = kB2[o];
            for (c = 0; c < 4; ++c) acc += kW2[o * 4 + c] * r1[c * 25 + i];
            kOut[o * 25 + i] = acc + kB3[o];
        }
}

static int weight_index(const char *file) {
    int i;
    for (i = 0; i < NWEIGHTS; ++i)
        if (!strcmp(file, kFiles[i])) return i;
    return -1;
}

static void check_result(onnxstream_model_t *m) {
    onnxstream_tensor_view_t view;
    int i, bad = 0;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    if (!CHECK_OK(onnxstream_model_get_output_by_name(m, "out", &view))) return;
    CHECK(view.byte_size == sizeof kOut);
    for (i = 0; i < 75 && !bad; ++i) bad = !CHECK_FLOAT(((const float *)view.data)[i], kOut[i]);
}

/* Only the pushed input may stay alive after a failed run. */
static void check_no_tensor_left(onnxstream_model_t *m) {
    onnxstream_memory_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    CHECK_OK(onnxstream_model_memory_stats(m, &stats, 0));
    if (stats.current_bytes != sizeof kX)
        test_fail(__FILE__, __LINE__, "%llu tensor bytes alive after a failed run, expected %zu (the input)",
                  (unsigned long long)stats.current_bytes, sizeof kX);
}

/* ---- a host provider that fails on request ------------------------------------------------------ */

#define MAX_ACQUIRES 4096

typedef struct Host {
    int requests;   /* read/acquire calls so far */
    int fail_at;    /* 1-based request number that fails (0 = none) */
    int short_by;   /* nonzero: report this many bytes fewer than requested */
    int bad_request;
    int acquires, releases, bad_releases, destroys;
    unsigned char released[MAX_ACQUIRES];
    char last_failed[64];
} Host;

static const float *serve(Host *h, const onnxstream_weight_request_t *req) {
    int w = weight_index(req->file);
    if (w < 0 || req->byte_size != kBytes[w] || req->struct_size < sizeof *req || !req->bytes_produced) {
        ++h->bad_request;
        return NULL;
    }
    return kData[w];
}

/* Nonzero when this request is the one to fail; fills the host's message. */
static int inject(Host *h, const onnxstream_weight_request_t *req) {
    ++h->requests;
    if (h->requests != h->fail_at) return 0;
    snprintf(h->last_failed, sizeof h->last_failed, "%s", req->file);
    snprintf(req->error_message, req->error_message_capacity, "injected failure #%d on %s", h->requests, req->file);
    return 1;
}

static onnxstream_status_t host_read(void *user_data, const onnxstream_weight_request_t *req, void *dst) {
    Host *h = (Host *)user_data;
    const float *data;
    if (inject(h, req)) return ONNXSTREAM_ERR_IO;
    data = serve(h, req);
    if (!data) return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    if (h->short_by) {
        memcpy(dst, data, req->byte_size - (size_t)h->short_by);
        *req->bytes_produced = req->byte_size - (size_t)h->short_by;
        return ONNXSTREAM_OK;
    }
    memcpy(dst, data, req->byte_size);
    return ONNXSTREAM_OK;
}

static onnxstream_status_t host_acquire(void *user_data, const onnxstream_weight_request_t *req, const void **data,
                                        void **token) {
    Host *h = (Host *)user_data;
    const float *p;
    if (inject(h, req)) return ONNXSTREAM_ERR_IO;
    p = serve(h, req);
    if (!p || h->acquires >= MAX_ACQUIRES) return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    if (h->short_by) *req->bytes_produced = req->byte_size - (size_t)h->short_by;
    *data = p;
    *token = &h->released[h->acquires++];
    return ONNXSTREAM_OK;
}

static void host_release(void *user_data, void *token) {
    Host *h = (Host *)user_data;
    unsigned char *slot = (unsigned char *)token;
    if (slot < h->released || slot >= h->released + h->acquires) {
        ++h->bad_releases;
        return;
    }
    ++*slot;
    ++h->releases;
}

static void host_destroy(void *user_data) { ++((Host *)user_data)->destroys; }

static void check_all_released_once(const Host *h) {
    int i;
    CHECK(h->bad_releases == 0);
    CHECK(h->releases == h->acquires);
    for (i = 0; i < h->acquires; ++i)
        if (h->released[i] != 1) test_fail(__FILE__, __LINE__, "acquire %d was released %d times", i, h->released[i]);
}

static onnxstream_model_t *load_with_host(int zero_copy, Host *h) {
    onnxstream_weights_provider_t p;
    onnxstream_model_t *m = test_new_model(ONNXSTREAM_PROVIDER_PREFETCH);
    if (!m) return NULL;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    if (zero_copy) {
        p.acquire = host_acquire;
        p.release = host_release;
    } else {
        p.read = host_read;
    }
    p.destroy = host_destroy;
    CHECK_OK(onnxstream_model_set_weights_provider(m, &p, h));
    CHECK_OK(onnxstream_model_load_string(m, kModel, NULL));
    CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 4, kXShape, kX, sizeof kX));
    return m;
}

static int faults_injected = 0;

static void test_provider_fails_at_every_request(int zero_copy) {
    Host h;
    onnxstream_model_t *m;
    int per_run, k;
    memset(&h, 0, sizeof h);
    m = load_with_host(zero_copy, &h);
    if (!m) return;
    CHECK_OK(onnxstream_model_run(m));
    check_result(m);
    per_run = h.requests;
    CHECK(per_run == NWEIGHTS);
    for (k = 1; k <= per_run; ++k) {
        const char *msg;
        h.requests = 0;
        h.fail_at = k;
        CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_CALLBACK);
        ++faults_injected;
        msg = onnxstream_model_last_error(m);
        CHECK_CONTAINS(msg, h.last_failed);
        CHECK_CONTAINS(msg, "injected failure");
        CHECK(h.requests == k); /* nothing is requested after the failure */
        CHECK(onnxstream_model_output_count(m) == 0);
        check_no_tensor_left(m);
        if (zero_copy) check_all_released_once(&h);
        /* The host recovers: the same model runs correctly. */
        h.fail_at = 0;
        CHECK_OK(onnxstream_model_run(m));
        check_result(m);
    }
    CHECK(h.bad_request == 0);
    onnxstream_model_destroy(m);
    if (zero_copy) check_all_released_once(&h);
    CHECK(h.destroys == 1);
}

static void test_short_data(int zero_copy) {
    Host h;
    onnxstream_model_t *m;
    const char *msg;
    memset(&h, 0, sizeof h);
    m = load_with_host(zero_copy, &h);
    if (!m) return;
    h.short_by = 4;
    CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_CALLBACK);
    ++faults_injected;
    msg = onnxstream_model_last_error(m);
    CHECK_CONTAINS(msg, "w1.bin");
    CHECK_CONTAINS(msg, "produced 284 bytes");
    CHECK_CONTAINS(msg, "expected 288");
    CHECK_CONTAINS(msg, zero_copy ? "acquire" : "read");
    check_no_tensor_left(m);
    if (zero_copy) check_all_released_once(&h);
    h.short_by = 0;
    CHECK_OK(onnxstream_model_run(m));
    check_result(m);
    CHECK(h.bad_request == 0);
    onnxstream_model_destroy(m);
    if (zero_copy) check_all_released_once(&h);
}

/* ---- built-in file providers -------------------------------------------------------------------- */

static void write_weights(const char *dir) {
    int i;
    for (i = 0; i < NWEIGHTS; ++i) test_write_file(dir, kFiles[i], kData[i], kBytes[i]);
}

static void test_file_provider_faults(int provider) {
    char dir[4096], path[4200];
    onnxstream_model_t *m;
    int w;
    if (!test_temp_dir(dir, sizeof dir)) return;
    write_weights(dir);
    m = test_new_model(provider);
    if (m) {
        CHECK_OK(onnxstream_model_load_string(m, kModel, dir));
        CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 4, kXShape, kX, sizeof kX));
        CHECK_OK(onnxstream_model_run(m));
        check_result(m);
        for (w = 0; w < NWEIGHTS; ++w) {
            /* Missing after load. */
            snprintf(path, sizeof path, "%s/%s", dir, kFiles[w]);
            CHECK(remove(path) == 0);
            CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_IO);
            ++faults_injected;
            CHECK_CONTAINS(onnxstream_model_last_error(m), kFiles[w]);
            check_no_tensor_left(m);
            /* Truncated. */
            test_write_file(dir, kFiles[w], kData[w], kBytes[w] - 4);
            CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_IO);
            ++faults_injected;
            CHECK_CONTAINS(onnxstream_model_last_error(m), kFiles[w]);
            check_no_tensor_left(m);
            /* Back: runs again. */
            test_write_file(dir, kFiles[w], kData[w], kBytes[w]);
            CHECK_OK(onnxstream_model_run(m));
            check_result(m);
        }
        onnxstream_model_destroy(m);
    }
    test_remove_dir(dir);
}

/* ---- max_bytes ---------------------------------------------------------------------------------- */

static void test_max_bytes(void) {
    char dir[4096];
    onnxstream_model_options_t options;
    onnxstream_memory_stats_t stats;
    onnxstream_model_t *m = NULL;
    uint64_t peak, budget;
    int failures = 0;
    if (!test_temp_dir(dir, sizeof dir)) return;
    write_weights(dir);
    onnxstream_model_options_init(&options);
    CHECK(options.max_bytes == 0);
    options.threads = 1;
    options.provider = ONNXSTREAM_PROVIDER_NOCACHE; /* deterministic: no read-ahead */
    options.max_bytes = 100;                        /* the input (200 bytes) does not even fit */
    /* Every run the same: a kept convolution would skip the tracked weight conversion of later runs. */
    options.kept_kernel_bytes = UINT64_MAX;
    if (CHECK_OK(onnxstream_model_create(&options, &m))) {
        memset(&stats, 0, sizeof stats);
        stats.struct_size = sizeof stats;
        CHECK_OK(onnxstream_model_load_string(m, kModel, dir));
        CHECK_STATUS(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 4, kXShape, kX, sizeof kX),
                     ONNXSTREAM_ERR_OUT_OF_MEMORY);
        CHECK_CONTAINS(onnxstream_model_last_error(m), "would exceed max_bytes 100 B");
        CHECK_CONTAINS(onnxstream_model_last_error(m), "input 'x'");

        /* Unlimited: measure the run's tracked peak, starting like the failing runs below do: a failed run
         * leaves no outputs, so only the input is alive at the start. */
        CHECK_OK(onnxstream_model_set_max_bytes(m, 0));
        CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 4, kXShape, kX, sizeof kX));
        CHECK_OK(onnxstream_model_run(m));
        check_result(m);
        CHECK_OK(onnxstream_model_set_max_bytes(m, sizeof kX));
        CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_OUT_OF_MEMORY);
        check_no_tensor_left(m);
        CHECK_OK(onnxstream_model_set_max_bytes(m, 0));
        CHECK_OK(onnxstream_model_memory_stats(m, &stats, 1));
        CHECK_OK(onnxstream_model_run(m));
        CHECK_OK(onnxstream_model_memory_stats(m, &stats, 0));
        peak = stats.peak_bytes;
        CHECK(peak > sizeof kX + sizeof kOut);
        CHECK_OK(onnxstream_model_set_max_bytes(m, sizeof kX));
        CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_OUT_OF_MEMORY);

        /* Every budget below the peak fails cleanly and leaves the model usable. */
        for (budget = sizeof kX; budget < peak; budget += 4) {
            CHECK_OK(onnxstream_model_set_max_bytes(m, budget));
            if (!CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_OUT_OF_MEMORY)) break;
            ++failures;
            CHECK_CONTAINS(onnxstream_model_last_error(m), "would exceed max_bytes");
            CHECK_CONTAINS(onnxstream_model_last_error(m), "model.txt:"); /* names the op */
            check_no_tensor_left(m);
        }
        faults_injected += failures;
        CHECK(failures > 10);
        /* The peak itself fits. */
        CHECK_OK(onnxstream_model_set_max_bytes(m, peak));
        CHECK_OK(onnxstream_model_memory_stats(m, &stats, 1));
        CHECK_OK(onnxstream_model_run(m));
        check_result(m);
        CHECK_OK(onnxstream_model_memory_stats(m, &stats, 0));
        CHECK(stats.peak_bytes == peak);
        /* Lifted. */
        CHECK_OK(onnxstream_model_set_max_bytes(m, 0));
        CHECK_OK(onnxstream_model_run(m));
        check_result(m);
        printf("max_bytes: peak %llu bytes, %d budgets below it refused\n", (unsigned long long)peak, failures);
    }
    onnxstream_model_destroy(m);
    CHECK_STATUS(onnxstream_model_set_max_bytes(NULL, 1), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    test_remove_dir(dir);
}

/* A 0.3 caller's options struct ends before max_bytes: whatever follows it is not read (no budget). */
static void test_old_options_struct(void) {
    onnxstream_model_options_t options;
    onnxstream_model_t *m = NULL;
    onnxstream_model_options_init(&options);
    options.struct_size = (uint32_t)offsetof(onnxstream_model_options_t, max_bytes);
    options.threads = 1;
    options.max_bytes = 1; /* garbage past the struct */
    if (!CHECK_OK(onnxstream_model_create(&options, &m))) return;
    CHECK_OK(onnxstream_model_load_string(m, "r:Relu*input:x(1,2,5,5)*output:y(1,2,5,5)\n", NULL));
    CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 4, kXShape, kX, sizeof kX));
    CHECK_OK(onnxstream_model_run(m));
    onnxstream_model_destroy(m);
}

int main(void) {
    init_data();
    test_provider_fails_at_every_request(0);
    test_provider_fails_at_every_request(1);
    test_short_data(0);
    test_short_data(1);
    test_file_provider_faults(ONNXSTREAM_PROVIDER_NOCACHE);
    test_file_provider_faults(ONNXSTREAM_PROVIDER_PREFETCH);
    test_max_bytes();
    test_old_options_struct();
    printf("faults: %d faults injected\n", faults_injected);
    return test_finish("faults");
}
