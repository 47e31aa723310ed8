/* Schedules and samplers against tests/scheduler_reference.txt, written by tests/scheduler_reference.py
 * (an independent NumPy implementation of the k-diffusion / diffusers formulas). Run from examples/sd. */
#include "scheduler.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REF_PATH "tests/scheduler_reference.txt"
#define MAX_ENTRIES 256
#define N 16
#define STEPS 5

typedef struct {
    char name[64];
    int count;
    double *v;
} Entry;

typedef struct {
    Entry e[MAX_ENTRIES];
    int n;
} Ref;

static int load_ref(Ref *r, const char *path)
{
    FILE *f = fopen(path, "r");
    r->n = 0;
    if (!f) {
        printf("cannot open %s (run from examples/sd)\n", path);
        return -1;
    }
    while (r->n < MAX_ENTRIES) {
        Entry *e = &r->e[r->n];
        int k;
        if (fscanf(f, "%63s %d", e->name, &e->count) != 2)
            break;
        if (e->count <= 0 || e->count > 100000)
            break;
        e->v = (double *)malloc(sizeof(double) * (size_t)e->count);
        if (!e->v)
            break;
        for (k = 0; k < e->count; k++) {
            if (fscanf(f, "%lf", &e->v[k]) != 1) {
                free(e->v);
                fclose(f);
                printf("%s: short line %s\n", path, e->name);
                return -1;
            }
        }
        r->n++;
    }
    fclose(f);
    return r->n > 0 ? 0 : -1;
}

static const Entry *find(const Ref *r, const char *name)
{
    int i;
    for (i = 0; i < r->n; i++)
        if (strcmp(r->e[i].name, name) == 0)
            return &r->e[i];
    printf("reference entry %s missing\n", name);
    return NULL;
}

/* |got - want| <= 1e-5 * max(1, |want|) for every element */
static void check_close(const Entry *e, const double *got, int count, const char *what)
{
    int k, ok = e != NULL && e->count == count;
    char msg[160];
    double worst = 0.0;
    if (ok) {
        for (k = 0; k < count; k++) {
            double err = fabs(got[k] - e->v[k]) / (fabs(e->v[k]) > 1.0 ? fabs(e->v[k]) : 1.0);
            if (!(err <= 1e-5)) {
                printf("  %s[%d]: got %.17g want %.17g\n", what, k, got[k], e->v[k]);
                ok = 0;
            }
            if (err > worst)
                worst = err;
        }
    }
    snprintf(msg, sizeof msg, "%s (worst scaled error %.3g)", what, worst);
    if (getenv("SD_TEST_VERBOSE"))
        printf("%s\n", msg);
    check(ok, msg);
}

/* The fake model of the reference script. */
typedef struct {
    int calls;
    int fail_at;  /* call index that returns an error, or -1 */
} Model;

static int fake_denoise(void *user, const float *x, double sigma, double timestep, float *out)
{
    Model *m = (Model *)user;
    int k;
    (void)timestep;
    if (m->calls++ == m->fail_at)
        return 42;
    for (k = 0; k < N; k++)
        out[k] = (float)(0.9 * x[k] / (1.0 + 0.05 * sigma) + 0.05 * sin((double)x[k]));
    return 0;
}

typedef struct {
    const Entry *table;
    int pos;
} NoiseTable;

static int table_noise(void *user, float *out, size_t n)
{
    NoiseTable *t = (NoiseTable *)user;
    size_t k;
    if (t->pos + (int)n > t->table->count)
        return 7;
    for (k = 0; k < n; k++)
        out[k] = (float)t->table->v[t->pos++];
    return 0;
}

static int zero_noise(void *user, float *out, size_t n)
{
    (void)user;
    memset(out, 0, n * sizeof *out);
    return 0;
}

static void test_noise_schedule(const Ref *r, const sd_noise_schedule *ns)
{
    const Entry *idx = find(r, "table_index");
    double ac[16], sg[16];
    int k;
    if (!idx || idx->count > 16) {
        check(0, "table_index");
        return;
    }
    for (k = 0; k < idx->count; k++) {
        ac[k] = ns->alphas_cumprod[(int)idx->v[k]];
        sg[k] = ns->sigmas[(int)idx->v[k]];
    }
    check_close(find(r, "alphas_cumprod"), ac, idx->count, "alphas_cumprod");
    check_close(find(r, "model_sigmas"), sg, idx->count, "model sigmas");
    check(sd_noise_schedule_scaled_linear((sd_noise_schedule *)ns, 0.02, 0.01) == SD_SCHED_EINVAL,
          "scaled_linear rejects beta_start > beta_end");
}

