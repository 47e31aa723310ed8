/*
 * XNNPACK's "fp16 weights, fp32 arithmetic" fully connected operator (xnn_create_fully_connected_nc_f32_f16,
 * 2024 API) against what onnxstream does with an fp16 weight on a CPU without fp16 arithmetic: widen the
 * weight to float32 with the CPU's conversion instructions (x86 F16C, ARM NEON), then create the float32
 * operator. A benchmark, not a test: it prints the create (pack) time of each path, the run time of the
 * operators they make, and the largest difference between their outputs.
 *
 * Build and run in the Debian 13 root (XNNPACK 2024-11), from the project root:
 *   scripts/debian13.sh exec sh -c 'cc -O2 -mf16c tests/bench/f32_f16_weights.c -o /tmp/f32_f16_weights \
 *       -lXNNPACK -lpthreadpool -lcpuinfo -lm && /tmp/f32_f16_weights'
 * and cross-built for aarch64, run under qemu as a Pi Zero 2 / 3 (`scripts/debian13.sh arm64` makes the sysroot):
 *   scripts/debian13.sh exec sh -c 'S=/opt/onnxstream-cross/aarch64-linux-gnu; aarch64-linux-gnu-gcc -O2 \
 *       --sysroot=$S -I$S/usr/include -L$S/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,$S/usr/lib/aarch64-linux-gnu \
 *       tests/bench/f32_f16_weights.c -o /tmp/f32_f16_weights_arm64 -lXNNPACK -lpthreadpool -lcpuinfo -lm &&
 *       QEMU_CPU=cortex-a53 qemu-aarch64-static -L $S /tmp/f32_f16_weights_arm64'
 * Shapes: the SD 1.5 UNet's largest fully connected layers.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pthreadpool.h>
#include <xnnpack.h>

#if defined(__F16C__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* float -> IEEE half, round to nearest even (normal range only: the weights here are small). */
static uint16_t to_half(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, mant = x & 0x7fffff;
    int exp = (int)((x >> 23) & 0xff) - 127 + 15;
    if (exp <= 0) return (uint16_t)sign;
    uint32_t h = sign | (uint32_t)exp << 10 | mant >> 13, rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
    return (uint16_t)h;
}

/* The widening onnxstream does on load: the CPU's conversion instructions where it has them. */
static void widen(const uint16_t *src, float *dst, size_t n) {
    size_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
#elif defined(__aarch64__)
    for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
#endif
    for (; i < n; ++i) { /* scalar tail (exact for the normal values used here) */
        uint16_t h = src[i];
        uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
        uint32_t x = exp ? sign | (exp - 15 + 127) << 23 | mant << 13 : sign;
        memcpy(dst + i, &x, 4);
    }
}

static void check(enum xnn_status s, const char *what) {
    if (s != xnn_status_success) {
        fprintf(stderr, "f32_f16_weights: %s failed (%d)\n", what, (int)s);
        exit(1);
    }
}

static double run(xnn_operator_t op, int f16, size_t m, const float *x, float *y, pthreadpool_t pool) {
    double best = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
        double t = now();
        if (f16) {
            check(xnn_reshape_fully_connected_nc_f32_f16(op, m, pool), "reshape f32_f16");
            check(xnn_setup_fully_connected_nc_f32_f16(op, x, y), "setup f32_f16");
        } else {
            check(xnn_reshape_fully_connected_nc_f32(op, m, pool), "reshape f32");
            check(xnn_setup_fully_connected_nc_f32(op, x, y), "setup f32");
        }
        check(xnn_run_operator(op, pool), "run");
        t = now() - t;
        if (t < best) best = t;
    }
    return best;
}

int main(void) {
    check(xnn_initialize(NULL), "xnn_initialize");
    pthreadpool_t pool = pthreadpool_create(2);
    /* (tokens, in, out): the UNet's feed-forward projections at 64x64 and 32x32 latents, and its largest. */
    const size_t shapes[][3] = {{4096, 320, 2560}, {1024, 640, 5120}, {64, 1280, 10240}};
    printf("| M x K -> N | pack: f32_f16 operator | pack: widen + f32 operator | run f32_f16 | run f32 | max |diff| |\n");
    printf("|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        const size_t m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        uint16_t *w16 = malloc(n * k * 2);
        float *x = malloc((m * k + 16) * 4), *ya = malloc(m * n * 4), *yb = malloc(m * n * 4);
        srand(7);
        for (size_t i = 0; i < n * k; ++i) w16[i] = to_half(((float)rand() / RAND_MAX - 0.5f) * 0.1f);
        for (size_t i = 0; i < m * k; ++i) x[i] = (float)rand() / RAND_MAX - 0.5f;
        xnn_operator_t a = NULL, b = NULL;
        double ta = 1e9, tb = 1e9;
        for (int rep = 0; rep < 3; ++rep) { /* best of 3 creates */
            if (a) xnn_delete_operator(a);
            if (b) xnn_delete_operator(b);
            double t = now();
            check(xnn_create_fully_connected_nc_f32_f16(k, n, k, n, w16, NULL, -INFINITY, INFINITY, 0, NULL, NULL, &a),
                  "create f32_f16");
            t = now() - t;
            if (t < ta) ta = t;
            t = now();
            float *w32 = malloc(n * k * 4);
            widen(w16, w32, n * k);
            check(xnn_create_fully_connected_nc_f32(k, n, k, n, w32, NULL, -INFINITY, INFINITY, 0, NULL, NULL, &b),
                  "create f32");
            free(w32);
            t = now() - t;
            if (t < tb) tb = t;
        }
        double ra = run(a, 1, m, x, ya, pool), rb = run(b, 0, m, x, yb, pool);
        double diff = 0;
        for (size_t i = 0; i < m * n; ++i) diff = fmax(diff, fabs((double)ya[i] - yb[i]));
        printf("| %zu x %zu -> %zu | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %g |\n", m, k, n, ta * 1e3, tb * 1e3,
               ra * 1e3, rb * 1e3, diff);
        xnn_delete_operator(a);
        xnn_delete_operator(b);
        free(w16);
        free(x);
        free(ya);
        free(yb);
    }
    pthreadpool_destroy(pool);
    return 0;
}
