/*
 * Host weights providers through the C API: a read provider serving weights from memory, a zero-copy
 * acquire/release provider (every acquire released exactly once), destroy called exactly once when
 * replaced and at model destroy, a failing callback reported as ONNXSTREAM_ERR_CALLBACK with the
 * host's message and the weight file name, and the model running again once the host recovers.
 * A Conv checks that hosts serve the OIHW layout model.txt declares, whatever the engine prefers, and
 * run stats count the bytes the engine then copies on the weight path.
 */
#include <stdio.h>
#include <string.h>

#include "capi_test.h"

/* ---- the weights the host serves ---------------------------------------------------------------- */

/* out = Conv(x, w, bias) + b, with x (1,2,3,4), w (3,2,2,3) OIHW, bias (3), b (3,1,1) -> out (1,3,2,2). */
static const char *kModel =
    "conv:Conv*input:x(1,2,3,4);w_nchw.bin(float32:3,2,2,3);bias.bin(float32:3)*output:c(1,3,2,2)"
    "*dilations:1,1;group:1;kernel_shape:2,3;pads:0,0,0,0;strides:1,1\n"
    "add:Add*input:c(1,3,2,2);b.bin(float32:3,1,1)*output:out(1,3,2,2)\n";
static float kW[36], kBias[3] = {0.5f, -1.0f, 2.0f}, kB[3] = {10.0f, 20.0f, 30.0f}, kX[24];
static const int64_t kXShape[4] = {1, 2, 3, 4};

static void init_data(void) {
    int i;
    for (i = 0; i < 36; ++i) kW[i] = (float)((i * 7) % 11) - 5.0f; /* distinct small integers */
    for (i = 0; i < 24; ++i) kX[i] = (float)i * 0.25f - 2.0f;
}

/* Direct convolution in OIHW, the reference for the engine's result. */
static float expected_out(int o, int oh, int ow) {
    float acc = kBias[o];
    int i, kh, kw;
    for (i = 0; i < 2; ++i)
        for (kh = 0; kh < 2; ++kh)
            for (kw = 0; kw < 3; ++kw) acc += kW[((o * 2 + i) * 2 + kh) * 3 + kw] * kX[(i * 3 + oh + kh) * 4 + ow + kw];
    return acc + kB[o];
}

static void check_result(onnxstream_model_t *m) {
    onnxstream_tensor_view_t view;
    int o, h, w;
    memset(&view, 0, sizeof view);
    view.struct_size = sizeof view;
    if (!CHECK_OK(onnxstream_model_get_output_by_name(m, "out", &view))) return;
    CHECK(view.rank == 4 && view.shape[1] == 3 && view.shape[2] == 2 && view.shape[3] == 2);
    for (o = 0; o < 3; ++o)
        for (h = 0; h < 2; ++h)
            for (w = 0; w < 2; ++w) CHECK_FLOAT(((const float *)view.data)[(o * 2 + h) * 2 + w], expected_out(o, h, w));
}

/* weight_bytes_copied of the last run: the Conv reorders the 36-float OIHW kernel into OHWI (the host's
 * layout is not the kernel's); `padded` more floats when weights come zero-copy without XNNPACK's
 * read-past-the-end slack and an op that reads past the end (the Add, 3 floats) gets a padded copy. */
static void check_copied(onnxstream_model_t *m, int padded) {
    onnxstream_run_stats_t s;
    memset(&s, 0, sizeof s);
    s.struct_size = sizeof s;
    if (!CHECK_OK(onnxstream_model_run_stats(m, &s))) return;
    CHECK(s.weight_bytes_copied == (uint64_t)(36 + padded) * sizeof(float));
}

/* ---- host state --------------------------------------------------------------------------------- */

#define MAX_ACQUIRES 256

typedef struct Host {
    int reads, prefetches, destroys;
    int fail;          /* nonzero: the next read/acquire fails */
    int bad_request;   /* a request field did not match the model */
    int acquires, releases, bad_releases;
    unsigned char released[MAX_ACQUIRES]; /* per acquire: times released */
} Host;

static const float *lookup(const onnxstream_weight_request_t *req, size_t *bytes, int64_t *dims, size_t *rank) {
    if (!strcmp(req->file, "w_nchw.bin")) {
        *bytes = sizeof kW;
        *rank = 4;
        dims[0] = 3, dims[1] = 2, dims[2] = 2, dims[3] = 3;
        return kW;
    }
    if (!strcmp(req->file, "bias.bin")) {
        *bytes = sizeof kBias;
        *rank = 1;
        dims[0] = 3;
        return kBias;
    }
    if (!strcmp(req->file, "b.bin")) {
        *bytes = sizeof kB;
        *rank = 3;
        dims[0] = 3, dims[1] = 1, dims[2] = 1;
        return kB;
    }
    return NULL;
}

