// 8-bit weights: onnxstream-convert --quantize w8 (per-channel symmetric int8) against ONNX Runtime on the
// QDQ twin of each model (the exact reference for the quantized weights) and on the float model (a loose
// bound), streamed weight chunks, OnnxStream's per-tensor uint8 model.txt syntax, and bad scales files.
// Those comparisons dequantize the weights (ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS), as the QDQ twins compute;
// int8 arithmetic (XNNPACK 2024's dynamically quantized kernels) is checked against a formula of its own
// (PerChannelInt8Arithmetic) and against the float models. Public C API only.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <random>
#include <sys/stat.h>

#include "common/conversion_util.h"
#include "util/npy.h"

using namespace onnxstream::testing;
using onnxstream::tools::NpyArray;
using onnxstream::tools::read_npy;

namespace {

std::string cases_dir() {
    const char *d = std::getenv("ONNXSTREAM_QUANT_CASES");
    return d ? d : "";
}

uint64_t file_size(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

uint64_t bin_bytes(const std::string &dir) {
    uint64_t total = 0;
    DIR *d = ::opendir(dir.c_str());
    if (!d) return 0;
    while (dirent *e = ::readdir(d)) {
        std::string name = e->d_name;
        if (name.size() > 4 && name.substr(name.size() - 4) == ".bin") total += file_size(dir + "/" + name);
    }
    ::closedir(d);
    return total;
}

void collect(void *user, onnxstream_log_level_t level, const char *message) {
    auto *c = static_cast<Conversion *>(user);
    if (level >= ONNXSTREAM_LOG_WARNING) c->warnings.push_back(message);
    else c->report += message;
}

Conversion convert_w8(const std::string &onnx, const std::string &out, int32_t quantize = 1, bool fp16 = false) {
    Conversion c;
    onnxstream_convert_options_t o;
    onnxstream_convert_options_init(&o);
    o.quantize = quantize;
    o.fp16 = fp16;
    o.report_fn = collect;
    o.report_user_data = &c;
    c.status = onnxstream_convert_onnx(onnx.c_str(), out.c_str(), &o);
    if (c.status != ONNXSTREAM_OK) c.message = onnxstream_last_error();
    return c;
}

void write_file(const std::string &path, const void *data, size_t n) {
    std::ofstream f(path, std::ios::binary);
    f.write(static_cast<const char *>(data), static_cast<std::streamsize>(n));
    ASSERT_TRUE(f.good()) << path;
}

struct Handle {
    onnxstream_model_t *m = nullptr;
    ~Handle() { onnxstream_model_destroy(m); }
};

// What the QDQ twins compute: every 8-bit weight dequantized to float32.
constexpr uint32_t kDequantize = ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS;

onnxstream_model_options_t options_with(uint32_t flags) {
    onnxstream_model_options_t o;
    onnxstream_model_options_init(&o);
    o.flags = flags;
    return o;
}

// Create a model (weight_chunk_bytes 0 = the default) and load dir; returns the load status.
onnxstream_status_t load(Handle &h, const std::string &dir, uint64_t chunk_bytes = 0, uint32_t flags = kDequantize) {
    onnxstream_model_options_t o = options_with(flags);
    o.weight_chunk_bytes = chunk_bytes;
    o.provider = ONNXSTREAM_PROVIDER_NOCACHE;
    EXPECT_EQ(onnxstream_model_create(&o, &h.m), ONNXSTREAM_OK);
    return onnxstream_model_load(h.m, dir.c_str());
}

// Run the model in `dir` on one float32 input and return output `out`.
// int8_ops: where to store the run's RunStats::int8_ops, when given.
std::vector<float> run_one(const std::string &dir, const char *in, const std::vector<int64_t> &shape,
                           const std::vector<float> &x, const char *out, uint64_t chunk_bytes = 0,
                           uint32_t flags = kDequantize, uint64_t *int8_ops = nullptr) {
    Handle h;
    onnxstream_status_t st = load(h, dir, chunk_bytes, flags);
    EXPECT_EQ(st, ONNXSTREAM_OK) << onnxstream_model_last_error(h.m);
    if (st != ONNXSTREAM_OK) return {};
    EXPECT_EQ(onnxstream_model_push_tensor(h.m, in, ONNXSTREAM_DTYPE_FLOAT32, shape.size(), shape.data(), x.data(),
                                           x.size() * 4),
              ONNXSTREAM_OK)
        << onnxstream_model_last_error(h.m);
    st = onnxstream_model_run(h.m);
    EXPECT_EQ(st, ONNXSTREAM_OK) << onnxstream_model_last_error(h.m);
    if (st != ONNXSTREAM_OK) return {};
    if (int8_ops) {
        onnxstream_run_stats_t rs;
        std::memset(&rs, 0, sizeof(rs));
        rs.struct_size = sizeof(rs);
        EXPECT_EQ(onnxstream_model_run_stats(h.m, &rs), ONNXSTREAM_OK);
        *int8_ops = rs.int8_ops;
    }
    onnxstream_tensor_view_t v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = sizeof(v);
    EXPECT_EQ(onnxstream_model_get_output_by_name(h.m, out, &v), ONNXSTREAM_OK) << onnxstream_model_last_error(h.m);
    const float *p = static_cast<const float *>(v.data);
    size_t n = 1;
    for (size_t i = 0; i < v.rank; ++i) n *= static_cast<size_t>(v.shape[i]);
    return std::vector<float>(p, p + n);
}

std::vector<float> npy_floats(const NpyArray &a) {
    std::vector<float> v(a.data.size() / 4);
    std::memcpy(v.data(), a.data.data(), v.size() * 4);
    return v;
}

size_t count_of(const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

// values[0, n) as int8 arithmetic sees them, quantized together: asymmetric over their range widened to
// contain 0, 255 steps, zero point rounded and clamped to int8, then dequantized.
void as_int8_sees(double *values, size_t n) {
    double lo = 0, hi = 0;
    for (size_t i = 0; i < n; ++i) lo = std::min(lo, values[i]), hi = std::max(hi, values[i]);
    const double scale = hi == lo ? 1.0 : (hi - lo) / 255.0;
    const double zp = std::clamp(std::nearbyint(-128.0 - lo / scale), -128.0, 127.0);
    for (size_t i = 0; i < n; ++i)
        values[i] = (std::clamp(std::nearbyint(values[i] / scale) + zp, -128.0, 127.0) - zp) * scale;
}

class ConvertW8 : public ::testing::TestWithParam<std::string> {};

TEST_P(ConvertW8, MatchesQdqTwinAndFloatModel) {
    ASSERT_FALSE(cases_dir().empty()) << "ONNXSTREAM_QUANT_CASES is not set (run through meson test)";
    const std::string name = GetParam();
    const std::string float_case = cases_dir() + "/models/" + name, qdq_case = float_case + "_qdq";
    Scratch scratch("onnxstream-quant-test");
    const std::string q_dir = scratch.path() + "/w8", f_dir = scratch.path() + "/f32";
    Conversion q = convert_w8(float_case + "/model.onnx", q_dir);
    ASSERT_EQ(q.status, ONNXSTREAM_OK) << q.message;
    Conversion f = convert_w8(float_case + "/model.onnx", f_dir, 0);
    ASSERT_EQ(f.status, ONNXSTREAM_OK) << f.message;

    const std::string txt = read_text(q_dir + "/model.txt");
    const size_t expected_count = std::stoul(read_text(float_case + "/quantized_count.txt"));
    EXPECT_EQ(count_of(txt, "(int8[@"), expected_count) << txt;
    EXPECT_EQ(count_of(read_text(f_dir + "/model.txt"), "int8"), 0u);
    EXPECT_NE(q.report.find("int8 per-channel weights: " + std::to_string(expected_count)), std::string::npos)
        << q.report;
    // Every referenced scales file exists.
    for (size_t p = txt.find("[@"); p != std::string::npos; p = txt.find("[@", p + 1)) {
        std::string file = txt.substr(p + 2, txt.find(',', p) - p - 2);
        EXPECT_TRUE(exists(q_dir + "/" + file)) << file;
    }
    const uint64_t qb = bin_bytes(q_dir), fb = bin_bytes(f_dir);
    std::printf("%s: weights %llu bytes float32, %llu bytes w8 (%.3f)\n", name.c_str(),
                static_cast<unsigned long long>(fb), static_cast<unsigned long long>(qb),
                static_cast<double>(qb) / static_cast<double>(fb));
    EXPECT_LT(static_cast<double>(qb), 0.3 * static_cast<double>(fb));

    const onnxstream_model_options_t dequantize = options_with(kDequantize), int8 = options_with(0);
    run_and_compare(q_dir, qdq_case, 1e-5, 1e-3, &dequantize);
    run_and_compare(q_dir, float_case, 2e-2, 1.0, &dequantize);
    // int8 arithmetic where the build has it: activation quantization adds its own error, well within the
    // float model's bound.
    run_and_compare(q_dir, float_case, 2e-2, 1.0, &int8);
}

TEST_P(ConvertW8, StreamedChunksGiveTheSameResult) {
    ASSERT_FALSE(cases_dir().empty());
    const std::string float_case = cases_dir() + "/models/" + GetParam();
    Scratch scratch("onnxstream-quant-test");
    const std::string q_dir = scratch.path() + "/w8";
    Conversion q = convert_w8(float_case + "/model.onnx", q_dir);
    ASSERT_EQ(q.status, ONNXSTREAM_OK) << q.message;
    NpyArray x = read_npy(float_case + "/input_0.npy");
    std::vector<float> whole = run_one(q_dir, "x", x.shape, npy_floats(x), "y", UINT64_MAX);
    std::vector<float> chunked = run_one(q_dir, "x", x.shape, npy_floats(x), "y", 2048);
    ASSERT_EQ(whole.size(), chunked.size());
    ASSERT_FALSE(whole.empty());
    Compare c = compare(chunked.data(), whole.data(), whole.size());
    EXPECT_LE(c.rel_l2, 1e-6);
}

// --fp16 with --quantize w8: int8 weights beside float16 biases (and the small weights left float).
TEST_P(ConvertW8, WithFp16) {
    ASSERT_FALSE(cases_dir().empty());
    const std::string float_case = cases_dir() + "/models/" + GetParam();
    Scratch scratch("onnxstream-quant-test");
    Conversion q = convert_w8(float_case + "/model.onnx", scratch.out(), 1, true);
    ASSERT_EQ(q.status, ONNXSTREAM_OK) << q.message;
    const std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(count_of(txt, "(int8[@"), std::stoul(read_text(float_case + "/quantized_count.txt")));
    EXPECT_NE(txt.find("(float16:"), std::string::npos);
    const onnxstream_model_options_t dequantize = options_with(kDequantize);
    run_and_compare(scratch.out(), float_case + "_qdq", 2e-3, 1e-2, &dequantize);
}

INSTANTIATE_TEST_SUITE_P(Models, ConvertW8, ::testing::Values("cnn", "mlp"));

TEST(ConvertW8Options, BadQuantizeValueIsRejected) {
    Scratch scratch("onnxstream-quant-test");
    Conversion c = convert_w8(cases_dir() + "/models/cnn/model.onnx", scratch.out(), 2);
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(c.message.find("quantize"), std::string::npos) << c.message;
    EXPECT_FALSE(exists(scratch.out()));
}

TEST(ConvertW8Options, Cli) {
    const char *exe = std::getenv("ONNXSTREAM_CONVERT_EXE");
    if (!exe) GTEST_SKIP() << "onnxstream-convert is not built";
    Scratch scratch("onnxstream-quant-test");
    std::string cmd = std::string(exe) + " " + cases_dir() + "/models/mlp/model.onnx " + scratch.out() +
                      " --quantize w8 --report 2>&1";
    FILE *p = ::popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[512];
    while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
    EXPECT_EQ(::pclose(p), 0) << out;
    EXPECT_NE(out.find("int8 per-channel weights: 2, saving"), std::string::npos) << out;
    cmd = std::string(exe) + " " + cases_dir() + "/models/mlp/model.onnx " + scratch.path() + "/other --quantize w2 2>&1";
    p = ::popen(cmd.c_str(), "r");
    out.clear();
    while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
    EXPECT_NE(::pclose(p), 0);
    EXPECT_NE(out.find("--quantize w2 is not supported"), std::string::npos) << out;
}

// OnnxStream's per-tensor uint8 syntax on a Conv weight stored OHWI (w_nhwc.bin), against numpy.
TEST(HandWritten, PerTensorUint8Conv) {
    const std::string dir = cases_dir() + "/handwritten/conv_u8";
    NpyArray x = read_npy(dir + "/input_0.npy"), want = read_npy(dir + "/expected_0.npy");
    std::vector<float> got = run_one(dir, "x", x.shape, npy_floats(x), "y");
    ASSERT_EQ(got.size(), want.data.size() / 4);
    Compare c = compare(got.data(), npy_floats(want).data(), got.size());
    EXPECT_LE(c.rel_l2, 1e-5);
}

// A per-channel MatMul weight [K, N] (axis 1) and a Gemm transB=1 weight [N, N] (axis 0), written by hand,
// against a float64 reference, whole and streamed in small row chunks.
class PerChannelFolder {
public:
    static constexpr int M = 3, K = 64, N = 48;
    explicit PerChannelFolder(Scratch &s) : dir(s.path() + "/pc") {
        ::mkdir(dir.c_str(), 0755);
        std::mt19937 rng(5);
        std::uniform_int_distribution<int> qd(-127, 127);
        std::uniform_real_distribution<float> fd(0.001f, 0.02f), xd(-1.0f, 1.0f);
        q1.resize(K * N);
        q2.resize(N * N);
        s1.resize(N);
        s2.resize(N);
        x.resize(M * K);
        for (auto &v : q1) v = static_cast<int8_t>(qd(rng));
        for (auto &v : q2) v = static_cast<int8_t>(qd(rng));
        for (auto &v : s1) v = fd(rng);
        for (auto &v : s2) v = fd(rng);
        for (auto &v : x) v = xd(rng);
        write_file(dir + "/w1.bin", q1.data(), q1.size());
        write_file(dir + "/w1_scales.bin", s1.data(), s1.size() * 4);
        write_file(dir + "/w2.bin", q2.data(), q2.size());
        write_file(dir + "/w2_scales.bin", s2.data(), s2.size() * 4);
        model_txt = "mm:MatMul*input:x(3,64);w1.bin(int8[@w1_scales.bin,1]:64,48)*output:h(3,48)\n"
                    "gm:Gemm*input:h(3,48);w2.bin(int8[@w2_scales.bin,0]:48,48)*output:y(3,48)*transB:1\n";
        write_file(dir + "/model.txt", model_txt.data(), model_txt.size());
        want = reference(false);
        want_int8 = reference(true);
    }

    // The model in float64, on activations as they are or (int8) as int8 arithmetic sees them: each row
    // quantized on its own, asymmetric over the row's range widened to contain 0, 255 steps, zero point
    // rounded and clamped to int8.
    std::vector<float> reference(bool int8) const {
        auto row_as_seen = [&](const float *row, int n) {
            std::vector<double> r(row, row + n);
            if (int8) as_int8_sees(r.data(), r.size());
            return r;
        };
        std::vector<float> h(M * N), y;
        for (int m = 0; m < M; ++m) {
            const std::vector<double> xr = row_as_seen(&x[m * K], K);
            for (int n = 0; n < N; ++n) {
                double acc = 0;
                for (int k = 0; k < K; ++k) acc += xr[k] * (float(q1[k * N + n]) * s1[n]);
                h[m * N + n] = static_cast<float>(acc);
            }
        }
        for (int m = 0; m < M; ++m) {
            const std::vector<double> hr = row_as_seen(&h[m * N], N);
            for (int n = 0; n < N; ++n) {
                double acc = 0;
                for (int k = 0; k < N; ++k) acc += hr[k] * double(float(q2[n * N + k]) * s2[n]);
                y.push_back(static_cast<float>(acc));
            }
        }
        return y;
    }

    std::string dir, model_txt;
    std::vector<int8_t> q1, q2;
    std::vector<float> s1, s2, x, want, want_int8;
};

TEST(HandWritten, PerChannelMatMulAndGemm) {
    Scratch scratch("onnxstream-quant-test");
    PerChannelFolder f(scratch);
    for (uint64_t chunk : {uint64_t(0), uint64_t(UINT64_MAX), uint64_t(512)}) {
        SCOPED_TRACE("weight_chunk_bytes " + std::to_string(chunk));
        std::vector<float> got = run_one(f.dir, "x", {3, 64}, f.x, "y", chunk);
        ASSERT_EQ(got.size(), f.want.size());
        Compare c = compare(got.data(), f.want.data(), got.size());
        EXPECT_LE(c.rel_l2, 1e-5);
    }
}

// Without ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS, a build on XNNPACK's 2024 API computes both ops in int8
// (RunStats::int8_ops) and matches the int8 formula; a 2022 build dequantizes and matches the float one.
TEST(HandWritten, PerChannelInt8Arithmetic) {
    Scratch scratch("onnxstream-quant-test");
    PerChannelFolder f(scratch);
    const bool xnnpack_2024 = std::strstr(onnxstream_kernel_library(), "2024") != nullptr;
    Compare apart = compare(f.want_int8.data(), f.want.data(), f.want.size());
    std::printf("int8 formula vs float: rel L2 %.3g\n", apart.rel_l2);
    for (uint64_t chunk : {uint64_t(UINT64_MAX), uint64_t(512)}) {
        SCOPED_TRACE("weight_chunk_bytes " + std::to_string(chunk));
        uint64_t int8_ops = 0;
        std::vector<float> got = run_one(f.dir, "x", {3, 64}, f.x, "y", chunk, 0, &int8_ops);
        ASSERT_EQ(got.size(), f.want.size());
        EXPECT_EQ(int8_ops, xnnpack_2024 ? 2u : 0u);
        Compare to_float = compare(got.data(), f.want.data(), got.size());
        Compare to_int8 = compare(got.data(), f.want_int8.data(), got.size());
        std::printf("chunk %llu: int8_ops %llu, rel L2 vs float %.3g, vs int8 formula %.3g\n",
                    static_cast<unsigned long long>(chunk), static_cast<unsigned long long>(int8_ops),
                    to_float.rel_l2, to_int8.rel_l2);
        if (!xnnpack_2024) {
            EXPECT_LE(to_float.rel_l2, 1e-5);
        } else if (chunk == UINT64_MAX) {
            EXPECT_LE(to_int8.rel_l2, 1e-4);
            EXPECT_GE(to_float.rel_l2, 1e-4); // it did quantize the activations
        } else {
            // Chunks of the [K, N] MatMul weight quantize their own columns of x: closer to float, not the formula.
            EXPECT_LE(to_float.rel_l2, apart.rel_l2 * 2);
        }
    }
}

// The same for a Conv (2 images, a bias). int8 arithmetic quantizes each band of output rows on its own
// (XNNPACK's convolution takes one scale and zero point per batch item, and each band is one): for a 3x3
// kernel with padding, bands of 2 output rows when the output height is even, else of 1, each quantized over
// the input rows its kernel reaches, padding included as 0 (heights 8 and 7 take both); for a 1x1 kernel,
// each pixel on its own.
TEST(HandWritten, PerChannelInt8Conv) {
    for (const auto &[H, K] : {std::pair{8, 3}, std::pair{7, 3}, std::pair{5, 1}}) {
        SCOPED_TRACE("height " + std::to_string(H) + ", kernel " + std::to_string(K));
        constexpr int B = 2, C = 3, W = 6, O = 5;
        const int P = K / 2; // padding
        Scratch scratch("onnxstream-quant-test");
        const std::string dir = scratch.path() + "/conv";
        ::mkdir(dir.c_str(), 0755);
        std::mt19937 rng(11);
        std::uniform_int_distribution<int> qd(-127, 127);
        std::uniform_real_distribution<float> sd(0.001f, 0.02f), xd(-0.5f, 1.5f);
        std::vector<int8_t> q(O * C * K * K);
        std::vector<float> scales(O), bias(O), x(B * C * H * W);
        for (auto &v : q) v = static_cast<int8_t>(qd(rng));
        for (auto &v : scales) v = sd(rng);
        for (auto &v : bias) v = xd(rng);
        for (auto &v : x) v = xd(rng);
        // A bright spot in the first image's top row: with one scale per image it would coarsen every row.
        x[2] = 40.0f;
        write_file(dir + "/w_nchw.bin", q.data(), q.size());
        write_file(dir + "/w_scales.bin", scales.data(), scales.size() * 4);
        write_file(dir + "/b.bin", bias.data(), bias.size() * 4);
        const std::string shape = "2,3," + std::to_string(H) + ",6", out_shape = "2,5," + std::to_string(H) + ",6";
        const std::string k = std::to_string(K), p = std::to_string(P);
        const std::string txt = "conv:Conv*input:x(" + shape + ");w_nchw.bin(int8[@w_scales.bin,0]:5,3," + k + "," +
                                k + ");b.bin(float32:5)*output:y(" + out_shape + ")*kernel_shape:" + k + "," + k +
                                ";pads:" + p + "," + p + "," + p + "," + p + "\n";
        write_file(dir + "/model.txt", txt.data(), txt.size());
        const int band = H % 2 == 0 ? 2 : 1;
        const bool per_pixel = K == 1;
        auto reference = [&](bool int8) {
            std::vector<float> y(B * O * H * W);
            for (int b = 0; b < B; ++b)
                for (int i0 = 0; i0 < H; i0 += band) {
                    // The input rows this band's kernel reaches, as int8 arithmetic sees them.
                    const int r0 = std::max(i0 - P, 0), r1 = std::min(i0 + band + P, H);
                    std::vector<double> seen;
                    for (int c = 0; c < C; ++c)
                        for (int r = r0; r < r1; ++r)
                            for (int j = 0; j < W; ++j) seen.push_back(x[((b * C + c) * H + r) * W + j]);
                    const size_t plane = static_cast<size_t>(r1 - r0) * W;
                    if (int8 && !per_pixel) as_int8_sees(seen.data(), seen.size());
                    for (size_t pixel = 0; int8 && per_pixel && pixel < plane; ++pixel) {
                        std::vector<double> channels(C);
                        for (int c = 0; c < C; ++c) channels[c] = seen[c * plane + pixel];
                        as_int8_sees(channels.data(), C);
                        for (int c = 0; c < C; ++c) seen[c * plane + pixel] = channels[c];
                    }
                    auto at = [&](int c, int r, int j) { return seen[(c * (r1 - r0) + r - r0) * W + j]; };
                    for (int o = 0; o < O; ++o)
                        for (int i = i0; i < i0 + band; ++i)
                            for (int j = 0; j < W; ++j) {
                                double acc = bias[o];
                                for (int c = 0; c < C; ++c)
                                    for (int di = 0; di < K; ++di)
                                        for (int dj = 0; dj < K; ++dj) {
                                            const int ii = i + di - P, jj = j + dj - P;
                                            if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                                            acc += at(c, ii, jj) *
                                                   double(float(q[((o * C + c) * K + di) * K + dj]) * scales[o]);
                                        }
                                y[((b * O + o) * H + i) * W + j] = static_cast<float>(acc);
                            }
                }
            return y;
        };
        const std::vector<float> want = reference(false), want_int8 = reference(true);
        const bool xnnpack_2024 = std::strstr(onnxstream_kernel_library(), "2024") != nullptr;
        for (uint64_t chunk : {uint64_t(UINT64_MAX), uint64_t(64)}) {
            SCOPED_TRACE("weight_chunk_bytes " + std::to_string(chunk));
            uint64_t int8_ops = 0;
            std::vector<float> got = run_one(dir, "x", {B, C, H, W}, x, "y", chunk, 0, &int8_ops);
            ASSERT_EQ(got.size(), want.size());
            EXPECT_EQ(int8_ops, xnnpack_2024 ? 1u : 0u);
            Compare to_float = compare(got.data(), want.data(), got.size());
            Compare to_int8 = compare(got.data(), want_int8.data(), got.size());
            std::printf("conv height %d kernel %d chunk %llu: rel L2 vs float %.3g, vs int8 formula %.3g\n", H, K,
                        static_cast<unsigned long long>(chunk), to_float.rel_l2, to_int8.rel_l2);
            if (xnnpack_2024) {
                EXPECT_LE(to_int8.rel_l2, 1e-4);
                EXPECT_GE(to_float.rel_l2, 1e-4);
            } else {
                EXPECT_LE(to_float.rel_l2, 1e-5);
            }
        }
    }
}

// GegluFeedForward with per-channel int8 weights (W1t [2H, C] along its rows, W2 [H, N] along its columns, as
// the converter writes them): int8 arithmetic quantizes each row of x for W1, and each row of the GEGLU
// activations for W2. Whole (one block of hidden columns), against that formula in float64; in small
// weight chunks (several blocks, each quantizing its own activation columns), against the float model.
TEST(HandWritten, PerChannelInt8Geglu) {
    constexpr int T = 5, C = 32, H = 40, N = 24;
    Scratch scratch("onnxstream-quant-test");
    const std::string dir = scratch.path() + "/geglu";
    ::mkdir(dir.c_str(), 0755);
    std::mt19937 rng(13);
    std::uniform_int_distribution<int> qd(-127, 127);
    std::uniform_real_distribution<float> sd(0.002f, 0.02f), xd(-1.0f, 1.0f);
    std::vector<int8_t> q1(2 * H * C), q2(H * N);
    std::vector<float> s1(2 * H), s2(N), b1(2 * H), b2(N), x(T * C);
    for (auto &v : q1) v = static_cast<int8_t>(qd(rng));
    for (auto &v : q2) v = static_cast<int8_t>(qd(rng));
    for (auto *vec : {&s1, &s2}) for (auto &v : *vec) v = sd(rng);
    for (auto *vec : {&b1, &b2, &x}) for (auto &v : *vec) v = xd(rng);
    write_file(dir + "/w1.bin", q1.data(), q1.size());
    write_file(dir + "/w1_scales.bin", s1.data(), s1.size() * 4);
    write_file(dir + "/w2.bin", q2.data(), q2.size());
    write_file(dir + "/w2_scales.bin", s2.data(), s2.size() * 4);
    write_file(dir + "/b1.bin", b1.data(), b1.size() * 4);
    write_file(dir + "/b2.bin", b2.data(), b2.size() * 4);
    const std::string txt = "ff:GegluFeedForward*input:x(5,32);w1.bin(int8[@w1_scales.bin,0]:80,32);"
                            "b1.bin(float32:80);w2.bin(int8[@w2_scales.bin,1]:40,24);b2.bin(float32:24)"
                            "*output:y(5,24)\n";
    write_file(dir + "/model.txt", txt.data(), txt.size());
    auto reference = [&](bool int8) {
        std::vector<float> y;
        for (int t = 0; t < T; ++t) {
            std::vector<double> xr(&x[t * C], &x[t * C] + C), a(H);
            if (int8) as_int8_sees(xr.data(), C);
            auto hidden = [&](int r) {
                double acc = b1[r];
                for (int k = 0; k < C; ++k) acc += xr[k] * double(float(q1[r * C + k]) * s1[r]);
                return static_cast<double>(static_cast<float>(acc));
            };
            for (int j = 0; j < H; ++j) {
                const double g = hidden(H + j);
                a[j] = hidden(j) * 0.5 * g * (1.0 + std::erf(g / std::sqrt(2.0)));
            }
            if (int8) as_int8_sees(a.data(), H);
            for (int n = 0; n < N; ++n) {
                double acc = b2[n];
                for (int j = 0; j < H; ++j) acc += a[j] * double(float(q2[j * N + n]) * s2[n]);
                y.push_back(static_cast<float>(acc));
            }
        }
        return y;
    };
    const std::vector<float> want = reference(false), want_int8 = reference(true);
    const Compare apart = compare(want_int8.data(), want.data(), want.size());
    const bool xnnpack_2024 = std::strstr(onnxstream_kernel_library(), "2024") != nullptr;
    for (uint64_t chunk : {uint64_t(UINT64_MAX), uint64_t(320)}) {
        SCOPED_TRACE("weight_chunk_bytes " + std::to_string(chunk));
        uint64_t int8_ops = 0;
        std::vector<float> got = run_one(dir, "x", {T, C}, x, "y", chunk, 0, &int8_ops);
        ASSERT_EQ(got.size(), want.size());
        EXPECT_EQ(int8_ops, xnnpack_2024 ? 1u : 0u);
        Compare to_float = compare(got.data(), want.data(), got.size());
        Compare to_int8 = compare(got.data(), want_int8.data(), got.size());
        std::printf("geglu chunk %llu: rel L2 vs float %.3g, vs int8 formula %.3g (formula vs float %.3g)\n",
                    static_cast<unsigned long long>(chunk), to_float.rel_l2, to_int8.rel_l2, apart.rel_l2);
        if (!xnnpack_2024) {
            EXPECT_LE(to_float.rel_l2, 1e-5);
        } else if (chunk == UINT64_MAX) {
            EXPECT_LE(to_int8.rel_l2, 1e-4);
            EXPECT_GE(to_float.rel_l2, 1e-4); // it did quantize the activations
        } else {
            EXPECT_LE(to_float.rel_l2, apart.rel_l2 * 2);
        }
    }
}

TEST(HandWritten, ScalesFileOfTheWrongSize) {
    Scratch scratch("onnxstream-quant-test");
    PerChannelFolder f(scratch);
    std::vector<float> short_scales(47, 0.01f);
    write_file(f.dir + "/w1_scales.bin", short_scales.data(), short_scales.size() * 4);
    Handle h;
    EXPECT_EQ(load(h, f.dir), ONNXSTREAM_ERR_INVALID_MODEL);
    std::string msg = onnxstream_model_last_error(h.m);
    EXPECT_NE(msg.find("w1_scales.bin has 188 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("48 float32 scales along axis 1"), std::string::npos) << msg;
}

TEST(HandWritten, MissingScalesFile) {
    Scratch scratch("onnxstream-quant-test");
    PerChannelFolder f(scratch);
    ASSERT_EQ(std::remove((f.dir + "/w2_scales.bin").c_str()), 0);
    Handle h;
    EXPECT_EQ(load(h, f.dir), ONNXSTREAM_ERR_IO);
    std::string msg = onnxstream_model_last_error(h.m);
    EXPECT_NE(msg.find("w2_scales.bin"), std::string::npos) << msg;
}

TEST(HandWritten, BadScaleValue) {
    Scratch scratch("onnxstream-quant-test");
    PerChannelFolder f(scratch);
    f.s1[7] = -1.0f;
    write_file(f.dir + "/w1_scales.bin", f.s1.data(), f.s1.size() * 4);
    Handle h;
    EXPECT_EQ(load(h, f.dir), ONNXSTREAM_ERR_INVALID_MODEL);
    std::string msg = onnxstream_model_last_error(h.m);
    EXPECT_NE(msg.find("scale 7 is -1"), std::string::npos) << msg;
}

} // namespace
