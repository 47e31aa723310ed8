#!/usr/bin/python3
"""Reference values for test_scheduler.c and test_rng.c, computed independently of the C code with NumPy.

Regenerate (from examples/sd):  /usr/bin/python3 tests/scheduler_reference.py > tests/scheduler_reference.txt
With --rng it prints the expected values hard-coded in tests/test_rng.c instead.

Schedules follow k-diffusion (DiscreteSchedule, get_sigmas_karras) and diffusers (leading/trailing spacing,
DDIMScheduler, LCMScheduler); samplers follow k-diffusion's sample_euler_ancestral, sample_euler, sample_heun
and sample_dpmpp_2m, and diffusers' DDIM (eta 0) and LCM step() in x_ddpm space with an epsilon model, all in
float64. The model is a fixed fake denoiser; the ancestral noise is a fixed table consumed in draw order.

Output format: one line per array, "name count v0 v1 ...", values printed with 17 significant digits.
"""
import math
import sys

import numpy as np

T = 1000
STEPS = 5
N = 16


def noise_schedule():
    betas = np.linspace(0.00085 ** 0.5, 0.012 ** 0.5, T, dtype=np.float64) ** 2
    ac = np.cumprod(1.0 - betas)
    sigmas = np.sqrt((1 - ac) / ac)
    return ac, sigmas, np.log(sigmas)


AC, SIGMAS, LOG_SIGMAS = noise_schedule()


def t_to_sigma(t):
    t = np.asarray(t, dtype=np.float64)
    low = np.floor(t).astype(np.int64)
    high = np.ceil(t).astype(np.int64)
    w = t - low
    return np.exp((1 - w) * LOG_SIGMAS[low] + w * LOG_SIGMAS[high])


def sigma_to_t(sigma):
    log_sigma = np.log(np.asarray(sigma, dtype=np.float64))
    dists = log_sigma[None, :] - LOG_SIGMAS[:, None]
    low_idx = np.minimum(np.argmax(np.cumsum(dists >= 0, axis=0), axis=0), T - 2)
    high_idx = low_idx + 1
    low, high = LOG_SIGMAS[low_idx], LOG_SIGMAS[high_idx]
    w = np.clip((low - log_sigma) / (low - high), 0, 1)
    return (1 - w) * low_idx + w * high_idx


def append_zero(x):
    return np.concatenate([x, [0.0]])


def sigmas_linspace(n):
    t = np.linspace(T - 1, 0, n)
    return append_zero(t_to_sigma(t)), append_zero(t)


def sigmas_from_timesteps(ts):
    ts = np.asarray(ts, dtype=np.int64)
    return append_zero(SIGMAS[ts]), append_zero(ts.astype(np.float64))


def sigmas_leading(n):
    ratio = T // n
    ts = (np.arange(0, n) * ratio).round()[::-1].astype(np.int64) + 1
    return sigmas_from_timesteps(ts)


def sigmas_trailing(n):
    ts = np.round(np.arange(T, 0, -T / n)).astype(np.int64) - 1
    return sigmas_from_timesteps(ts)


def sigmas_karras(n, rho=7.0):
    smin, smax = SIGMAS[0], SIGMAS[-1]
    ramp = np.linspace(0, 1, n)
    mn, mx = smin ** (1 / rho), smax ** (1 / rho)
    s = (mx + ramp * (mn - mx)) ** rho
    return append_zero(s), append_zero(sigma_to_t(s))


def ddim_timesteps(n):
    ratio = T // n
    return (np.arange(0, n) * ratio).round()[::-1].astype(np.int64) + 1


def sigmas_ddim(n):
    ts = ddim_timesteps(n)
    prev = ts - T // n
    final = [SIGMAS[p] if p >= 0 else SIGMAS[0] for p in prev]  # final_alpha_cumprod = ac[0]
    return np.concatenate([SIGMAS[ts], [final[-1]]]), np.concatenate([ts.astype(np.float64), [0.0]])


def lcm_timesteps(n, origin=50):
    k = T // origin
    origin_ts = (np.asarray(list(range(1, origin + 1))) * k - 1)[::-1].copy()
    idx = np.floor(np.linspace(0, len(origin_ts), num=n, endpoint=False)).astype(np.int64)
    return origin_ts[idx]


def sigmas_lcm(n):
    return sigmas_from_timesteps(lcm_timesteps(n))


def fake_denoiser(x, sigma):
    return 0.9 * x / (1.0 + 0.05 * sigma) + 0.05 * np.sin(x)


