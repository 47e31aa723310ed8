#include "scheduler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LCM_ORIGINAL_STEPS 50
#define LCM_TIMESTEP_SCALING 10.0
#define LCM_SIGMA_DATA 0.5
#define KARRAS_RHO 7.0

static const char *const SAMPLER_NAMES[SD_SAMPLER_COUNT] = {
    "euler_a", "euler", "heun", "dpm++2m", "dpm++2m_karras", "ddim", "lcm",
};

int sd_sampler_from_name(const char *name, sd_sampler_kind *out)
{
    int k;
    if (!name)
        return SD_SCHED_EINVAL;
    for (k = 0; k < SD_SAMPLER_COUNT; k++) {
        if (strcmp(name, SAMPLER_NAMES[k]) == 0) {
            *out = (sd_sampler_kind)k;
            return 0;
        }
    }
    if (strcmp(name, "dpm++2m karras") == 0) {
        *out = SD_SAMPLER_DPMPP_2M_KARRAS;
        return 0;
    }
    return SD_SCHED_EINVAL;
}

const char *sd_sampler_name(sd_sampler_kind kind)
{
    if ((int)kind < 0 || kind >= SD_SAMPLER_COUNT)
        return NULL;
    return SAMPLER_NAMES[kind];
}

int sd_noise_schedule_scaled_linear(sd_noise_schedule *ns, double beta_start, double beta_end)
{
    double a, b, ac = 1.0;
    int i;
    if (!(beta_start > 0.0 && beta_start <= beta_end && beta_end < 1.0))
        return SD_SCHED_EINVAL;
    a = sqrt(beta_start);
    b = sqrt(beta_end);
    for (i = 0; i < SD_TRAIN_TIMESTEPS; i++) {
        /* numpy's linspace formula (start + i*step, last point exact) so the reference matches bit for bit */
        double r = i == SD_TRAIN_TIMESTEPS - 1 ? b : a + i * ((b - a) / (SD_TRAIN_TIMESTEPS - 1));
        ac *= 1.0 - r * r;
        ns->alphas_cumprod[i] = ac;
        ns->sigmas[i] = sqrt((1.0 - ac) / ac);
        ns->log_sigmas[i] = log(ns->sigmas[i]);
    }
    return 0;
}

void sd_noise_schedule_sd15(sd_noise_schedule *ns)
{
    sd_noise_schedule_scaled_linear(ns, 0.00085, 0.012);
}

double sd_t_to_sigma(const sd_noise_schedule *ns, double t)
{
    int lo, hi;
    double w;
    if (!(t > 0.0))
        t = 0.0;
    if (t > SD_TRAIN_TIMESTEPS - 1)
        t = SD_TRAIN_TIMESTEPS - 1;
    lo = (int)floor(t);
    hi = (int)ceil(t);
    w = t - lo;
    return exp((1.0 - w) * ns->log_sigmas[lo] + w * ns->log_sigmas[hi]);
}

double sd_sigma_to_t(const sd_noise_schedule *ns, double sigma)
{
    double ls, l0, l1, w;
    int lo = 0, hi = SD_TRAIN_TIMESTEPS - 1;
    if (!(sigma > 0.0))
        return 0.0;
    ls = log(sigma);
    /* k-diffusion: low = last index with log_sigmas[low] <= ls (0 if none), clamped to 998 */
    if (ls < ns->log_sigmas[0]) {
        lo = 0;
    } else {
        while (hi - lo > 1) {
            int mid = (lo + hi) / 2;
            if (ns->log_sigmas[mid] <= ls)
                lo = mid;
            else
                hi = mid;
        }
        if (ns->log_sigmas[SD_TRAIN_TIMESTEPS - 1] <= ls)
            lo = SD_TRAIN_TIMESTEPS - 1;
        if (lo > SD_TRAIN_TIMESTEPS - 2)
            lo = SD_TRAIN_TIMESTEPS - 2;
    }
    l0 = ns->log_sigmas[lo];
    l1 = ns->log_sigmas[lo + 1];
    w = (l0 - ls) / (l0 - l1);
    if (w < 0.0)
        w = 0.0;
    if (w > 1.0)
        w = 1.0;
    return (1.0 - w) * lo + w * (lo + 1);
}