/* Finds the weight and checks the request describes it exactly as model.txt does. */
static const float *serve(Host *h, const onnxstream_weight_request_t *req) {
    size_t bytes = 0, rank = 0, i;
    int64_t dims[4];
    const float *data = lookup(req, &bytes, dims, &rank);
    if (!data || req->struct_size < sizeof *req || req->dtype != ONNXSTREAM_DTYPE_FLOAT32 || req->rank != rank ||
        req->byte_size != bytes || !req->error_message || req->error_message_capacity < 64) {
        ++h->bad_request;
        return NULL;
    }
    for (i = 0; i < rank; ++i)
        if (req->shape[i] != dims[i]) ++h->bad_request;
    return data;
}

static onnxstream_status_t host_read(void *user_data, const onnxstream_weight_request_t *req, void *dst) {
    Host *h = (Host *)user_data;
    const float *data;
    ++h->reads;
    if (h->fail) {
        snprintf(req->error_message, req->error_message_capacity, "disk on fire while reading %s", req->file);
        return ONNXSTREAM_ERR_IO;
    }
    data = serve(h, req);
    if (!data) return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    memcpy(dst, data, req->byte_size);
    return ONNXSTREAM_OK;
}

static onnxstream_status_t host_acquire(void *user_data, const onnxstream_weight_request_t *req, const void **data,
                                        void **token) {
    Host *h = (Host *)user_data;
    const float *p;
    if (h->fail) {
        snprintf(req->error_message, req->error_message_capacity, "no mapping for you");
        return ONNXSTREAM_ERR_IO;
    }
    p = serve(h, req);
    if (!p || h->acquires >= MAX_ACQUIRES) return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    *data = p; /* zero copy: the host's own array */
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

static void host_prefetch(void *user_data, const onnxstream_weight_request_t *req) {
    Host *h = (Host *)user_data;
    if (!serve(h, req)) return;
    ++h->prefetches;
}

static void host_destroy(void *user_data) { ++((Host *)user_data)->destroys; }

static void check_all_released_once(const Host *h) {
    int i;
    CHECK(h->bad_releases == 0);
    CHECK(h->releases == h->acquires);
    for (i = 0; i < h->acquires; ++i)
        if (h->released[i] != 1) test_fail(__FILE__, __LINE__, "acquire %d was released %d times", i, h->released[i]);
}

static onnxstream_weights_provider_t read_provider(void) {
    onnxstream_weights_provider_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.read = host_read;
    p.prefetch = host_prefetch;
    p.destroy = host_destroy;
    return p;
}

static onnxstream_weights_provider_t zero_copy_provider(void) {
    onnxstream_weights_provider_t p;
    memset(&p, 0, sizeof p);
    p.struct_size = sizeof p;
    p.acquire = host_acquire;
    p.release = host_release;
    p.destroy = host_destroy;
    return p;
}

static onnxstream_model_t *load_with(const onnxstream_weights_provider_t *p, Host *h) {
    onnxstream_model_t *m = test_new_model(ONNXSTREAM_PROVIDER_PREFETCH);
    if (!m) return NULL;
    CHECK_OK(onnxstream_model_set_weights_provider(m, p, h));
    /* No weights folder: the host serves every weight. */
    CHECK_OK(onnxstream_model_load_string(m, kModel, NULL));
    CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 4, kXShape, kX, sizeof kX));
    return m;
}

/* ---- tests -------------------------------------------------------------------------------------- */

static void test_read_provider(void) {
    Host h;
    onnxstream_weights_provider_t p = read_provider();
    onnxstream_model_t *m;
    int run;
    memset(&h, 0, sizeof h);
    m = load_with(&p, &h);
    if (!m) return;
    for (run = 0; run < 3; ++run) {
        int reads_before = h.reads;
        CHECK_OK(onnxstream_model_run(m));
        check_result(m);
        CHECK(h.reads - reads_before >= 3); /* every weight, every run: the host is the cache */
        check_copied(m, 0);
    }
    CHECK(h.bad_request == 0);
    CHECK(h.prefetches >= 3);
    CHECK(h.destroys == 0);
    onnxstream_model_destroy(m);
    CHECK(h.destroys == 1);
}

static void test_zero_copy_provider(void) {
    Host h;
    onnxstream_weights_provider_t p = zero_copy_provider();
    onnxstream_model_t *m;
    int run;
    memset(&h, 0, sizeof h);
    m = load_with(&p, &h);
    if (!m) return;
    for (run = 0; run < 3; ++run) {
        CHECK_OK(onnxstream_model_run(m));
        check_result(m);
        /* Released after the op that used them, so none is held between runs. */
        check_all_released_once(&h);
        check_copied(m, 3);
    }
    CHECK(h.acquires >= 9);
    CHECK(h.reads == 0); /* read is not used when acquire is set (and is NULL here) */
    CHECK(h.bad_request == 0);
    onnxstream_model_destroy(m);
    check_all_released_once(&h);
    CHECK(h.destroys == 1);
}

