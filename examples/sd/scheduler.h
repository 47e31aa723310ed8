/* Noise schedules and samplers for Stable Diffusion 1.x (epsilon-prediction UNet, 1000 training steps).
 *
 * Conventions (k-diffusion's): the sampler state x lives in "sigma space", x = x_ddpm / sqrt(alpha_cumprod),
 * so x = x0 + sigma * eps. The pipeline feeds the UNet c_in * x with c_in = 1/sqrt(sigma^2 + 1) (which is
 * x_ddpm) and the returned timestep, then turns the predicted eps into denoised = x - sigma * eps
 * (sd_eps_to_denoised). Every sampler, DDIM and LCM included, is written in these terms, so one denoise
 * callback serves them all.
 *
 * A run:
 *     sd_noise_schedule ns;  sd_schedule sch;  sd_sampler smp;  sd_rng_t rng;
 *     sd_noise_schedule_sd15(&ns);
 *     if (sd_schedule_build(&sch, &ns, kind, SD_SPACING_DEFAULT, steps) != 0) -> bad steps / combination
 *     if (sd_sampler_init(&smp, kind, n) != 0) -> out of memory
 *     sd_rng_seed(&rng, seed);  sd_rng_fill_normal(&rng, x, n);
 *     scale x by sd_schedule_init_noise_scale(&sch);
 *     sd_noise_source noise = { sd_rng_noise, &rng };
 *     for (i = 0; i < sch.steps; i++) { rc = sd_sampler_step(&smp, &sch, i, x, denoise, user, &noise); ... }
 *     sd_schedule_finish(&sch, x, n);   -> x is now the latent to decode (divide by 0.18215 for the VAE)
 *     sd_sampler_free(&smp);
 * sd_sampler_step calls denoise once per step (heun: twice, except on the step to sigma 0).
 *
 * Nothing here keeps global state; schedules are plain values, samplers own two to four buffers of n floats. */
#ifndef SD_SCHEDULER_H
#define SD_SCHEDULER_H

#include <stddef.h>

#define SD_TRAIN_TIMESTEPS 1000
#define SD_MAX_STEPS 1000

/* Bad argument (steps out of range, unknown kind, step index out of order, sampler/schedule mismatch). */
#define SD_SCHED_EINVAL (-1)
/* Allocation failure. */
#define SD_SCHED_ENOMEM (-2)

typedef enum sd_sampler_kind {
    SD_SAMPLER_EULER_A = 0,       /* k-diffusion sample_euler_ancestral, eta 1 */
    SD_SAMPLER_EULER,             /* k-diffusion sample_euler, s_churn 0 */
    SD_SAMPLER_HEUN,              /* k-diffusion sample_heun, s_churn 0 */
    SD_SAMPLER_DPMPP_2M,          /* k-diffusion sample_dpmpp_2m */
    SD_SAMPLER_DPMPP_2M_KARRAS,   /* sample_dpmpp_2m on Karras sigmas */
    SD_SAMPLER_DDIM,              /* diffusers DDIMScheduler, eta 0, SD 1.5 config */
    SD_SAMPLER_LCM,               /* diffusers LCMScheduler (original_inference_steps 50) */
    SD_SAMPLER_COUNT
} sd_sampler_kind;

typedef enum sd_spacing {
    SD_SPACING_DEFAULT = 0,  /* the sampler's own: linspace, karras for dpm++2m karras, ddim, lcm */
    SD_SPACING_LINSPACE,     /* k-diffusion get_sigmas: t = linspace(999, 0, N), log-sigma interpolation */
    SD_SPACING_LEADING,      /* diffusers "leading", steps_offset 1: t = (N-1-i) * (1000/N) + 1 */
    SD_SPACING_TRAILING,     /* diffusers "trailing": t = round(1000 - i*1000/N) - 1 */
    SD_SPACING_KARRAS,       /* Karras et al. 2022, rho 7, between the model's sigma_min and sigma_max */
    SD_SPACING_DDIM,         /* diffusers DDIM: leading + steps_offset 1, last sigma = sigma(t=0) */
    SD_SPACING_LCM           /* diffusers LCMScheduler timesteps */
} sd_spacing;

/* "euler_a", "euler", "heun", "dpm++2m", "dpm++2m_karras" (also "dpm++2m karras"), "ddim", "lcm".
 * Returns 0 and sets *out, or SD_SCHED_EINVAL for an unknown name (nothing written). */
int sd_sampler_from_name(const char *name, sd_sampler_kind *out);
/* The canonical name above, or NULL for an invalid kind. Static string. */
const char *sd_sampler_name(sd_sampler_kind kind);

/* The model's training noise levels. Plain value (about 24 KB). */
typedef struct sd_noise_schedule {
    double alphas_cumprod[SD_TRAIN_TIMESTEPS];
    double sigmas[SD_TRAIN_TIMESTEPS];      /* sqrt((1 - ac) / ac), increasing */
    double log_sigmas[SD_TRAIN_TIMESTEPS];
} sd_noise_schedule;

/* "scaled_linear": betas = linspace(sqrt(beta_start), sqrt(beta_end), 1000)^2, ac = cumprod(1 - betas).
 * Computed in double. Requires 0 < beta_start <= beta_end < 1; returns SD_SCHED_EINVAL otherwise. */
int sd_noise_schedule_scaled_linear(sd_noise_schedule *ns, double beta_start, double beta_end);
/* SD 1.x: scaled_linear with beta_start 0.00085, beta_end 0.012. */
void sd_noise_schedule_sd15(sd_noise_schedule *ns);

