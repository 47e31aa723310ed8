/* The portable RNG against fixed values from tests/scheduler_reference.py --rng (an independent Python
 * implementation of the algorithm documented in rng.h). Raw outputs and uniforms must match exactly;
 * normals within 1e-6 (the reference uses the host libm's log, this code its own). */
#include "rng.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    uint64_t seed;
    uint64_t u64[4];   /* first four next_u64 after seeding */
    float uniform[4];  /* the following four sd_rng_uniform */
    float normal[8];   /* first eight sd_rng_normal after a fresh seed */
} Expected;

static const Expected EXPECTED[] = {
{UINT64_C(0x0000000000000000),
 {UINT64_C(0x99EC5F36CB75F2B4), UINT64_C(0xBF6E1F784956452A), UINT64_C(0x1A5F849D4933E6E0), UINT64_C(0x6AA594F1262D2D2C)},
 {0.732996762f, 0.999748409f, 0.422211468f, 0.535654843f},
 {0.598102629f, 1.46345997f, -0.895052552f, -0.188062772f, -2.41560674f, 1.10720944f, -0.762640655f, 0.300214738f}},
{UINT64_C(0x000000000000002A),
 {UINT64_C(0x15780B2E0C2EC716), UINT64_C(0x6104D9866D113A7E), UINT64_C(0xAE17533239E499A1), UINT64_C(0xECB8AD4703B360A1)},
 {0.991803885f, 0.769739449f, 0.719258547f, 0.850008428f},
 {-0.726219118f, -0.211196914f, 0.221622705f, 0.522771716f, 0.46417731f, 0.740978897f, 1.47624946f, 0.470759124f}},
{UINT64_C(0x000001000000002A),
 {UINT64_C(0x7DC1FC0ED31BFDC9), UINT64_C(0x5813571FE41CA4A2), UINT64_C(0xDEF4FC74A19C55AF), UINT64_C(0xF53383E8F1C08F6B)},
 {0.867095768f, 0.427400529f, 0.56672287f, 0.233312666f},
 {-0.120967232f, -2.15388799f, 1.05620837f, -0.208883241f, 0.375432879f, -1.50058174f, 0.862071633f, -0.615529299f}},
{UINT64_C(0xFFFFFFFFFFFFFFFF),
 {UINT64_C(0x8F5520D52A7EAD08), UINT64_C(0xC476A018CAA1802D), UINT64_C(0x81DE31C0D260469E), UINT64_C(0xBF658D7E065F3C2F)},
 {0.567223728f, 0.731740832f, 0.370325327f, 0.767688334f},
 {0.338915169f, 1.5133363f, 0.0493588634f, 1.67520225f, 0.475606948f, 1.63956201f, -0.628383994f, 1.29717767f}},
};

static void test_fixed_values(void)
{
    size_t c;
    char msg[128];
    for (c = 0; c < sizeof EXPECTED / sizeof EXPECTED[0]; c++) {
        const Expected *e = &EXPECTED[c];
        sd_rng_t r;
        int k, ok = 1;
        sd_rng_seed(&r, e->seed);
        for (k = 0; k < 4; k++)
            ok &= sd_rng_next_u64(&r) == e->u64[k];
        snprintf(msg, sizeof msg, "seed %#llx: next_u64 exact", (unsigned long long)e->seed);
        check(ok, msg);
        ok = 1;
        for (k = 0; k < 4; k++)
            ok &= sd_rng_uniform(&r) == e->uniform[k];
        snprintf(msg, sizeof msg, "seed %#llx: uniform exact", (unsigned long long)e->seed);
        check(ok, msg);
        ok = 1;
        sd_rng_seed(&r, e->seed);
        for (k = 0; k < 8; k++) {
            float v = sd_rng_normal(&r);
            if (!(fabsf(v - e->normal[k]) <= 1e-6f)) {
                printf("  normal %d: got %.9g want %.9g\n", k, v, e->normal[k]);
                ok = 0;
            }
        }
        snprintf(msg, sizeof msg, "seed %#llx: normals", (unsigned long long)e->seed);
        check(ok, msg);
    }
}

