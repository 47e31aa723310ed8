/* Portable pseudo-random numbers for Stable Diffusion latents.
 *
 * Same 64-bit seed -> same bits on every platform, compiler and libc:
 *   - state: xoshiro256** (Blackman & Vigna, 2018), 256-bit state seeded from the full 64-bit seed by four
 *     successive outputs of splitmix64 (the seeding recommended by the xoshiro authors);
 *   - uniform float in [0,1): top 24 bits of next_u64 times 2^-24 (exact);
 *   - uniform double in [0,1): top 53 bits times 2^-53 (exact);
 *   - normal: Marsaglia's polar method in double precision. u, v = 2*uniform_double - 1 (exact);
 *     s = u*u + v*v, rejected when s >= 1 or s == 0; f = sqrt(-2*ln(s)/s); the draw returns (float)(u*f) and
 *     keeps (float)(v*f) for the next draw. ln is computed here with IEEE +,-,*,/ only (frexp range
 *     reduction + atanh series), never libm's log, whose last ulp differs between glibc, musl and others; sqrt
 *     is correctly rounded by IEEE 754. The project compiles C as ISO C99, so GCC does not contract a*b+c into
 *     FMA (which would change roundings on aarch64).
 * The generator is a plain value: copy it to fork a stream, no globals, no allocation, cannot fail. */
#ifndef SD_RNG_H
#define SD_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct sd_rng_t {
    uint64_t s[4];
    int has_spare;  /* polar method produces normals in pairs */
    float spare;
} sd_rng_t;

/* Seeds *rng from all 64 bits of seed. */
void sd_rng_seed(sd_rng_t *rng, uint64_t seed);

/* Next raw 64-bit output of xoshiro256**. */
uint64_t sd_rng_next_u64(sd_rng_t *rng);

/* Uniform in [0,1): (next_u64 >> 40) * 2^-24. */
float sd_rng_uniform(sd_rng_t *rng);

/* Uniform in [0,1): (next_u64 >> 11) * 2^-53. */
double sd_rng_uniform_double(sd_rng_t *rng);

/* Standard normal (mean 0, variance 1), polar method as described above. */
float sd_rng_normal(sd_rng_t *rng);

/* out[0..n) = successive sd_rng_normal draws; out is caller-owned, n may be 0. */
void sd_rng_fill_normal(sd_rng_t *rng, float *out, size_t n);

/* Adapter with the sampler noise-source signature (scheduler.h sd_noise_fn): rng is an sd_rng_t *.
 * Fills out[0..n) with normals and returns 0 (it cannot fail). */
int sd_rng_noise(void *rng, float *out, size_t n);

/* ln(x) for x > 0 finite, using only IEEE-exact basic operations (exposed for tests; accurate to ~1 ulp).
 * Returns -inf for x == 0 and NaN for negative or NaN x. */
double sd_rng_portable_log(double x);

#endif
