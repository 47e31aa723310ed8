// The arithmetic option (ModelOptions::arithmetic, onnxstream_model_options_t.arithmetic): AUTO resolves as
// cpuinfo says; FP16 forced runs Conv / MatMul / Gemm in float16 (or falls back per op, logged once) without
// error, whole, in weight chunks and from the persistent cache, with results matching a double-precision
// reference computed here from the same float16 values.
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "exec/model.h"
#include "tensor/half.h"
#include "test_util.h"
#include "xnnpack/init.h"

namespace onnxstream {
namespace {

using test::TempDir;

const char *kModel =
    "conv:Conv*input:x(1,4,6,6);w.bin(float16:5,4,3,3);b.bin(float16:5)*output:y(1,5,6,6)*kernel_shape:3,3;"
    "pads:1,1,1,1\n"
    "mm:MatMul*input:z(3,8);m.bin(float16:8,4)*output:u(3,4)\n"
    "gm:Gemm*input:z(3,8);g.bin(float16:4,8);gb.bin(float16:4)*output:v(3,4)*transB:1\n";

// Deterministic values in [-1, 1), rounded to float16 (the reference uses the rounded values).
std::vector<float> values(size_t n, uint32_t seed) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = half_to_float(float_to_half(static_cast<float>(seed >> 8) / 8388608.0f - 1.0f));
    }
    return v;
}

std::string half_bytes(const std::vector<float> &v) {
    std::string s(v.size() * 2, '\0');
    float_to_half_n(v.data(), reinterpret_cast<uint16_t *>(&s[0]), v.size());
    return s;
}

struct Fixture {
    TempDir dir;
    std::vector<float> x = values(1 * 4 * 6 * 6, 1), w = values(5 * 4 * 9, 2), b = values(5, 3);
    std::vector<float> z = values(3 * 8, 4), m = values(8 * 4, 5), g = values(4 * 8, 6), gb = values(4, 7);
    Fixture() {
        test::write_file(dir.file("w.bin"), half_bytes(w));
        test::write_file(dir.file("b.bin"), half_bytes(b));
        test::write_file(dir.file("m.bin"), half_bytes(m));
        test::write_file(dir.file("g.bin"), half_bytes(g));
        test::write_file(dir.file("gb.bin"), half_bytes(gb));
    }
    std::vector<double> conv_ref() const {
        std::vector<double> y(5 * 36);
        for (int o = 0; o < 5; ++o)
            for (int i = 0; i < 6; ++i)
                for (int j = 0; j < 6; ++j) {
                    double s = b[o];
                    for (int c = 0; c < 4; ++c)
                        for (int ki = 0; ki < 3; ++ki)
                            for (int kj = 0; kj < 3; ++kj) {
                                int r = i + ki - 1, q = j + kj - 1;
                                if (r < 0 || r >= 6 || q < 0 || q >= 6) continue;
                                s += double(x[(c * 6 + r) * 6 + q]) * w[((o * 4 + c) * 3 + ki) * 3 + kj];
                            }
                    y[(o * 6 + i) * 6 + j] = s;
                }
        return y;
    }
    std::vector<double> matmul_ref(bool gemm) const {
        std::vector<double> y(12);
        for (int r = 0; r < 3; ++r)
            for (int n = 0; n < 4; ++n) {
                double s = gemm ? gb[n] : 0.0;
                for (int k = 0; k < 8; ++k) s += double(z[r * 8 + k]) * (gemm ? g[n * 8 + k] : m[k * 4 + n]);
                y[r * 4 + n] = s;
            }
        return y;
    }
};

std::unique_ptr<Model> load(const Fixture &f, onnxstream_arithmetic_t arithmetic, size_t chunk_bytes = 0,
                            const std::string &cache = "") {
    ModelOptions mo;
    mo.threads = 2;
    mo.arithmetic = arithmetic;
    mo.run.weight_chunk_bytes = chunk_bytes;
    mo.cache_path = cache;
    auto model = std::make_unique<Model>(mo);
    model->load_string(kModel, f.dir.path(), "model.txt");
    const std::string xb = half_bytes(f.x), zb = half_bytes(f.z);
    model->push_input("x", DType::F16, {1, 4, 6, 6}, xb.data(), xb.size());
    model->push_input("z", DType::F16, {3, 8}, zb.data(), zb.size());
    return model;
}

// float16 tolerance: the output is rounded to float16 (relative 2^-11) and, on CPUs with native float16
// arithmetic, XNNPACK accumulates the (at most 36) products in float16 too: |err| <= 1e-2 + 1e-2 |ref|
// bounds both with margin for these magnitudes (|ref| < 8).
void expect_close(const Model &model, const char *name, const std::vector<double> &ref) {
    int k = model.find_output(name);
    ASSERT_GE(k, 0) << name;
    const Tensor &t = model.outputs()[static_cast<size_t>(k)];
    ASSERT_EQ(t.dtype(), DType::F16) << name;
    ASSERT_EQ(static_cast<size_t>(t.numel()), ref.size()) << name;
    std::vector<float> got(ref.size());
    half_to_float_n(t.data<uint16_t>(), got.data(), got.size());
    for (size_t i = 0; i < ref.size(); ++i)
        ASSERT_NEAR(got[i], ref[i], 1e-2 + 1e-2 * std::fabs(ref[i])) << name << "[" << i << "]";
}