static int steps_ok(int steps)
{
    return steps >= 1 && steps <= SD_MAX_STEPS;
}

/* Integer timesteps -> sigmas straight from the table; appends sigma 0. */
static void from_int_timesteps(const sd_noise_schedule *ns, int steps, const int *ts, double *sigmas,
                               double *timesteps)
{
    int i;
    for (i = 0; i < steps; i++) {
        int t = ts[i] < 0 ? 0 : ts[i] > SD_TRAIN_TIMESTEPS - 1 ? SD_TRAIN_TIMESTEPS - 1 : ts[i];
        sigmas[i] = ns->sigmas[t];
        timesteps[i] = t;
    }
    sigmas[steps] = 0.0;
    timesteps[steps] = 0.0;
}

int sd_sigmas_linspace(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps)
{
    int i;
    const double tmax = SD_TRAIN_TIMESTEPS - 1;
    if (!steps_ok(steps))
        return SD_SCHED_EINVAL;
    for (i = 0; i < steps; i++) {
        double t = steps == 1 ? tmax : tmax - i * (tmax / (steps - 1));
        if (i == steps - 1 && steps > 1)
            t = 0.0;
        timesteps[i] = t;
        sigmas[i] = sd_t_to_sigma(ns, t);
    }
    sigmas[steps] = 0.0;
    timesteps[steps] = 0.0;
    return 0;
}

int sd_sigmas_leading(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps)
{
    int ts[SD_MAX_STEPS];
    int i, ratio;
    if (!steps_ok(steps))
        return SD_SCHED_EINVAL;
    ratio = SD_TRAIN_TIMESTEPS / steps;
    for (i = 0; i < steps; i++)
        ts[i] = (steps - 1 - i) * ratio + 1;
    from_int_timesteps(ns, steps, ts, sigmas, timesteps);
    return 0;
}

int sd_sigmas_trailing(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps)
{
    int ts[SD_MAX_STEPS];
    int i;
    double step;
    if (!steps_ok(steps))
        return SD_SCHED_EINVAL;
    step = (double)SD_TRAIN_TIMESTEPS / steps;
    /* numpy.round rounds halves to even, as rint does in the default rounding mode */
    for (i = 0; i < steps; i++)
        ts[i] = (int)rint(SD_TRAIN_TIMESTEPS - i * step) - 1;
    from_int_timesteps(ns, steps, ts, sigmas, timesteps);
    return 0;
}

int sd_sigmas_karras(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps)
{
    int i;
    double min_inv, max_inv;
    if (!steps_ok(steps))
        return SD_SCHED_EINVAL;
    min_inv = pow(ns->sigmas[0], 1.0 / KARRAS_RHO);
    max_inv = pow(ns->sigmas[SD_TRAIN_TIMESTEPS - 1], 1.0 / KARRAS_RHO);
    for (i = 0; i < steps; i++) {
        double ramp = steps == 1 ? 0.0 : (double)i / (steps - 1);
        sigmas[i] = pow(max_inv + ramp * (min_inv - max_inv), KARRAS_RHO);
        timesteps[i] = sd_sigma_to_t(ns, sigmas[i]);
    }
    sigmas[steps] = 0.0;
    timesteps[steps] = 0.0;
    return 0;
}

int sd_sigmas_ddim(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps)
{
    int i, ratio;
    if (!steps_ok(steps))
        return SD_SCHED_EINVAL;
    ratio = SD_TRAIN_TIMESTEPS / steps;
    for (i = 0; i <= steps; i++) {
        /* diffusers: prev_timestep = t - ratio; below 0 it uses final_alpha_cumprod = ac[0] for SD 1.5
         * (set_alpha_to_one false), i.e. the run ends at sigma(t = 0), not at 0 */
        int t = (steps - 1 - i) * ratio + 1;
        if (t < 0)
            t = 0;
        if (t > SD_TRAIN_TIMESTEPS - 1)
            t = SD_TRAIN_TIMESTEPS - 1;
        sigmas[i] = ns->sigmas[t];
        timesteps[i] = t;
    }
    return 0;
}