class NoiseTable:
    def __init__(self, table):
        self.table, self.pos = table, 0

    def __call__(self):
        out = self.table[self.pos:self.pos + N]
        self.pos += N
        return out


def to_d(x, sigma, denoised):
    return (x - denoised) / sigma


def sample_euler(model, x, sigmas):
    for i in range(len(sigmas) - 1):
        denoised = model(x, sigmas[i])
        d = to_d(x, sigmas[i], denoised)
        x = x + d * (sigmas[i + 1] - sigmas[i])
    return x


def get_ancestral_step(sigma_from, sigma_to, eta=1.0):
    sigma_up = min(sigma_to, eta * (sigma_to ** 2 * (sigma_from ** 2 - sigma_to ** 2) / sigma_from ** 2) ** 0.5)
    sigma_down = (sigma_to ** 2 - sigma_up ** 2) ** 0.5
    return sigma_down, sigma_up


def sample_euler_ancestral(model, x, sigmas, noise):
    for i in range(len(sigmas) - 1):
        denoised = model(x, sigmas[i])
        sigma_down, sigma_up = get_ancestral_step(sigmas[i], sigmas[i + 1])
        d = to_d(x, sigmas[i], denoised)
        x = x + d * (sigma_down - sigmas[i])
        if sigmas[i + 1] > 0:
            x = x + noise() * sigma_up
    return x


def sample_heun(model, x, sigmas):
    for i in range(len(sigmas) - 1):
        denoised = model(x, sigmas[i])
        d = to_d(x, sigmas[i], denoised)
        dt = sigmas[i + 1] - sigmas[i]
        if sigmas[i + 1] == 0:
            x = x + d * dt
        else:
            x_2 = x + d * dt
            denoised_2 = model(x_2, sigmas[i + 1])
            d_2 = to_d(x_2, sigmas[i + 1], denoised_2)
            x = x + (d + d_2) / 2 * dt
    return x


def sample_dpmpp_2m(model, x, sigmas):
    def t_fn(s):
        return -np.log(s)

    def sigma_fn(t):
        return np.exp(-t)

    old_denoised = None
    for i in range(len(sigmas) - 1):
        denoised = model(x, sigmas[i])
        if sigmas[i + 1] == 0:
            x = denoised  # k-diffusion's formula with t_next = inf
        else:
            t, t_next = t_fn(sigmas[i]), t_fn(sigmas[i + 1])
            h = t_next - t
            if old_denoised is None:
                x = (sigma_fn(t_next) / sigma_fn(t)) * x - np.expm1(-h) * denoised
            else:
                h_last = t - t_fn(sigmas[i - 1])
                r = h_last / h
                denoised_d = (1 + 1 / (2 * r)) * denoised - (1 / (2 * r)) * old_denoised
                x = (sigma_fn(t_next) / sigma_fn(t)) * x - np.expm1(-h) * denoised_d
        old_denoised = denoised
    return x


def eps_model(x_ddpm, t):
    """The UNet as diffusers sees it: input x_ddpm at integer timestep t, output epsilon."""
    sigma = SIGMAS[t]
    x = x_ddpm / math.sqrt(AC[t])
    return (x - fake_denoiser(x, sigma)) / sigma


def ddim_diffusers(sample, n):
    ratio = T // n
    final_alpha_cumprod = AC[0]  # set_alpha_to_one = False in SD 1.5's scheduler config
    for t in ddim_timesteps(n):
        eps = eps_model(sample, t)
        prev_t = t - ratio
        a_t = AC[t]
        a_prev = AC[prev_t] if prev_t >= 0 else final_alpha_cumprod
        x0 = (sample - (1 - a_t) ** 0.5 * eps) / a_t ** 0.5
        sample = a_prev ** 0.5 * x0 + (1 - a_prev) ** 0.5 * eps
    return sample


def lcm_diffusers(sample, n, noise):
    ts = lcm_timesteps(n)
    final_alpha_cumprod = 1.0
    for i, t in enumerate(ts):
        eps = eps_model(sample, t)
        prev_t = ts[i + 1] if i + 1 < len(ts) else t
        a_t = AC[t]
        a_prev = AC[prev_t] if prev_t >= 0 else final_alpha_cumprod
        sigma_data, st = 0.5, t * 10.0
        c_skip = sigma_data ** 2 / (st ** 2 + sigma_data ** 2)
        c_out = st / (st ** 2 + sigma_data ** 2) ** 0.5
        x0 = (sample - (1 - a_t) ** 0.5 * eps) / a_t ** 0.5
        denoised = c_out * x0 + c_skip * sample
        if i != n - 1:
            sample = a_prev ** 0.5 * denoised + (1 - a_prev) ** 0.5 * noise()
        else:
            sample = denoised
    return sample


