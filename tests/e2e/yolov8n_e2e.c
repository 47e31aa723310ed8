/*
 * End-to-end: the real YOLOv8n from ../shared/models/yolov8n on the real input must match ONNX
 * Runtime's reference output (relative L2 <= 1e-4, max abs <= 1e-2) with every weights provider:
 * the four built-in ones, a C callback provider (read), a zero-copy callback provider (acquire/release),
 * and nocache over a folder holding only OnnxStream's "_nhwc.bin" conv weights.
 * Usage: yolov8n_e2e SHARED_DIR
 * ONNXSTREAM_E2E_CASES="label,label,..." runs only the cases with those labels (the valgrind test setup
 * picks one: a case under valgrind takes ~8 minutes of CPU).
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "onnxstream.h"
#include "yolov8n_data.h"

static char model_dir[4096];
static int failures = 0, passes = 0, skipped = 0;

/* Whether the case `label` is selected by ONNXSTREAM_E2E_CASES (every case when unset). */
static int selected(const char *label) {
    const char *list = getenv("ONNXSTREAM_E2E_CASES");
    if (!list || !*list) return 1;
    size_t len = strlen(label);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && strncmp(p, label, n) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

/* --- a host provider that reads files itself (read path) ---------------------------------------- */
static onnxstream_status_t host_read(void *user_data, const onnxstream_weight_request_t *req, void *dst) {
    const char *dir = (const char *)user_data;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, req->file);
    size_t size = 0;
    void *data = read_file(path, &size);
    if (!data || size != req->byte_size) {
        snprintf(req->error_message, req->error_message_capacity, "host could not read %s", path);
        free(data);
        return ONNXSTREAM_ERR_IO;
    }
    memcpy(dst, data, size);
    free(data);
    return ONNXSTREAM_OK;
}

/* --- a zero-copy host provider: lends malloc'ed buffers, counts acquire/release ------------------- */
static int outstanding = 0, acquired = 0, destroyed = 0;
static onnxstream_status_t host_acquire(void *user_data, const onnxstream_weight_request_t *req, const void **data,
                                        void **token) {
    const char *dir = (const char *)user_data;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, req->file);
    size_t size = 0;
    void *buf = read_file(path, &size);
    if (!buf || size != req->byte_size) {
        free(buf);
        snprintf(req->error_message, req->error_message_capacity, "host could not read %s", path);
        return ONNXSTREAM_ERR_IO;
    }
    *data = buf;
    *token = buf;
    ++outstanding;
    ++acquired;
    return ONNXSTREAM_OK;
}
static void host_release(void *user_data, void *token) {
    (void)user_data;
    free(token);
    --outstanding;
}
static void host_destroy(void *user_data) {
    (void)user_data;
    ++destroyed;
}

typedef enum { BUILTIN, CALLBACK_READ, CALLBACK_ACQUIRE } mode_t_;

/* Memory settings of a case: a memory mode and an explicit weight chunk size (0 = the mode's). */
typedef struct {
    int memory_mode;
    uint64_t chunk_bytes;
    const char *cache_path; /* persistent weights cache, or NULL */
    uint64_t kept_kernel_bytes; /* 0: the mode's */
} memory_t;
static const memory_t kDefaultMemory = {ONNXSTREAM_MEMORY_BALANCED, 0, NULL, 0};

