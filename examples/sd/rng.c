#include "rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

void sd_rng_seed(sd_rng_t *rng, uint64_t seed)
{
    uint64_t x = seed;
    int i;
    for (i = 0; i < 4; i++)
        rng->s[i] = splitmix64(&x);
    rng->has_spare = 0;
    rng->spare = 0.0f;
}

uint64_t sd_rng_next_u64(sd_rng_t *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

float sd_rng_uniform(sd_rng_t *rng)
{
    return (float)(sd_rng_next_u64(rng) >> 40) * (1.0f / 16777216.0f);
}

double sd_rng_uniform_double(sd_rng_t *rng)
{
    return (double)(sd_rng_next_u64(rng) >> 11) * (1.0 / 9007199254740992.0);
}

double sd_rng_portable_log(double x)
{
    /* ln2 split so that e*LN2_HI is exact for |e| < 2^11 (fdlibm's constants). */
    static const double LN2_HI = 6.93147180369123816490e-01;
    static const double LN2_LO = 1.90821492927058770002e-10;
    static const double SQRT_HALF = 0.70710678118654752440;
    double m, s, z, p;
    int e;
    if (x != x || x < 0.0)
        return NAN;
    if (x == 0.0)
        return -HUGE_VAL;
    if (x == HUGE_VAL)
        return x;
    m = frexp(x, &e); /* exact: x = m * 2^e, m in [0.5, 1) */
    if (m < SQRT_HALF) {
        m *= 2.0;
        e -= 1;
    }
    /* ln(m) = 2 atanh(s), s = (m-1)/(m+1), |s| <= 0.1716: the series to s^25 is below 1e-20 relative. */
    s = (m - 1.0) / (m + 1.0);
    z = s * s;
    p = 1.0 / 25.0;
    p = p * z + 1.0 / 23.0;
    p = p * z + 1.0 / 21.0;
    p = p * z + 1.0 / 19.0;
    p = p * z + 1.0 / 17.0;
    p = p * z + 1.0 / 15.0;
    p = p * z + 1.0 / 13.0;
    p = p * z + 1.0 / 11.0;
    p = p * z + 1.0 / 9.0;
    p = p * z + 1.0 / 7.0;
    p = p * z + 1.0 / 5.0;
    p = p * z + 1.0 / 3.0;
    p = p * z;
    return (double)e * LN2_HI + ((double)e * LN2_LO + (2.0 * s + 2.0 * s * p));
}

float sd_rng_normal(sd_rng_t *rng)
{
    double u, v, s, f;
    if (rng->has_spare) {
        rng->has_spare = 0;
        return rng->spare;
    }
    do {
        u = 2.0 * sd_rng_uniform_double(rng) - 1.0;
        v = 2.0 * sd_rng_uniform_double(rng) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    f = sqrt(-2.0 * sd_rng_portable_log(s) / s);
    rng->spare = (float)(v * f);
    rng->has_spare = 1;
    return (float)(u * f);
}

void sd_rng_fill_normal(sd_rng_t *rng, float *out, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = sd_rng_normal(rng);
}

int sd_rng_noise(void *rng, float *out, size_t n)
{
    sd_rng_fill_normal((sd_rng_t *)rng, out, n);
    return 0;
}
