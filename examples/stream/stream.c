/*
 * A recurrent model run on a signal chunk by chunk, its state carried from one chunk to the next: what an
 * always-on voice detector or keyword spotter does with a microphone. C99 against include/onnxstream.h only.
 *
 * The model is loaded once. Each chunk is pushed as --input (its declared shape gives the chunk size), each
 * state input as the state output of the previous run (zeros before the first), and the model runs; no
 * reload, no copy of the weights. Prints one line per chunk (its index, the run's time, the first values of
 * --output) and at the end the median time per chunk and the process's peak RSS.
 *
 * usage: stream MODEL_DIR SIGNAL --input NAME --output NAME --state IN=OUT [--state IN=OUT]... [--threads N]
 *   SIGNAL is raw little-endian float32 samples; a last chunk shorter than the input is left out.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "onnxstream.h"

#define MAX_STATES 8

typedef struct {
    const char *in, *out; /* input name, output name */
    int64_t shape[8];
    size_t rank, bytes;
    float *value;
} state_t;

static int usage(void) {
    fprintf(stderr, "usage: stream MODEL_DIR SIGNAL --input NAME --output NAME --state IN=OUT [--state IN=OUT]... "
                    "[--threads N]\n");
    return 2;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The declared shape of input `name`; 0 when the model has no such input. */
static int input_shape(onnxstream_model_t *model, const char *name, int64_t *shape, size_t *rank, size_t *count) {
    for (size_t i = 0; i < onnxstream_model_input_count(model); ++i) {
        onnxstream_tensor_view_t v;
        v.struct_size = sizeof v;
        if (onnxstream_model_get_input(model, i, &v) != ONNXSTREAM_OK || strcmp(v.name, name) != 0) continue;
        if (v.rank > 8) return 0;
        *rank = v.rank;
        *count = 1;
        for (size_t d = 0; d < v.rank; ++d) {
            shape[d] = v.shape[d];
            *count *= (size_t)v.shape[d];
        }
        return 1;
    }
    return 0;
}

/* The whole file as floats; NULL (and a message) on failure. */
static float *read_signal(const char *path, size_t *count) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return NULL;
    }
    float *data = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 65536;
            float *grown = realloc(data, cap * sizeof *data);
            if (!grown) break;
            data = grown;
        }
        size_t got = fread(data + n, sizeof *data, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad || !data) {
        fprintf(stderr, "stream: cannot read %s\n", path);
        free(data);
        return NULL;
    }
    *count = n;
    return data;
}

