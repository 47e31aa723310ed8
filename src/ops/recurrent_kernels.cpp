#include "ops/recurrent_kernels.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace onnxstream::recurrent {

namespace {

struct NamedKind {
    const char *lower;
    ActKind kind;
};

constexpr NamedKind kNames[] = {
    {"relu", ActKind::Relu},
    {"tanh", ActKind::Tanh},
    {"sigmoid", ActKind::Sigmoid},
    {"affine", ActKind::Affine},
    {"leakyrelu", ActKind::LeakyRelu},
    {"thresholdedrelu", ActKind::ThresholdedRelu},
    {"scaledtanh", ActKind::ScaledTanh},
    {"hardsigmoid", ActKind::HardSigmoid},
    {"elu", ActKind::Elu},
    {"softsign", ActKind::Softsign},
    {"softplus", ActKind::Softplus},
};

// The gate functions dominate a step once the products run in XNNPACK, and libm's expf/tanhf are calls the
// compiler cannot vectorise: these are straight-line code it can, within a few ulp of libm. Their selects are
// bitwise (pick): GCC turns `c ? a : b` with arithmetic in a or b back into a branch it then cannot vectorise
// (it may not evaluate a trapping float operation on the path that did not ask for it).

inline uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

inline float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

inline float pick(bool c, float a, float b) {
    const uint32_t m = 0u - static_cast<uint32_t>(c);
    return from_bits((bits_of(a) & m) | (bits_of(b) & ~m));
}

// e^x for x in [-87, 88] (clamped to it; NaN stays NaN): x = n ln2 + r with |r| <= ln2/2, e^r by its Taylor
// series to r^7 (truncation under 1e-8 relative), 2^n put in the exponent bits.
inline float exp_clamped(float x) {
    x = pick(x < -87.0f, -87.0f, pick(x > 88.0f, 88.0f, x));
    constexpr float kRound = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer, kept in the low bits
    const float shifted = x * 1.44269504f + kRound;
    const float n = shifted - kRound;
    const float r = (x - n * 0.693145752f) - n * 1.42860677e-6f; // ln2 in two parts: r stays exact
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    return p * from_bits((bits_of(shifted) - bits_of(kRound) + 127u) << 23);
}

inline float sigmoid(float x) { return 1.0f / (1.0f + exp_clamped(-x)); }

// (1 - e^-2|x|) / (1 + e^-2|x|) with x's sign; under 2^-4 the series x - x^3/3 + 2x^5/15, where the quotient
// would lose relative precision to cancellation.
inline float tanh_fast(float x) {
    const float a = std::fabs(x), t = exp_clamped(-2.0f * a);
    const float big = (1.0f - t) / (1.0f + t), x2 = x * x;
    const float small = a * (1.0f + x2 * (-1.0f / 3.0f + x2 * (2.0f / 15.0f)));
    return std::copysign(pick(a < 0.0625f, small, big), x);
}

inline float softplus(float x) {
    // log(1 + e^x) without overflowing e^x: x + log(1 + e^-x) for positive x.
    return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

template <typename F> void each(float *v, size_t n, F f) {
    for (size_t i = 0; i < n; ++i) v[i] = f(v[i]);
}

// NaN passes through, as without clip.
inline float clipped(float x, float clip) { return pick(x > clip, clip, pick(x < -clip, -clip, x)); }

void clip_all(float *v, size_t n, float clip) {
    for (size_t i = 0; i < n; ++i) v[i] = clipped(v[i], clip);
}

} // namespace

bool activation_kind(const std::string &name, ActKind &kind) {
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const auto &n : kNames)
        if (lower == n.lower) {
            kind = n.kind;
            return true;
        }
    return false;
}

bool takes_alpha(ActKind kind) {
    switch (kind) {
    case ActKind::Affine:
    case ActKind::LeakyRelu:
    case ActKind::ThresholdedRelu:
    case ActKind::ScaledTanh:
    case ActKind::HardSigmoid:
    case ActKind::Elu: return true;
    default: return false;
    }
}

bool takes_beta(ActKind kind) {
    return kind == ActKind::Affine || kind == ActKind::ScaledTanh || kind == ActKind::HardSigmoid;
}

float default_alpha(ActKind kind) {
    switch (kind) {
    case ActKind::LeakyRelu: return 0.01f;
    case ActKind::HardSigmoid: return 0.2f;
    default: return 1.0f;
    }
}

float default_beta(ActKind kind) {
    switch (kind) {
    case ActKind::HardSigmoid: return 0.5f;
    case ActKind::ScaledTanh: return 1.0f;
    default: return 0.0f;
    }
}