static void test_streams(void)
{
    sd_rng_t a, b, c;
    float fa[1001], fb[1001];
    size_t k;
    int ok = 1;
    sd_rng_seed(&a, 123456789);
    b = a;
    sd_rng_fill_normal(&a, fa, 1001);
    for (k = 0; k < 1001; k++)
        fb[k] = sd_rng_normal(&b);
    check(memcmp(fa, fb, sizeof fa) == 0, "fill_normal = repeated normal");
    /* a copied state, also mid-pair, continues identically */
    c = a;
    for (k = 0; k < 5; k++)
        ok &= sd_rng_normal(&a) == sd_rng_normal(&c);
    check(ok, "copied state continues identically");
    sd_rng_seed(&a, 7);
    sd_rng_seed(&b, 7);
    sd_rng_fill_normal(&a, fa, 64);
    check(sd_rng_noise(&b, fb, 64) == 0 && memcmp(fa, fb, 64 * sizeof(float)) == 0, "sd_rng_noise adapter");
    sd_rng_seed(&a, 42);
    sd_rng_seed(&b, (UINT64_C(1) << 63) | 42);
    check(sd_rng_next_u64(&a) != sd_rng_next_u64(&b), "high seed bits matter");
    sd_rng_fill_normal(&a, fa, 0);
    check(1, "fill_normal with n = 0");
}

static void test_statistics(void)
{
    sd_rng_t r;
    const int n = 1000000;
    double sum = 0, sum2 = 0, usum = 0, umin = 1, umax = 0;
    int i, tail = 0;
    sd_rng_seed(&r, 2024);
    for (i = 0; i < n; i++) {
        double v = sd_rng_normal(&r);
        double u = sd_rng_uniform(&r);
        sum += v;
        sum2 += v * v;
        tail += fabs(v) > 3.0;
        usum += u;
        if (u < umin)
            umin = u;
        if (u > umax)
            umax = u;
    }
    check(fabs(sum / n) < 0.005, "normal mean ~ 0");
    check(fabs(sum2 / n - 1.0) < 0.01, "normal variance ~ 1");
    /* P(|z| > 3) = 0.0027 */
    check(tail > 2300 && tail < 3100, "normal tails");
    check(fabs(usum / n - 0.5) < 0.002 && umin >= 0.0 && umax < 1.0, "uniform in [0,1), mean 1/2");
}

static void test_log(void)
{
    double x, worst = 0;
    int ok = 1;
    for (x = 1e-300; x < 1e300; x *= 1.37) {
        double a = sd_rng_portable_log(x), b = log(x);
        double err = fabs(a - b) / (fabs(b) > 1e-300 ? fabs(b) : 1.0);
        if (err > worst)
            worst = err;
    }
    for (x = 1e-6; x <= 1.0; x += 1e-4) {
        double a = sd_rng_portable_log(x), b = log(x);
        double err = fabs(a - b) / (fabs(b) > 1e-300 ? fabs(b) : 1.0);
        if (err > worst && b != 0.0)
            worst = err;
        ok &= fabs(a - b) <= 4e-16 * (fabs(b) > 1 ? fabs(b) : 1);
    }
    if (!(worst < 1e-15))
        printf("  portable log worst relative error %.3g\n", worst);
    check(ok && worst < 1e-15, "portable log matches libm to ~1 ulp");
    check(sd_rng_portable_log(1.0) == 0.0, "log(1) = 0");
    check(isinf(sd_rng_portable_log(0.0)) && sd_rng_portable_log(0.0) < 0, "log(0) = -inf");
    check(isnan(sd_rng_portable_log(-1.0)), "log(-1) = nan");
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    test_fixed_values();
    test_streams();
    test_statistics();
    test_log();
    return check_summary();
}