int sd_sigmas_lcm(const sd_noise_schedule *ns, int steps, double *sigmas, double *timesteps)
{
    int ts[LCM_ORIGINAL_STEPS];
    int i;
    const int k = SD_TRAIN_TIMESTEPS / LCM_ORIGINAL_STEPS;
    if (steps < 1 || steps > LCM_ORIGINAL_STEPS)
        return SD_SCHED_EINVAL;
    for (i = 0; i < steps; i++) {
        /* origin timesteps, descending: (50 - j) * 20 - 1; picked at floor(linspace(0, 50, steps, no end)) */
        int j = (int)floor(i * ((double)LCM_ORIGINAL_STEPS / steps));
        ts[i] = (LCM_ORIGINAL_STEPS - j) * k - 1;
    }
    from_int_timesteps(ns, steps, ts, sigmas, timesteps);
    return 0;
}

int sd_schedule_build(sd_schedule *out, const sd_noise_schedule *ns, sd_sampler_kind kind, sd_spacing spacing,
                      int steps)
{
    int rc;
    if ((int)kind < 0 || kind >= SD_SAMPLER_COUNT)
        return SD_SCHED_EINVAL;
    if (spacing == SD_SPACING_DEFAULT) {
        spacing = kind == SD_SAMPLER_DPMPP_2M_KARRAS ? SD_SPACING_KARRAS
                  : kind == SD_SAMPLER_DDIM          ? SD_SPACING_DDIM
                  : kind == SD_SAMPLER_LCM           ? SD_SPACING_LCM
                                                     : SD_SPACING_LINSPACE;
    }
    if ((kind == SD_SAMPLER_DDIM) != (spacing == SD_SPACING_DDIM) ||
        (kind == SD_SAMPLER_LCM) != (spacing == SD_SPACING_LCM))
        return SD_SCHED_EINVAL;
    switch (spacing) {
    case SD_SPACING_LINSPACE: rc = sd_sigmas_linspace(ns, steps, out->sigmas, out->timesteps); break;
    case SD_SPACING_LEADING: rc = sd_sigmas_leading(ns, steps, out->sigmas, out->timesteps); break;
    case SD_SPACING_TRAILING: rc = sd_sigmas_trailing(ns, steps, out->sigmas, out->timesteps); break;
    case SD_SPACING_KARRAS: rc = sd_sigmas_karras(ns, steps, out->sigmas, out->timesteps); break;
    case SD_SPACING_DDIM: rc = sd_sigmas_ddim(ns, steps, out->sigmas, out->timesteps); break;
    case SD_SPACING_LCM: rc = sd_sigmas_lcm(ns, steps, out->sigmas, out->timesteps); break;
    default: return SD_SCHED_EINVAL;
    }
    if (rc != 0)
        return rc;
    out->kind = kind;
    out->spacing = spacing;
    out->steps = steps;
    return 0;
}

double sd_schedule_init_noise_scale(const sd_schedule *sch)
{
    double s0 = sch->sigmas[0];
    if (sch->kind == SD_SAMPLER_DDIM || sch->kind == SD_SAMPLER_LCM)
        return sqrt(1.0 + s0 * s0);
    return s0;
}

void sd_schedule_finish(const sd_schedule *sch, float *x, size_t n)
{
    double s = sch->sigmas[sch->steps];
    size_t k;
    float f;
    if (s == 0.0)
        return;
    f = (float)(1.0 / sqrt(1.0 + s * s));
    for (k = 0; k < n; k++)
        x[k] *= f;
}

double sd_c_in(double sigma)
{
    return 1.0 / sqrt(sigma * sigma + 1.0);
}