/* k-diffusion DiscreteSchedule.t_to_sigma: exp of the linear interpolation of log_sigmas at fractional t,
 * t clamped to [0, 999]. */
double sd_t_to_sigma(const sd_noise_schedule *ns, double t);
/* k-diffusion DiscreteSchedule.sigma_to_t: piecewise-linear inverse in log sigma; sigmas outside the
 * model's range give 0 or 999. sigma must be > 0 (returns 0 otherwise). */
double sd_sigma_to_t(const sd_noise_schedule *ns, double sigma);

/* Pure sigma schedules. Each writes sigmas[0..steps] (decreasing, sigmas[steps] the final level: 0 except
 * for DDIM) and timesteps[0..steps] (the UNet timestep for each sigma; timesteps[steps] is 0 when
 * sigmas[steps] is 0). Arrays are caller-owned with steps+1 entries. 1 <= steps <= SD_MAX_STEPS (LCM:
 * steps <= 50); returns 0 or SD_SCHED_EINVAL (nothing written). */
int sd_sigmas_linspace(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps);
int sd_sigmas_leading(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps);
int sd_sigmas_trailing(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps);
int sd_sigmas_karras(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps);
int sd_sigmas_ddim(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps);
int sd_sigmas_lcm(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps);

/* One run's schedule. Plain value (about 16 KB). */
typedef struct sd_schedule {
    sd_sampler_kind kind;
    sd_spacing spacing;        /* resolved: never SD_SPACING_DEFAULT */
    int steps;
    double sigmas[SD_MAX_STEPS + 1];
    double timesteps[SD_MAX_STEPS + 1];
} sd_schedule;

/* Fills *out for `kind` with `spacing` (SD_SPACING_DEFAULT picks the sampler's own). DDIM and LCM only
 * accept their own spacing; SD_SPACING_DDIM/LCM are only for those samplers. Returns 0 or SD_SCHED_EINVAL. */
int sd_schedule_build(sd_schedule *out, const sd_noise_schedule *ns, sd_sampler_kind kind, sd_spacing spacing,
                      int steps);

/* Factor for the initial N(0,1) noise: sigmas[0] (k-diffusion), or sqrt(1 + sigmas[0]^2) for DDIM and LCM
 * (diffusers start from x_ddpm = noise). */
double sd_schedule_init_noise_scale(const sd_schedule *sch);
/* Converts the final sigma-space x to the latent to decode: x /= sqrt(1 + sigmas[steps]^2) (a no-op when
 * the schedule ends at sigma 0). */
void sd_schedule_finish(const sd_schedule *sch, float *x, size_t n);

/* c_in = 1 / sqrt(sigma^2 + 1): the UNet's input is c_in * x. */
double sd_c_in(double sigma);
/* out[k] = x[k] - sigma * eps[k]; out may alias x or eps. */
void sd_eps_to_denoised(const float *x, const float *eps, double sigma, float *out, size_t n);

/* The model: writes the denoised prediction for x (sigma space, n floats, caller-owned, not to be modified)
 * at noise level sigma / UNet timestep `timestep` into out_denoised (n floats). Returns 0, or a nonzero
 * code (preferably positive) which aborts the step and is returned by sd_sampler_step unchanged. */
typedef int (*sd_denoise_fn)(void *user, const float *x, double sigma, double timestep, float *out_denoised);

/* Source of standard normal noise for ancestral samplers: fills out[0..n), returns 0 or a nonzero code that
 * sd_sampler_step returns unchanged. rng.h's sd_rng_noise fits (user = sd_rng_t *); tests plug a table. */
typedef int (*sd_noise_fn)(void *user, float *out, size_t n);
typedef struct sd_noise_source {
    sd_noise_fn fn;
    void *user;
} sd_noise_source;

typedef struct sd_sampler {
    sd_sampler_kind kind;
    size_t n;
    int next_step;         /* steps must be run in order 0, 1, ... */
    float *denoised;       /* owned buffers, n floats each (NULL when the kind does not need them) */
    float *aux;            /* heun: x after the Euler predictor; euler_a/lcm: noise */
    float *old_denoised;   /* dpm++2m: previous step's prediction */
} sd_sampler;

/* Allocates the sampler's buffers for latents of n floats (n > 0). Returns 0, SD_SCHED_EINVAL or
 * SD_SCHED_ENOMEM (then *s needs no free). */
int sd_sampler_init(sd_sampler *s, sd_sampler_kind kind, size_t n);
/* Frees the buffers; safe on a zeroed or already-freed sampler. */
void sd_sampler_free(sd_sampler *s);
/* Restarts the sampler for a new run (same kind and size). */
void sd_sampler_reset(sd_sampler *s);

/* Advances x (n floats, in place) from sch->sigmas[i] to sch->sigmas[i+1]. i must be the sampler's next
 * step (0 after init/reset) and sch->kind must be the sampler's kind. noise may be NULL for samplers
 * that draw none (euler, heun, dpm++2m, ddim); euler_a draws n normals when sigmas[i+1] > 0, lcm when
 * i < steps-1. Returns 0, SD_SCHED_EINVAL, or the callback's code (x is then unspecified). */
int sd_sampler_step(sd_sampler *s, const sd_schedule *sch, int i, float *x, sd_denoise_fn denoise, void *user,
                    const sd_noise_source *noise);

/* Number of denoise calls sd_sampler_step makes for step i (for progress reporting). */
int sd_sampler_evals(const sd_schedule *sch, int i);

#endif