void activate(const Activation &a, float *v, size_t n) {
    const float alpha = a.alpha, beta = a.beta;
    switch (a.kind) {
    case ActKind::Relu: each(v, n, [](float x) { return pick(x < 0, 0.0f, x); }); break;
    case ActKind::Tanh: each(v, n, [](float x) { return tanh_fast(x); }); break;
    case ActKind::Sigmoid: each(v, n, [](float x) { return sigmoid(x); }); break;
    case ActKind::Affine: each(v, n, [=](float x) { return alpha * x + beta; }); break;
    case ActKind::LeakyRelu: each(v, n, [=](float x) { return pick(x < 0, alpha * x, x); }); break;
    case ActKind::ThresholdedRelu: each(v, n, [=](float x) { return pick(x > alpha, x, 0.0f); }); break;
    case ActKind::ScaledTanh: each(v, n, [=](float x) { return alpha * tanh_fast(beta * x); }); break;
    case ActKind::HardSigmoid:
        each(v, n, [=](float x) {
            const float y = alpha * x + beta;
            return pick(y > 1.0f, 1.0f, pick(y < 0.0f, 0.0f, y));
        });
        break;
    case ActKind::Elu: each(v, n, [=](float x) { return pick(x < 0, alpha * (exp_clamped(x) - 1.0f), x); }); break;
    case ActKind::Softsign: each(v, n, [](float x) { return x / (1.0f + std::fabs(x)); }); break;
    case ActKind::Softplus: each(v, n, [](float x) { return softplus(x); }); break;
    }
}

void lstm_cell(const LstmCell &cell, const float *xw, float *gates, float *c, float *h_out) {
    const size_t H = cell.hidden;
    float *gi = gates, *go = gates + H, *gf = gates + 2 * H, *gc = gates + 3 * H;
    // Offsets into the peepholes only when there are some: arithmetic on a null pointer is undefined.
    const float *pi = cell.peephole, *po = pi ? pi + H : nullptr, *pf = pi ? pi + 2 * H : nullptr;
    for (size_t j = 0; j < 4 * H; ++j) gates[j] += xw[j];
    if (pi)
        for (size_t j = 0; j < H; ++j) {
            gi[j] += pi[j] * c[j];
            gf[j] += pf[j] * c[j];
        }
    // i, then f and c (adjacent); o now only without peepholes: its peephole term reads the new cell state.
    clip_all(gi, H, cell.clip);
    clip_all(gf, 2 * H, cell.clip);
    if (!pi) clip_all(go, H, cell.clip);
    activate(cell.f, gi, H);
    if (cell.input_forget)
        for (size_t j = 0; j < H; ++j) gf[j] = 1.0f - gi[j];
    else
        activate(cell.f, gf, H);
    activate(cell.g, gc, H);
    for (size_t j = 0; j < H; ++j) c[j] = gf[j] * c[j] + gi[j] * gc[j];
    if (pi)
        for (size_t j = 0; j < H; ++j) go[j] = clipped(go[j] + po[j] * c[j], cell.clip);
    activate(cell.f, go, H);
    std::memcpy(h_out, c, H * sizeof(float));
    activate(cell.h, h_out, H);
    for (size_t j = 0; j < H; ++j) h_out[j] *= go[j];
}

void gru_update_reset(const GruCell &cell, const float *xw, float *gates, const float *h_prev, float *rh) {
    const size_t H = cell.hidden;
    for (size_t j = 0; j < 2 * H; ++j) gates[j] = clipped(gates[j] + xw[j], cell.clip);
    activate(cell.f, gates, 2 * H);
    if (!cell.linear_before_reset) {
        const float *r = gates + H;
        for (size_t j = 0; j < H; ++j) rh[j] = r[j] * h_prev[j];
    }
}

void gru_output(const GruCell &cell, const float *xw, float *gates, const float *h_prev, float *h_out) {
    const size_t H = cell.hidden;
    const float *z = gates, *r = gates + H;
    float *hh = gates + 2 * H;
    if (cell.linear_before_reset)
        for (size_t j = 0; j < H; ++j) hh[j] *= r[j];
    for (size_t j = 0; j < H; ++j) hh[j] = clipped(xw[2 * H + j] + hh[j], cell.clip);
    activate(cell.g, hh, H);
    for (size_t j = 0; j < H; ++j) h_out[j] = (1.0f - z[j]) * hh[j] + z[j] * h_prev[j];
}

void rnn_cell(const RnnCell &cell, const float *xw, const float *gates, float *h_out) {
    for (size_t j = 0; j < cell.hidden; ++j) h_out[j] = clipped(gates[j] + xw[j], cell.clip);
    activate(cell.f, h_out, cell.hidden);
}

} // namespace onnxstream::recurrent
