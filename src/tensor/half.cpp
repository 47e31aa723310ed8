#include "tensor/half.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuinfo.h>
#include <immintrin.h>
#define ONNXSTREAM_HALF_X86 1
#elif defined(__aarch64__) || \
    (defined(__ARM_NEON) && defined(__ARM_FP) && (__ARM_FP & 2) && defined(__ARM_FP16_FORMAT_IEEE))
// 32-bit ARM needs -mfpu=neon-vfpv4 (or neon-fp16) for the conversion instructions and -mfp16-format=ieee for
// the float16 vector types (both set for armhf builds: cross/arm-linux-gnueabihf.ini, meson.build).
#include <arm_neon.h>
#include <cpuinfo.h>
#define ONNXSTREAM_HALF_NEON 1
#endif

namespace onnxstream {

// Bit-exact conversions following the approach of the FP16 library (Marat Dukhan): build the float
// from exponent/mantissa arithmetic in float registers so denormals come out right without branches
// on every bit.
float half_to_float(uint16_t h) {
    const uint32_t w = static_cast<uint32_t>(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;
    const uint32_t exp_offset = 0xE0u << 23;
    const float exp_scale = 0x1.0p-112f;
    uint32_t bits = (two_w >> 4) + exp_offset;
    float normalized;
    std::memcpy(&normalized, &bits, 4);
    normalized *= exp_scale;
    const uint32_t magic_mask = 126u << 23;
    const float magic_bias = 0.5f;
    bits = (two_w >> 17) | magic_mask;
    float denormalized;
    std::memcpy(&denormalized, &bits, 4);
    denormalized -= magic_bias;
    const uint32_t denormalized_cutoff = 1u << 27;
    uint32_t result_bits;
    if (two_w < denormalized_cutoff)
        std::memcpy(&result_bits, &denormalized, 4);
    else
        std::memcpy(&result_bits, &normalized, 4);
    result_bits |= sign;
    float result;
    std::memcpy(&result, &result_bits, 4);
    return result;
}

uint16_t float_to_half(float f) {
    const float scale_to_inf = 0x1.0p+112f;
    const float scale_to_zero = 0x1.0p-110f;
    uint32_t w;
    std::memcpy(&w, &f, 4);
    float abs_f;
    uint32_t abs_w = w & 0x7FFFFFFFu;
    std::memcpy(&abs_f, &abs_w, 4);
    float base = (abs_f * scale_to_inf) * scale_to_zero;
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    uint32_t bias_bits = (bias >> 1) + 0x07800000u;
    float bias_f;
    std::memcpy(&bias_f, &bias_bits, 4);
    base = bias_f + base;
    uint32_t bits;
    std::memcpy(&bits, &base, 4);
    const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
    const uint32_t mantissa_bits = bits & 0x00000FFFu;
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

namespace {

#if defined(ONNXSTREAM_HALF_X86)
// F16C converts 8 values per instruction with the same IEEE round-to-nearest-even; weights of an fp16
// model are widened on every run, so this is on the hot path (the scalar loop was ~4 % of an SD UNet
// run). Compiled for F16C here and chosen at run time, so the library still runs on CPUs without it.
__attribute__((target("avx,f16c"))) void half_to_float_f16c(const uint16_t *src, float *dst, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i))));
    for (; i < n; ++i) dst[i] = half_to_float(src[i]);
}

__attribute__((target("avx,f16c"))) void float_to_half_f16c(const float *src, uint16_t *dst, size_t n) {
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(src + i);
        // NaNs keep the portable path's canonical 0x7E00 (F16C would keep payload bits).
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
            for (size_t k = i; k < i + 8; ++k) dst[k] = float_to_half(src[k]);
            continue;
        }
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) dst[i] = float_to_half(src[i]);
}

// cpuinfo rather than __builtin_cpu_supports: clang 14 rejects the "f16c" feature string.
bool cpu_has_vector_half() {
    static const bool has = cpuinfo_initialize() && cpuinfo_has_x86_avx() && cpuinfo_has_x86_f16c();
    return has;
}
void half_to_float_vector(const uint16_t *src, float *dst, size_t n) { half_to_float_f16c(src, dst, n); }
void float_to_half_vector(const float *src, uint16_t *dst, size_t n) { float_to_half_f16c(src, dst, n); }
#elif defined(ONNXSTREAM_HALF_NEON)
// The NEON twin of the F16C path: 4 values per conversion instruction, round-to-nearest-even as the scalar
// code. Hardware NaNs differ from the portable path's (AArch32 NEON always returns the default NaN, AArch64
// keeps payload bits), so NaN lanes get the scalar result: sign kept, canonical 0x7E00.
void half_to_float_vector(const uint16_t *src, float *dst, size_t n) {
    size_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(src + i))));
    for (; i < n; ++i) dst[i] = half_to_float(src[i]);
}

void float_to_half_vector(const float *src, uint16_t *dst, size_t n) {
    const uint16x4_t canonical_nan = vdup_n_u16(0x7E00);
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(src + i);
        const uint16x4_t ordered = vmovn_u32(vceqq_f32(v, v));
        const uint16x4_t sign = vand_u16(vshrn_n_u32(vreinterpretq_u32_f32(v), 16), vdup_n_u16(0x8000));
        const uint16x4_t h = vreinterpret_u16_f16(vcvt_f16_f32(v));
        vst1_u16(dst + i, vbsl_u16(ordered, h, vorr_u16(sign, canonical_nan)));
    }
    for (; i < n; ++i) dst[i] = float_to_half(src[i]);
}

#if defined(__aarch64__)
// Every AArch64 CPU has NEON with the half-precision conversions.
bool cpu_has_vector_half() { return true; }
#else
// ARMv7 made NEON and the half-precision extension optional (a Cortex-A9 may lack either).
bool cpu_has_vector_half() {
    static const bool has = cpuinfo_initialize() && cpuinfo_has_arm_neon_fp16();
    return has;
}
#endif
#else
bool cpu_has_vector_half() { return false; }
void half_to_float_vector(const uint16_t *, float *, size_t) {}
void float_to_half_vector(const float *, uint16_t *, size_t) {}
#endif

} // namespace

bool half_vector_conversions() { return cpu_has_vector_half(); }

float bfloat16_to_float(uint16_t b) {
    const uint32_t bits = uint32_t(b) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

uint16_t float_to_bfloat16(float f) {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u); // NaN
    const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u); // half of the dropped part, ties to even
    return static_cast<uint16_t>((bits + rounding) >> 16);
}

void half_to_float_n(const uint16_t *src, float *dst, size_t n) {
    if (cpu_has_vector_half()) return half_to_float_vector(src, dst, n);
    for (size_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
}

void float_to_half_n(const float *src, uint16_t *dst, size_t n) {
    if (cpu_has_vector_half()) return float_to_half_vector(src, dst, n);
    for (size_t i = 0; i < n; ++i) dst[i] = float_to_half(src[i]);
}

} // namespace onnxstream