static void test_failing_callback_then_recovery(int zero_copy) {
    Host h;
    onnxstream_weights_provider_t p = zero_copy ? zero_copy_provider() : read_provider();
    onnxstream_model_t *m;
    const char *msg;
    memset(&h, 0, sizeof h);
    m = load_with(&p, &h);
    if (!m) return;
    h.fail = 1;
    CHECK_STATUS(onnxstream_model_run(m), ONNXSTREAM_ERR_CALLBACK);
    msg = onnxstream_model_last_error(m);
    CHECK_CONTAINS(msg, zero_copy ? "no mapping for you" : "disk on fire while reading w_nchw.bin");
    CHECK_CONTAINS(msg, "w_nchw.bin");
    CHECK_CONTAINS(msg, "ONNXSTREAM_ERR_IO"); /* the host's own status is kept in the message */
    CHECK(onnxstream_model_output_count(m) == 0);
    if (zero_copy) check_all_released_once(&h);

    /* The host recovers; the same model runs. */
    h.fail = 0;
    CHECK_OK(onnxstream_model_run(m));
    check_result(m);
    if (zero_copy) check_all_released_once(&h);
    onnxstream_model_destroy(m);
    CHECK(h.destroys == 1);
}

static void test_replacing_providers(void) {
    Host first, second, third;
    onnxstream_weights_provider_t p1 = read_provider(), p2 = zero_copy_provider(), bad;
    onnxstream_model_t *m;
    memset(&first, 0, sizeof first);
    memset(&second, 0, sizeof second);
    memset(&third, 0, sizeof third);
    m = load_with(&p1, &first);
    if (!m) return;
    CHECK_OK(onnxstream_model_run(m));
    check_result(m);

    /* Replacing destroys the old provider exactly once, right away. */
    CHECK_OK(onnxstream_model_set_weights_provider(m, &p2, &second));
    CHECK(first.destroys == 1);
    CHECK(second.destroys == 0);
    CHECK_OK(onnxstream_model_run(m));
    check_result(m);
    CHECK(second.acquires > 0);

    /* A rejected provider is not taken: neither it nor the current one is destroyed. */
    bad = read_provider();
    bad.read = NULL;
    CHECK_STATUS(onnxstream_model_set_weights_provider(m, &bad, &third), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK(third.destroys == 0);
    CHECK(second.destroys == 0);
    CHECK_OK(onnxstream_model_run(m));

    onnxstream_model_destroy(m);
    CHECK(first.destroys == 1);
    CHECK(second.destroys == 1);
    CHECK(third.destroys == 0);
    check_all_released_once(&second);
}

static void test_host_provider_after_file_load(void) {
    /* Load from a folder with the built-in provider, then hand the weights to the host. The files on
     * disk hold different values, so the result shows who served the weights. */
    char dir[4096];
    float zeros[36];
    Host h;
    onnxstream_weights_provider_t p = read_provider();
    onnxstream_model_t *m;
    memset(zeros, 0, sizeof zeros);
    memset(&h, 0, sizeof h);
    if (!test_temp_dir(dir, sizeof dir)) return;
    test_write_file(dir, "w_nchw.bin", zeros, sizeof kW);
    test_write_file(dir, "bias.bin", zeros, sizeof kBias);
    test_write_file(dir, "b.bin", zeros, sizeof kB);
    m = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    if (m) {
        onnxstream_tensor_view_t view;
        memset(&view, 0, sizeof view);
        view.struct_size = sizeof view;
        CHECK_OK(onnxstream_model_load_string(m, kModel, dir));
        CHECK_OK(onnxstream_model_push_tensor(m, "x", ONNXSTREAM_DTYPE_FLOAT32, 4, kXShape, kX, sizeof kX));
        CHECK_OK(onnxstream_model_run(m));
        if (CHECK_OK(onnxstream_model_get_output(m, 0, &view))) CHECK_FLOAT(((const float *)view.data)[0], 0.0f);
        CHECK_OK(onnxstream_model_set_weights_provider(m, &p, &h));
        CHECK_OK(onnxstream_model_run(m));
        check_result(m);
        CHECK(h.reads >= 3);
        onnxstream_model_destroy(m);
        CHECK(h.destroys == 1);
    }
    test_remove_dir(dir);
}

static void test_minimal_vtable(void) {
    /* An older provider struct that ends after `release`: prefetch/destroy are not read. */
    Host h;
    onnxstream_weights_provider_t p = read_provider();
    onnxstream_model_t *m;
    memset(&h, 0, sizeof h);
    p.struct_size = (uint32_t)(offsetof(onnxstream_weights_provider_t, release) + sizeof p.release);
    m = load_with(&p, &h);
    if (!m) return;
    CHECK_OK(onnxstream_model_run(m));
    check_result(m);
    onnxstream_model_destroy(m);
    CHECK(h.prefetches == 0);
    CHECK(h.destroys == 0);
    p.struct_size = 4;
    m = test_new_model(ONNXSTREAM_PROVIDER_NOCACHE);
    if (!m) return;
    CHECK_STATUS(onnxstream_model_set_weights_provider(m, &p, &h), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    onnxstream_model_destroy(m);
}

int main(void) {
    init_data();
    test_read_provider();
    test_zero_copy_provider();
    test_failing_callback_then_recovery(0);
    test_failing_callback_then_recovery(1);
    test_replacing_providers();
    test_host_provider_after_file_load();
    test_minimal_vtable();
    return test_finish("providers");
}