static void test_conversions(const Ref *r, const sd_noise_schedule *ns)
{
    const Entry *in = find(r, "sigma_to_t_in"), *tin = find(r, "t_to_sigma_in");
    double out[32];
    int k;
    if (in && in->count <= 32) {
        for (k = 0; k < in->count; k++)
            out[k] = sd_sigma_to_t(ns, in->v[k]);
        check_close(find(r, "sigma_to_t_out"), out, in->count, "sigma_to_t");
    }
    if (tin && tin->count <= 32) {
        for (k = 0; k < tin->count; k++)
            out[k] = sd_t_to_sigma(ns, tin->v[k]);
        check_close(find(r, "t_to_sigma_out"), out, tin->count, "t_to_sigma");
    }
    for (k = 0; k < SD_TRAIN_TIMESTEPS; k += 37)
        if (fabs(sd_sigma_to_t(ns, ns->sigmas[k]) - k) > 1e-9)
            break;
    check(k >= SD_TRAIN_TIMESTEPS, "sigma_to_t inverts the model sigmas");
    check(sd_sigma_to_t(ns, 0.0) == 0.0, "sigma_to_t(0) = 0");
}

typedef int (*SigmaFn)(const sd_noise_schedule *, int, double *, double *);

static void test_schedules(const Ref *r, const sd_noise_schedule *ns)
{
    static const struct {
        const char *name;
        SigmaFn fn;
    } fns[] = {
        {"linspace", sd_sigmas_linspace}, {"leading", sd_sigmas_leading}, {"trailing", sd_sigmas_trailing},
        {"karras", sd_sigmas_karras},     {"ddim", sd_sigmas_ddim},
    };
    static const int counts[] = {1, 2, 5, 16, 20, 30};
    static const int lcm_counts[] = {1, 2, 4, 5, 8};
    double sig[SD_MAX_STEPS + 1], ts[SD_MAX_STEPS + 1];
    char name[64];
    size_t f, c;
    for (f = 0; f < sizeof fns / sizeof fns[0]; f++) {
        for (c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            int n = counts[c];
            check(fns[f].fn(ns, n, sig, ts) == 0, fns[f].name);
            snprintf(name, sizeof name, "sigmas_%s_%d", fns[f].name, n);
            check_close(find(r, name), sig, n + 1, name);
            snprintf(name, sizeof name, "timesteps_%s_%d", fns[f].name, n);
            check_close(find(r, name), ts, n + 1, name);
        }
        check(fns[f].fn(ns, 0, sig, ts) == SD_SCHED_EINVAL, "0 steps rejected");
        check(fns[f].fn(ns, SD_MAX_STEPS + 1, sig, ts) == SD_SCHED_EINVAL, "too many steps rejected");
    }
    for (c = 0; c < sizeof lcm_counts / sizeof lcm_counts[0]; c++) {
        int n = lcm_counts[c];
        check(sd_sigmas_lcm(ns, n, sig, ts) == 0, "lcm");
        snprintf(name, sizeof name, "sigmas_lcm_%d", n);
        check_close(find(r, name), sig, n + 1, name);
        snprintf(name, sizeof name, "timesteps_lcm_%d", n);
        check_close(find(r, name), ts, n + 1, name);
    }
    check(sd_sigmas_lcm(ns, 51, sig, ts) == SD_SCHED_EINVAL, "lcm rejects more than 50 steps");
    check(sd_sigmas_linspace(ns, SD_MAX_STEPS, sig, ts) == 0 && sig[SD_MAX_STEPS] == 0.0, "1000 steps work");
}

/* Runs a whole sampling loop like the pipeline does; returns the last nonzero code or 0. */
static int run_sampler(const Ref *r, const sd_noise_schedule *ns, sd_sampler_kind kind, int steps, Model *model,
                       double *out)
{
    static sd_schedule sch;
    sd_sampler smp;
    NoiseTable table;
    sd_noise_source noise;
    const Entry *x_init = find(r, "x_init");
    float x[N];
    double scale;
    int i, k, rc;
    table.table = find(r, "noise");
    table.pos = 0;
    noise.fn = table_noise;
    noise.user = &table;
    if (!x_init || !table.table || x_init->count != N)
        return -100;
    if (sd_schedule_build(&sch, ns, kind, SD_SPACING_DEFAULT, steps) != 0)
        return -101;
    if (sd_sampler_init(&smp, kind, N) != 0)
        return -102;
    scale = sd_schedule_init_noise_scale(&sch);
    for (k = 0; k < N; k++)
        x[k] = (float)(x_init->v[k] * scale);
    rc = 0;
    for (i = 0; i < sch.steps && rc == 0; i++) {
        int before = model->calls;
        rc = sd_sampler_step(&smp, &sch, i, x, fake_denoise, model, &noise);
        if (rc == 0 && model->calls - before != sd_sampler_evals(&sch, i))
            rc = -103;
    }
    sd_schedule_finish(&sch, x, N);
    for (k = 0; k < N; k++)
        out[k] = x[k];
    sd_sampler_free(&smp);
    return rc;
}

static void test_samplers(const Ref *r, const sd_noise_schedule *ns)
{
    int kind;
    for (kind = 0; kind < SD_SAMPLER_COUNT; kind++) {
        Model model = {0, -1};
        double out[N];
        char name[64];
        int steps = kind == SD_SAMPLER_LCM ? 4 : STEPS;
        int rc = run_sampler(r, ns, (sd_sampler_kind)kind, steps, &model, out);
        snprintf(name, sizeof name, "%s runs (rc %d)", sd_sampler_name((sd_sampler_kind)kind), rc);
        check(rc == 0, name);
        snprintf(name, sizeof name, "final_%s", sd_sampler_name((sd_sampler_kind)kind));
        check_close(find(r, name), out, N, name);
        if (kind == SD_SAMPLER_HEUN)
            check(model.calls == 2 * steps - 1, "heun evaluates twice per step except the last");
    }
}