int main(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *folder = argv[1], *signal_path = argv[2], *input = NULL, *output = NULL;
    state_t states[MAX_STATES];
    size_t n_states = 0;
    int threads = 1;
    for (int i = 3; i < argc; ++i) {
        if (i + 1 >= argc) return usage();
        if (strcmp(argv[i], "--input") == 0) {
            input = argv[++i];
        } else if (strcmp(argv[i], "--output") == 0) {
            output = argv[++i];
        } else if (strcmp(argv[i], "--threads") == 0) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--state") == 0 && n_states < MAX_STATES) {
            char *spec = argv[++i], *eq = strchr(spec, '=');
            if (!eq || eq == spec || !eq[1]) return usage();
            *eq = '\0';
            memset(&states[n_states], 0, sizeof states[n_states]);
            states[n_states].in = spec;
            states[n_states].out = eq + 1;
            ++n_states;
        } else {
            return usage();
        }
    }
    if (!input || !output || threads < 0) return usage();

    onnxstream_model_options_t options;
    onnxstream_model_options_init(&options);
    options.threads = threads;
    onnxstream_model_t *model = NULL;
    if (onnxstream_model_create(&options, &model) != ONNXSTREAM_OK) {
        fprintf(stderr, "stream: %s\n", onnxstream_last_error());
        return 1;
    }
    int status = 1;
    float *signal = NULL;
    double *times = NULL;
    if (onnxstream_model_load(model, folder) != ONNXSTREAM_OK) {
        fprintf(stderr, "stream: %s\n", onnxstream_model_last_error(model));
        goto done;
    }
    int64_t chunk_shape[8];
    size_t chunk_rank = 0, chunk = 0, samples = 0;
    if (!input_shape(model, input, chunk_shape, &chunk_rank, &chunk) || chunk == 0) {
        fprintf(stderr, "stream: the model has no input '%s'\n", input);
        goto done;
    }
    for (size_t s = 0; s < n_states; ++s) {
        size_t count = 0;
        if (!input_shape(model, states[s].in, states[s].shape, &states[s].rank, &count)) {
            fprintf(stderr, "stream: the model has no state input '%s'\n", states[s].in);
            goto done;
        }
        states[s].bytes = count * sizeof(float);
        states[s].value = calloc(count ? count : 1, sizeof(float));
        if (!states[s].value) goto done;
    }
    if (!(signal = read_signal(signal_path, &samples))) goto done;
    const size_t chunks = samples / chunk;
    times = calloc(chunks ? chunks : 1, sizeof *times);
    if (!times) goto done;
    printf("%zu chunks of %zu samples\n", chunks, chunk);

    for (size_t c = 0; c < chunks; ++c) {
        const double t0 = now_ms();
        onnxstream_status_t st = onnxstream_model_push_tensor(model, input, ONNXSTREAM_DTYPE_FLOAT32, chunk_rank,
                                                              chunk_shape, signal + c * chunk, chunk * sizeof(float));
        for (size_t s = 0; s < n_states && st == ONNXSTREAM_OK; ++s)
            st = onnxstream_model_push_tensor(model, states[s].in, ONNXSTREAM_DTYPE_FLOAT32, states[s].rank,
                                              states[s].shape, states[s].value, states[s].bytes);
        if (st == ONNXSTREAM_OK) st = onnxstream_model_run(model);
        onnxstream_tensor_view_t view;
        view.struct_size = sizeof view;
        /* Each state output becomes the next run's input; the views die with the next run, so copy. */
        for (size_t s = 0; s < n_states && st == ONNXSTREAM_OK; ++s) {
            st = onnxstream_model_get_output_by_name(model, states[s].out, &view);
            if (st == ONNXSTREAM_OK && (view.dtype != ONNXSTREAM_DTYPE_FLOAT32 || view.byte_size != states[s].bytes)) {
                fprintf(stderr, "stream: state output '%s' does not match input '%s'\n", states[s].out, states[s].in);
                goto done;
            }
            if (st == ONNXSTREAM_OK) memcpy(states[s].value, view.data, view.byte_size);
        }
        if (st == ONNXSTREAM_OK) st = onnxstream_model_get_output_by_name(model, output, &view);
        times[c] = now_ms() - t0;
        if (st != ONNXSTREAM_OK) {
            fprintf(stderr, "stream: chunk %zu: %s\n", c, onnxstream_model_last_error(model));
            goto done;
        }
        printf("chunk %zu %.3f ms", c, times[c]);
        const size_t shown = view.byte_size / sizeof(float) < 4 ? view.byte_size / sizeof(float) : 4;
        for (size_t k = 0; view.dtype == ONNXSTREAM_DTYPE_FLOAT32 && k < shown; ++k)
            printf(" %.9g", (double)((const float *)view.data)[k]);
        printf("\n");
    }
    qsort(times, chunks, sizeof *times, compare_doubles);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("median %.3f ms per chunk, peak RSS %.1f MB\n", chunks ? times[chunks / 2] : 0.0,
           (double)usage.ru_maxrss / 1024.0);
    status = 0;
done:
    for (size_t s = 0; s < n_states; ++s) free(states[s].value);
    free(signal);
    free(times);
    onnxstream_model_destroy(model);
    return status;
}