static void run_case(const char *label, const char *dir, mode_t_ mode, int provider, memory_t memory,
                     const float *input, const float *expected, size_t n_out) {
    if (!selected(label)) {
        ++skipped;
        return;
    }
    onnxstream_model_options_t options;
    onnxstream_model_options_init(&options);
    options.threads = 2;
    options.provider = provider;
    options.memory_mode = memory.memory_mode;
    options.weight_chunk_bytes = memory.chunk_bytes;
    options.cache_path = memory.cache_path;
    options.kept_kernel_bytes = memory.kept_kernel_bytes;
    onnxstream_model_t *model = NULL;
    if (onnxstream_model_create(&options, &model) != ONNXSTREAM_OK) {
        printf("FAIL %s: create: %s\n", label, onnxstream_last_error());
        ++failures;
        return;
    }
    onnxstream_weights_provider_t vt;
    memset(&vt, 0, sizeof vt);
    vt.struct_size = sizeof vt;
    if (mode == CALLBACK_READ) vt.read = host_read;
    if (mode == CALLBACK_ACQUIRE) {
        vt.acquire = host_acquire;
        vt.release = host_release;
        vt.destroy = host_destroy;
    }
    int64_t shape[4] = {1, 3, 640, 640};
    onnxstream_status_t s = ONNXSTREAM_OK;
    if (mode != BUILTIN) s = onnxstream_model_set_weights_provider(model, &vt, (void *)dir);
    if (s == ONNXSTREAM_OK) s = onnxstream_model_load(model, dir);
    if (s == ONNXSTREAM_OK)
        s = onnxstream_model_push_tensor(model, "images", ONNXSTREAM_DTYPE_FLOAT32, 4, shape, input,
                                         3 * 640 * 640 * sizeof(float));
    /* Three runs: the later ones must give the same answer (caches, reused plans, prefetch restart, and
       in balanced the kernels kept after the first run and those made to be kept on the second). */
    for (int r = 0; r < 3 && s == ONNXSTREAM_OK; ++r) s = onnxstream_model_run(model);
    onnxstream_run_stats_t stats;
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    if (s == ONNXSTREAM_OK) s = onnxstream_model_run_stats(model, &stats);
    onnxstream_tensor_view_t view;
    view.struct_size = sizeof view;
    if (s == ONNXSTREAM_OK) s = onnxstream_model_get_output_by_name(model, "output0", &view);
    if (s != ONNXSTREAM_OK) {
        printf("FAIL %s: %s: %s\n", label, onnxstream_status_name(s), onnxstream_model_last_error(model));
        ++failures;
        onnxstream_model_destroy(model);
        return;
    }
    if (view.dtype != ONNXSTREAM_DTYPE_FLOAT32 || view.rank != 3 || view.shape[0] != 1 || view.shape[1] != 84 ||
        view.shape[2] != 8400 || view.byte_size != n_out * sizeof(float)) {
        printf("FAIL %s: output0 has the wrong dtype/shape\n", label);
        ++failures;
        onnxstream_model_destroy(model);
        return;
    }
    const float *got = (const float *)view.data;
    double diff2 = 0, ref2 = 0, max_abs = 0;
    for (size_t i = 0; i < n_out; ++i) {
        double d = (double)got[i] - expected[i];
        diff2 += d * d;
        ref2 += (double)expected[i] * expected[i];
        if (fabs(d) > max_abs || d != d) max_abs = d != d ? INFINITY : fabs(d);
    }
    double rel_l2 = sqrt(diff2 / ref2);
    int ok = rel_l2 <= 1e-4 && max_abs <= 1e-2;
    /* balanced keeps prepared convolutions of built-in providers within its 24 MiB. How many depends on
       measured times (59 of YOLOv8n's 64 on an idle machine, 6-9 on the Debian 12 build with another build
       on the cores; under qemu, QEMU_CPU set, preparation costs little next to the emulated arithmetic and
       few or none are), so the count checked is one; which ones are chosen is unit_kept_kernels' test. A
       host's provider, kept_kernel_bytes UINT64_MAX and the other modes keep none this way. */
    const int budgeted = mode == BUILTIN && memory.memory_mode == ONNXSTREAM_MEMORY_BALANCED &&
                         provider != ONNXSTREAM_PROVIDER_RAM && memory.kept_kernel_bytes != UINT64_MAX;
    const uint64_t least_kept = getenv("QEMU_CPU") ? 0 : 1;
    const int kept_ok = budgeted ? stats.kept_kernels >= least_kept && stats.kept_kernel_bytes <= (24u << 20) &&
                                       (stats.kept_kernels == 0) == (stats.kept_kernel_bytes == 0)
                                 : stats.kept_kernels == 0;
    if (!kept_ok) ok = 0;
    printf("%s %s: relative L2 %.3g, max abs %.3g, %llu kept kernels (%llu bytes)\n", ok ? "ok  " : "FAIL", label,
           rel_l2, max_abs, (unsigned long long)stats.kept_kernels, (unsigned long long)stats.kept_kernel_bytes);
    if (ok) ++passes;
    else ++failures;
    onnxstream_model_destroy(model);
}

static int copy_file(const char *src, const char *dst) {
    size_t size = 0;
    void *data = read_file(src, &size);
    FILE *f = data ? fopen(dst, "wb") : NULL;
    int ok = f && fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    free(data);
    return ok;
}

/* A copy of the model folder without any "_nchw.bin" that has an "_nhwc.bin" twin. Copies, not symbolic
 * links: the engine refuses links that lead outside the model folder. */
static int make_nhwc_only_dir(char *out, size_t cap) {
    snprintf(out, cap, "/tmp/onnxstream_nhwc_only_XXXXXX");
    if (!mkdtemp(out)) return 0;
    DIR *d = opendir(model_dir);
    if (!d) return 0;
    struct dirent *e;
    int removed = 0;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if (name[0] == '.') continue;
        size_t len = strlen(name);
        if (len > 9 && strcmp(name + len - 9, "_nchw.bin") == 0) {
            char twin[1024], twin_path[8192];
            snprintf(twin, sizeof twin, "%.*s_nhwc.bin", (int)(len - 9), name);
            snprintf(twin_path, sizeof twin_path, "%s/%s", model_dir, twin);
            if (access(twin_path, R_OK) == 0) {
                ++removed;
                continue;
            }
        }
        char src[8192], dst[8192];
        snprintf(src, sizeof src, "%s/%s", model_dir, name);
        snprintf(dst, sizeof dst, "%s/%s", out, name);
        if (!copy_file(src, dst)) {
            closedir(d);
            return 0;
        }
    }
    closedir(d);
    return removed > 0;
}