void sd_eps_to_denoised(const float *x, const float *eps, double sigma, float *out, size_t n)
{
    const float s = (float)sigma;
    size_t k;
    for (k = 0; k < n; k++)
        out[k] = x[k] - s * eps[k];
}

int sd_sampler_init(sd_sampler *s, sd_sampler_kind kind, size_t n)
{
    int need_aux, need_old;
    memset(s, 0, sizeof *s);
    if ((int)kind < 0 || kind >= SD_SAMPLER_COUNT || n == 0 || n > ((size_t)-1) / sizeof(float))
        return SD_SCHED_EINVAL;
    need_aux = kind == SD_SAMPLER_HEUN || kind == SD_SAMPLER_EULER_A || kind == SD_SAMPLER_LCM;
    need_old = kind == SD_SAMPLER_DPMPP_2M || kind == SD_SAMPLER_DPMPP_2M_KARRAS;
    s->denoised = (float *)malloc(n * sizeof(float));
    if (need_aux)
        s->aux = (float *)malloc(n * sizeof(float));
    if (need_old)
        s->old_denoised = (float *)malloc(n * sizeof(float));
    if (!s->denoised || (need_aux && !s->aux) || (need_old && !s->old_denoised)) {
        sd_sampler_free(s);
        return SD_SCHED_ENOMEM;
    }
    s->kind = kind;
    s->n = n;
    s->next_step = 0;
    return 0;
}

void sd_sampler_free(sd_sampler *s)
{
    free(s->denoised);
    free(s->aux);
    free(s->old_denoised);
    s->denoised = s->aux = s->old_denoised = NULL;
    s->n = 0;
}

void sd_sampler_reset(sd_sampler *s)
{
    s->next_step = 0;
}

int sd_sampler_evals(const sd_schedule *sch, int i)
{
    if (i < 0 || i >= sch->steps)
        return 0;
    return sch->kind == SD_SAMPLER_HEUN && sch->sigmas[i + 1] > 0.0 ? 2 : 1;
}

static int draw_noise(const sd_noise_source *noise, float *out, size_t n)
{
    if (!noise || !noise->fn)
        return SD_SCHED_EINVAL;
    return noise->fn(noise->user, out, n);
}

/* x += (x - denoised) / sigma * dt, the Euler step of the probability-flow ODE dx/dsigma = (x - D) / sigma */
static void euler_update(float *x, const float *den, double sigma, double dt, size_t n)
{
    const double c = dt / sigma;
    size_t k;
    for (k = 0; k < n; k++)
        x[k] = (float)(x[k] + (x[k] - (double)den[k]) * c);
}