static void test_errors(const sd_noise_schedule *ns)
{
    static sd_schedule sch;
    sd_sampler smp;
    sd_sampler_kind k;
    Model model = {0, 1};
    float x[N] = {0};
    int i;
    check(sd_sampler_from_name("dpm++2m karras", &k) == 0 && k == SD_SAMPLER_DPMPP_2M_KARRAS, "name alias");
    for (i = 0; i < SD_SAMPLER_COUNT; i++)
        check(sd_sampler_from_name(sd_sampler_name((sd_sampler_kind)i), &k) == 0 && (int)k == i, "name round trip");
    check(sd_sampler_from_name("euler_b", &k) == SD_SCHED_EINVAL, "unknown name rejected");
    check(sd_sampler_name(SD_SAMPLER_COUNT) == NULL, "invalid kind has no name");
    check(sd_schedule_build(&sch, ns, SD_SAMPLER_DDIM, SD_SPACING_KARRAS, 5) == SD_SCHED_EINVAL,
          "ddim only with its own timesteps");
    check(sd_schedule_build(&sch, ns, SD_SAMPLER_EULER, SD_SPACING_LCM, 5) == SD_SCHED_EINVAL,
          "lcm timesteps only for lcm");
    check(sd_schedule_build(&sch, ns, SD_SAMPLER_EULER, SD_SPACING_TRAILING, 5) == 0 &&
              sch.spacing == SD_SPACING_TRAILING && sch.timesteps[0] == 999.0,
          "euler on trailing spacing");
    check(sd_sampler_init(&smp, SD_SAMPLER_HEUN, 0) == SD_SCHED_EINVAL, "n = 0 rejected");

    check(sd_schedule_build(&sch, ns, SD_SAMPLER_HEUN, SD_SPACING_DEFAULT, 3) == 0, "heun schedule");
    check(sd_sampler_init(&smp, SD_SAMPLER_HEUN, N) == 0, "heun init");
    check(sd_sampler_step(&smp, &sch, 1, x, fake_denoise, &model, NULL) == SD_SCHED_EINVAL, "steps run in order");
    check(sd_sampler_step(&smp, &sch, 0, x, fake_denoise, &model, NULL) == 42,
          "callback error returned unchanged (second heun eval)");
    sd_sampler_free(&smp);
    sd_sampler_free(&smp);

    check(sd_schedule_build(&sch, ns, SD_SAMPLER_EULER_A, SD_SPACING_DEFAULT, 3) == 0, "euler_a schedule");
    check(sd_sampler_init(&smp, SD_SAMPLER_EULER_A, N) == 0, "euler_a init");
    model.calls = 0;
    model.fail_at = -1;
    check(sd_sampler_step(&smp, &sch, 0, x, fake_denoise, &model, NULL) == SD_SCHED_EINVAL,
          "euler_a without a noise source rejected");
    {
        sd_noise_source zero = {zero_noise, NULL};
        check(sd_sampler_step(&smp, &sch, 0, x, fake_denoise, &model, &zero) == 0, "failed step can be retried");
        check(sd_sampler_step(&smp, &sch, 1, x, fake_denoise, &model, &zero) == 0, "then the next one runs");
    }
    sd_sampler_reset(&smp);
    sd_sampler_free(&smp);

    check(sd_sampler_init(&smp, SD_SAMPLER_EULER, N) == 0, "euler init");
    check(sd_sampler_step(&smp, &sch, 0, x, fake_denoise, &model, NULL) == SD_SCHED_EINVAL,
          "schedule built for another sampler rejected");
    sd_sampler_free(&smp);
}

static void test_helpers(void)
{
    float x[3] = {1.0f, 2.0f, 3.0f}, eps[3] = {0.5f, -1.0f, 0.0f}, out[3];
    sd_eps_to_denoised(x, eps, 2.0, out, 3);
    check(out[0] == 0.0f && out[1] == 4.0f && out[2] == 3.0f, "eps_to_denoised");
    check(fabs(sd_c_in(2.0) - 1.0 / sqrt(5.0)) < 1e-15, "c_in");
}

int main(int argc, char **argv)
{
    static Ref ref;
    static sd_noise_schedule ns;
    int i;
    (void)argc;
    (void)argv;
    if (load_ref(&ref, REF_PATH) != 0) {
        printf("0 passed, 1 failed\n");
        return 1;
    }
    sd_noise_schedule_sd15(&ns);
    test_noise_schedule(&ref, &ns);
    sd_noise_schedule_sd15(&ns);
    test_conversions(&ref, &ns);
    test_schedules(&ref, &ns);
    test_samplers(&ref, &ns);
    test_errors(&ns);
    test_helpers();
    for (i = 0; i < ref.n; i++)
        free(ref.e[i].v);
    return check_summary();
}