void expect_all_close(const Model &model, const Fixture &f) {
    expect_close(model, "y", f.conv_ref());
    expect_close(model, "u", f.matmul_ref(false));
    expect_close(model, "v", f.matmul_ref(true));
}

TEST(arithmetic, resolve) {
    EXPECT_TRUE(resolve_fp16_arithmetic(ONNXSTREAM_ARITHMETIC_FP16, false, false));
    EXPECT_FALSE(resolve_fp16_arithmetic(ONNXSTREAM_ARITHMETIC_FP32, true, true));
    EXPECT_TRUE(resolve_fp16_arithmetic(ONNXSTREAM_ARITHMETIC_AUTO, true, true));
    EXPECT_FALSE(resolve_fp16_arithmetic(ONNXSTREAM_ARITHMETIC_AUTO, false, true));
    EXPECT_FALSE(resolve_fp16_arithmetic(ONNXSTREAM_ARITHMETIC_AUTO, true, false));
}

TEST(arithmetic, auto_follows_cpuinfo) {
    Fixture f;
    auto model = load(f, ONNXSTREAM_ARITHMETIC_AUTO);
    std::printf("cpuinfo: native float16 arithmetic %s\n", cpu_has_fp16_arithmetic() ? "yes" : "no");
    EXPECT_EQ(model->fp16_arithmetic(), cpu_has_fp16_arithmetic());
#if defined(__x86_64__) || defined(__i386__)
    EXPECT_FALSE(model->fp16_arithmetic()) << "x86 has no native float16 arithmetic (F16C only converts)";
#endif
    // Set by CI where the (emulated) CPU is known: 1 for ARMv8.2 with FP16 (qemu -cpu max, a Pi 5), 0 for
    // ARMv8.0 (cortex-a53: a Pi Zero 2 or 3), so a cpuinfo misreading cannot pass unnoticed.
    if (const char *expect = std::getenv("ONNXSTREAM_EXPECT_FP16_ARITHMETIC")) {
        EXPECT_EQ(model->fp16_arithmetic(), std::string(expect) == "1") << "ONNXSTREAM_EXPECT_FP16_ARITHMETIC=" << expect;
    }
    model->run({});
    expect_all_close(*model, f);

    // A model without float16 tensors stays float32 whatever the CPU.
    TempDir dir;
    test::write_floats(dir.file("m.bin"), values(8 * 4, 5));
    ModelOptions mo;
    Model f32(mo);
    f32.load_string("mm:MatMul*input:z(3,8);m.bin(float32:8,4)*output:u(3,4)\n", dir.path(), "model.txt");
    EXPECT_FALSE(f32.fp16_arithmetic());
}

TEST(arithmetic, fp32_forced) {
    Fixture f;
    auto model = load(f, ONNXSTREAM_ARITHMETIC_FP32);
    EXPECT_FALSE(model->fp16_arithmetic());
    model->run({});
    EXPECT_EQ(model->last_run().exec.fp16_ops, 0u);
    expect_all_close(*model, f);
}

TEST(arithmetic, fp16_forced_computes_or_falls_back) {
    Fixture f;
    auto model = load(f, ONNXSTREAM_ARITHMETIC_FP16);
    std::vector<std::string> warnings;
    model->set_log([&](onnxstream_log_level_t, const std::string &m) { warnings.push_back(m); },
                   ONNXSTREAM_LOG_WARNING);
    EXPECT_TRUE(model->fp16_arithmetic());
    for (int run = 0; run < 2; ++run) {
        model->run({});
        const RunStats &s = model->last_run().exec;
        EXPECT_EQ(s.fp16_ops + s.fp16_fallbacks, 3u) << "Conv, MatMul and Gemm each ask for float16";
        std::printf("run %d: %llu ops in fp16, %llu fell back to fp32\n", run, (unsigned long long)s.fp16_ops,
                    (unsigned long long)s.fp16_fallbacks);
        expect_all_close(*model, f);
        // The fallback is said once per model, through the log callback.
        EXPECT_EQ(warnings.size(), s.fp16_fallbacks > 0 ? 1u : 0u);
    }
}

TEST(arithmetic, fp16_with_streamed_weights) {
    // Every weight over 32 bytes is read in row chunks: the Conv and the Gemm ([N, K]) compute each chunk in
    // float16; the MatMul's [K, N] weight would sum partial products over K, so it stays float32.
    Fixture f;
    auto model = load(f, ONNXSTREAM_ARITHMETIC_FP16, 32);
    model->run({});
    const RunStats &s = model->last_run().exec;
    EXPECT_EQ(s.fp16_ops + s.fp16_fallbacks, 2u);
    expect_all_close(*model, f);
}

TEST(arithmetic, fp16_from_persistent_cache) {
    // The cache stores float16 Conv/MatMul/Gemm weights widened to float32: the float16 kernels take them
    // with XNN_FLAG_FP32_STATIC_WEIGHTS.
    Fixture f;
    TempDir cache;
    for (int process = 0; process < 2; ++process) { // build, then open
        auto model = load(f, ONNXSTREAM_ARITHMETIC_FP16, 0, cache.file("weights.cache"));
        model->run({});
        const RunStats &s = model->last_run().exec;
        EXPECT_EQ(s.fp16_ops + s.fp16_fallbacks, 3u);
        expect_all_close(*model, f);
    }
}

} // namespace
} // namespace onnxstream