int sd_sampler_step(sd_sampler *s, const sd_schedule *sch, int i, float *x, sd_denoise_fn denoise, void *user,
                    const sd_noise_source *noise)
{
    const size_t n = s->n;
    double sigma, sigma_next;
    float *den = s->denoised;
    size_t k;
    int rc;
    if (!denoise || !x || !den || sch->kind != s->kind || i != s->next_step || i < 0 || i >= sch->steps)
        return SD_SCHED_EINVAL;
    sigma = sch->sigmas[i];
    sigma_next = sch->sigmas[i + 1];
    rc = denoise(user, x, sigma, sch->timesteps[i], den);
    if (rc != 0)
        return rc;

    switch (s->kind) {
    case SD_SAMPLER_EULER:
        euler_update(x, den, sigma, sigma_next - sigma, n);
        break;

    case SD_SAMPLER_EULER_A: {
        /* get_ancestral_step, eta 1: split sigma_next into a deterministic part sigma_down and fresh noise
         * sigma_up with sigma_down^2 + sigma_up^2 = sigma_next^2 */
        double up = sqrt(sigma_next * sigma_next * (sigma * sigma - sigma_next * sigma_next) / (sigma * sigma));
        double down;
        if (up > sigma_next)
            up = sigma_next;
        down = sqrt(sigma_next * sigma_next - up * up);
        euler_update(x, den, sigma, down - sigma, n);
        if (sigma_next > 0.0) {
            rc = draw_noise(noise, s->aux, n);
            if (rc != 0)
                return rc;
            for (k = 0; k < n; k++)
                x[k] = (float)(x[k] + (double)s->aux[k] * up);
        }
        break;
    }

    case SD_SAMPLER_HEUN: {
        const double dt = sigma_next - sigma;
        float *x2 = s->aux;
        if (sigma_next == 0.0) {
            euler_update(x, den, sigma, dt, n);
            break;
        }
        for (k = 0; k < n; k++)
            x2[k] = (float)(x[k] + (x[k] - (double)den[k]) * (dt / sigma));
        /* second evaluation at the predicted point; its output overwrites den after d is folded into x */
        for (k = 0; k < n; k++)
            x[k] = (float)(x[k] + 0.5 * dt * ((x[k] - (double)den[k]) / sigma));
        rc = denoise(user, x2, sigma_next, sch->timesteps[i + 1], den);
        if (rc != 0)
            return rc;
        for (k = 0; k < n; k++)
            x[k] = (float)(x[k] + 0.5 * dt * ((x2[k] - (double)den[k]) / sigma_next));
        break;
    }

    case SD_SAMPLER_DPMPP_2M:
    case SD_SAMPLER_DPMPP_2M_KARRAS:
        if (sigma_next == 0.0) {
            /* t_next = +inf: the update degenerates to x = denoised */
            memcpy(x, den, n * sizeof(float));
        } else {
            /* t = -log(sigma); h = t_next - t */
            const double h = log(sigma) - log(sigma_next);
            const double ratio = sigma_next / sigma;
            const double em = -expm1(-h);
            if (i == 0) {
                for (k = 0; k < n; k++)
                    x[k] = (float)(ratio * x[k] + em * den[k]);
            } else {
                const double h_last = log(sch->sigmas[i - 1]) - log(sigma);
                const double r = h_last / h;
                const double a = 1.0 + 1.0 / (2.0 * r), b = 1.0 / (2.0 * r);
                for (k = 0; k < n; k++)
                    x[k] = (float)(ratio * x[k] + em * (a * den[k] - b * s->old_denoised[k]));
            }
        }
        memcpy(s->old_denoised, den, n * sizeof(float));
        break;

    case SD_SAMPLER_DDIM: {
        /* diffusers DDIM, eta 0: x_prev = sqrt(ac_prev) x0 + sqrt(1 - ac_prev) eps; in sigma space that is
         * x0 + sigma_prev * eps with x0 = denoised, eps = (x - denoised) / sigma */
        const double c = sigma_next / sigma;
        for (k = 0; k < n; k++)
            x[k] = (float)(den[k] + (x[k] - (double)den[k]) * c);
        break;
    }

    case SD_SAMPLER_LCM: {
        /* diffusers LCMScheduler (epsilon prediction): boundary-condition scalings at t * 10, blended in
         * x_ddpm space: d = c_out * x0 + c_skip * x_ddpm; next x_ddpm = sqrt(ac_prev) d + sqrt(1 - ac_prev) z,
         * i.e. x_next = d + sigma_next * z in sigma space; the last step returns d. */
        const double st = sch->timesteps[i] * LCM_TIMESTEP_SCALING;
        const double sd2 = LCM_SIGMA_DATA * LCM_SIGMA_DATA;
        const double c_skip = sd2 / (st * st + sd2);
        const double c_out = st / sqrt(st * st + sd2);
        const double cin = sd_c_in(sigma);
        for (k = 0; k < n; k++)
            x[k] = (float)(c_out * den[k] + c_skip * cin * x[k]);
        if (i < sch->steps - 1) {
            rc = draw_noise(noise, s->aux, n);
            if (rc != 0)
                return rc;
            for (k = 0; k < n; k++)
                x[k] = (float)(x[k] + (double)s->aux[k] * sigma_next);
        }
        break;
    }

    default:
        return SD_SCHED_EINVAL;
    }
    s->next_step = i + 1;
    return 0;
}