static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[8192];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SHARED_DIR\n", argv[0]);
        return 2;
    }
    char *abs_shared = realpath(argv[1], NULL);
    if (!abs_shared) {
        fprintf(stderr, "shared folder %s not found\n", argv[1]);
        return 2;
    }
    snprintf(model_dir, sizeof model_dir, "%s/models/yolov8n", abs_shared);
    float *input = NULL, *expected = NULL;
    if (!load_yolov8n_data(abs_shared, &input, &expected)) return 2;
    const size_t n_out = YOLOV8N_OUTPUT_FLOATS;

    const memory_t dflt = kDefaultMemory;
    run_case("nocache", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_NOCACHE, dflt, input, expected, n_out);
    run_case("prefetch", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_PREFETCH, dflt, input, expected, n_out);
    run_case("mmap", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_MMAP, dflt, input, expected, n_out);
    run_case("ram", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_RAM, dflt, input, expected, n_out);
    const memory_t keep_none = {ONNXSTREAM_MEMORY_BALANCED, 0, NULL, UINT64_MAX};
    run_case("balanced, no kept kernels", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_NOCACHE, keep_none, input,
             expected, n_out);
    run_case("callback-read", model_dir, CALLBACK_READ, 0, dflt, input, expected, n_out);
    run_case("callback-acquire", model_dir, CALLBACK_ACQUIRE, 0, dflt, input, expected, n_out);
    /* Memory modes, and weights streamed in small output-channel chunks through every provider kind
       (YOLOv8n's weights are small: 16 KiB chunks split most convolutions into several). */
    const memory_t min_mode = {ONNXSTREAM_MEMORY_MIN, 0, NULL, 0}, max_speed = {ONNXSTREAM_MEMORY_MAX_SPEED, 0, NULL, 0};
    const memory_t chunked = {ONNXSTREAM_MEMORY_MIN, 16 << 10, NULL, 0};
    run_case("memory min", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_AUTO, min_mode, input, expected, n_out);
    run_case("memory max-speed", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_AUTO, max_speed, input, expected, n_out);
    run_case("chunked nocache", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_NOCACHE, chunked, input, expected, n_out);
    run_case("chunked prefetch", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_PREFETCH, chunked, input, expected, n_out);
    run_case("chunked mmap", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_MMAP, chunked, input, expected, n_out);
    run_case("chunked ram", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_RAM, chunked, input, expected, n_out);
    run_case("chunked callback", model_dir, CALLBACK_READ, 0, chunked, input, expected, n_out);
    /* The persistent weights cache through the C API: the first model builds it, the second serves from it
       (balanced and chunked min), the third keeps its pages (max-speed). */
    {
        char cache_dir[] = "/tmp/onnxstream_e2e_cache_XXXXXX", cache_path[256];
        if (mkdtemp(cache_dir)) {
            snprintf(cache_path, sizeof cache_path, "%s/yolov8n.cache", cache_dir);
            const memory_t cached = {ONNXSTREAM_MEMORY_BALANCED, 0, cache_path, 0};
            const memory_t cached_chunked = {ONNXSTREAM_MEMORY_MIN, 16 << 10, cache_path, 0};
            const memory_t cached_fast = {ONNXSTREAM_MEMORY_MAX_SPEED, 0, cache_path, 0};
            run_case("cache build", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_AUTO, cached, input, expected, n_out);
            if (selected("cache build") && access(cache_path, R_OK) != 0) {
                printf("FAIL cache build: no cache file at %s\n", cache_path);
                ++failures;
            }
            run_case("cache serve", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_AUTO, cached, input, expected, n_out);
            run_case("cache serve, chunked", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_AUTO, cached_chunked, input,
                     expected, n_out);
            run_case("cache serve, max-speed", model_dir, BUILTIN, ONNXSTREAM_PROVIDER_AUTO, cached_fast, input,
                     expected, n_out);
            unlink(cache_path);
            rmdir(cache_dir);
        } else {
            printf("FAIL cannot make a folder for the cache\n");
            ++failures;
        }
    }
    if (selected("callback-acquire") && (outstanding != 0 || acquired == 0 || destroyed != 1)) {
        printf("FAIL callback-acquire: %d buffers still lent, %d acquired, destroy called %d times\n", outstanding,
               acquired, destroyed);
        ++failures;
    }
    char nhwc_dir[256];
    if (make_nhwc_only_dir(nhwc_dir, sizeof nhwc_dir)) {
        run_case("nhwc-only folder", nhwc_dir, BUILTIN, ONNXSTREAM_PROVIDER_NOCACHE, dflt, input, expected, n_out);
        run_case("nhwc-only folder, chunked", nhwc_dir, BUILTIN, ONNXSTREAM_PROVIDER_NOCACHE, chunked, input,
                 expected, n_out);
    } else {
        printf("FAIL could not build the nhwc-only folder\n");
        ++failures;
    }
    remove_dir(nhwc_dir);
    free(input);
    free(expected);
    free(abs_shared);
    if (skipped) printf("%d cases not selected by ONNXSTREAM_E2E_CASES\n", skipped);
    if (passes == 0 && failures == 0) {
        printf("FAIL ONNXSTREAM_E2E_CASES selects no case\n");
        ++failures;
    }
    printf("%d passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