# ---- RNG reference: xoshiro256** seeded by splitmix64, Marsaglia polar normals (see rng.h) ----
M64 = (1 << 64) - 1


class Rng:
    def __init__(self, seed):
        x = seed & M64
        self.s = []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.s.append(z ^ (z >> 31))
        self.spare = None

    @staticmethod
    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & M64

    def next_u64(self):
        s = self.s
        result = (self.rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self.rotl(s[3], 45)
        return result

    def uniform(self):
        return (self.next_u64() >> 40) * 2.0 ** -24

    def uniform_double(self):
        return (self.next_u64() >> 11) * 2.0 ** -53

    def normal(self):
        if self.spare is not None:
            v, self.spare = self.spare, None
            return v
        while True:
            u = 2.0 * self.uniform_double() - 1.0
            v = 2.0 * self.uniform_double() - 1.0
            s = u * u + v * v
            if 0.0 < s < 1.0:
                break
        f = math.sqrt(-2.0 * math.log(s) / s)
        self.spare = float(np.float32(v * f))
        return float(np.float32(u * f))


RNG_SEEDS = [0, 42, (1 << 40) | 42, 0xFFFFFFFFFFFFFFFF]


def print_rng():
    print("/* generated by tests/scheduler_reference.py --rng */")
    for seed in RNG_SEEDS:
        r = Rng(seed)
        u64 = [r.next_u64() for _ in range(4)]
        uni = [r.uniform() for _ in range(4)]
        r = Rng(seed)
        nor = [r.normal() for _ in range(8)]
        print("{UINT64_C(0x%016X),\n {%s},\n {%s},\n {%s}}," % (
            seed, ", ".join("UINT64_C(0x%016X)" % v for v in u64),
            ", ".join("%.9gf" % v for v in uni), ", ".join("%.9gf" % v for v in nor)))


def emit(name, values):
    values = np.asarray(values, dtype=np.float64).ravel()
    print(name, len(values), " ".join("%.17g" % v for v in values))


def main():
    if "--rng" in sys.argv:
        print_rng()
        return
    idx = np.array([0, 1, 2, 10, 100, 250, 500, 750, 998, 999])
    emit("table_index", idx)
    emit("alphas_cumprod", AC[idx])
    emit("model_sigmas", SIGMAS[idx])
    probe = np.array([0.01, 0.0292, 0.03, 0.1, 0.5, 1.0, 2.5, 7.0, 14.6, 14.7, 20.0])
    emit("sigma_to_t_in", probe)
    emit("sigma_to_t_out", sigma_to_t(probe))
    tprobe = np.array([0.0, 0.25, 1.5, 10.0, 499.5, 998.75, 999.0])
    emit("t_to_sigma_in", tprobe)
    emit("t_to_sigma_out", t_to_sigma(tprobe))
    for n in (1, 2, 5, 16, 20, 30):
        for name, fn in (("linspace", sigmas_linspace), ("leading", sigmas_leading),
                         ("trailing", sigmas_trailing), ("karras", sigmas_karras), ("ddim", sigmas_ddim)):
            s, t = fn(n)
            emit("sigmas_%s_%d" % (name, n), s)
            emit("timesteps_%s_%d" % (name, n), t)
    for n in (1, 2, 4, 5, 8):
        s, t = sigmas_lcm(n)
        emit("sigmas_lcm_%d" % n, s)
        emit("timesteps_lcm_%d" % n, t)

    x_init = np.random.default_rng(1234).standard_normal(N)
    table = np.random.default_rng(5678).standard_normal(N * STEPS)
    emit("x_init", x_init)
    emit("noise", table)
    lin = sigmas_linspace(STEPS)[0]
    kar = sigmas_karras(STEPS)[0]
    emit("final_euler_a", sample_euler_ancestral(fake_denoiser, x_init * lin[0], lin, NoiseTable(table)))
    emit("final_euler", sample_euler(fake_denoiser, x_init * lin[0], lin))
    emit("final_heun", sample_heun(fake_denoiser, x_init * lin[0], lin))
    emit("final_dpm++2m", sample_dpmpp_2m(fake_denoiser, x_init * lin[0], lin))
    emit("final_dpm++2m_karras", sample_dpmpp_2m(fake_denoiser, x_init * kar[0], kar))
    emit("final_ddim", ddim_diffusers(x_init.copy(), STEPS))
    emit("final_lcm", lcm_diffusers(x_init.copy(), 4, NoiseTable(table)))


if __name__ == "__main__":
    main()
