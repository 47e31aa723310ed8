#include "ops/harness.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "onnxstream.h"
#include "tensor/half.h"
#include "util/npy.h"
#include "xnnpack/weights_cache.h"

namespace fs = std::filesystem;

namespace onnxstream::optest {

namespace {

std::string cases_root() {
    const char *env = std::getenv("ONNXSTREAM_OP_CASES_DIR");
    if (env && *env) return env;
#ifdef ONNXSTREAM_OP_CASES_DIR_DEFAULT
    return ONNXSTREAM_OP_CASES_DIR_DEFAULT;
#else
    return "";
#endif
}

std::string read_text(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// case.json is written by gen_op_cases.py with json.dump, so a flat key lookup is enough: the keys read here
// ("op", "atol", "rtol", "rel_l2") occur once, at the top level.
std::string json_raw(const std::string &json, const std::string &key) {
    size_t k = json.find("\"" + key + "\":");
    if (k == std::string::npos) return "";
    size_t start = json.find_first_not_of(" \n", k + key.size() + 3);
    if (start == std::string::npos) return "";
    if (json[start] == '"') return json.substr(start + 1, json.find('"', start + 1) - start - 1);
    return json.substr(start, json.find_first_of(",}\n", start) - start);
}

std::optional<double> json_number(const std::string &json, const std::string &key) {
    std::string raw = json_raw(json, key);
    if (raw.empty() || raw == "null") return std::nullopt;
    return std::strtod(raw.c_str(), nullptr);
}

// Indexed files "<prefix><k>.npy" in a case folder, by k.
std::map<int, fs::path> indexed_files(const fs::path &dir, const std::string &prefix) {
    std::map<int, fs::path> out;
    for (const auto &e : fs::directory_iterator(dir)) {
        std::string f = e.path().filename().string();
        if (f.size() <= prefix.size() + 4 || f.compare(0, prefix.size(), prefix) != 0 ||
            f.compare(f.size() - 4, 4, ".npy") != 0)
            continue;
        std::string digits = f.substr(prefix.size(), f.size() - prefix.size() - 4);
        if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
        out[std::stoi(digits)] = e.path();
    }
    return out;
}

std::string shape_str(const int64_t *shape, size_t rank) {
    std::string s = "(";
    for (size_t i = 0; i < rank; ++i) s += (i ? "," : "") + std::to_string(shape[i]);
    return s + ")";
}

std::string index_str(size_t flat, const std::vector<int64_t> &shape) {
    std::vector<int64_t> idx(shape.size());
    for (size_t d = shape.size(); d-- > 0;) {
        idx[d] = shape[d] ? static_cast<int64_t>(flat % static_cast<size_t>(shape[d])) : 0;
        if (shape[d]) flat /= static_cast<size_t>(shape[d]);
    }
    return shape_str(idx.data(), idx.size());
}

std::string fmt_g(double v, int digits = 3) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    return buf;
}

bool is_float(onnxstream_dtype_t t) {
    return t == ONNXSTREAM_DTYPE_FLOAT32 || t == ONNXSTREAM_DTYPE_FLOAT16 || t == ONNXSTREAM_DTYPE_FLOAT64;
}

std::vector<double> to_doubles(onnxstream_dtype_t t, const void *data, size_t n) {
    std::vector<double> out(n);
    if (t == ONNXSTREAM_DTYPE_FLOAT32) {
        const float *p = static_cast<const float *>(data);
        for (size_t i = 0; i < n; ++i) out[i] = p[i];
    } else if (t == ONNXSTREAM_DTYPE_FLOAT64) {
        const double *p = static_cast<const double *>(data);
        for (size_t i = 0; i < n; ++i) out[i] = p[i];
    } else {
        const uint16_t *p = static_cast<const uint16_t *>(data);
        for (size_t i = 0; i < n; ++i) out[i] = half_to_float(p[i]);
    }
    return out;
}

// Integers are compared exactly, in their own type: int64 values above 2^53 do not survive a double.
int64_t int_at(onnxstream_dtype_t t, const void *data, size_t i) {
    switch (t) {
    case ONNXSTREAM_DTYPE_INT64: return static_cast<const int64_t *>(data)[i];
    case ONNXSTREAM_DTYPE_INT32: return static_cast<const int32_t *>(data)[i];
    case ONNXSTREAM_DTYPE_INT8: return static_cast<const int8_t *>(data)[i];
    case ONNXSTREAM_DTYPE_INT16: return static_cast<const int16_t *>(data)[i];
    case ONNXSTREAM_DTYPE_UINT16: return static_cast<const uint16_t *>(data)[i];
    case ONNXSTREAM_DTYPE_UINT32: return static_cast<const uint32_t *>(data)[i];
    case ONNXSTREAM_DTYPE_UINT64: return static_cast<int64_t>(static_cast<const uint64_t *>(data)[i]); // bits
    default: return static_cast<const uint8_t *>(data)[i]; // uint8, bool
    }
}

struct Tolerance {
    double atol, rtol;
};

struct CaseInfo {
    std::string op;
    std::optional<double> atol, rtol;
    std::optional<double> rel_l2; // also: ||got - expected|| / ||expected|| at most this (float outputs)
    std::optional<double> chunk_bytes; // also run with weights streamed in row chunks of this many bytes
};

Tolerance tolerance_for(const CaseInfo &info, onnxstream_dtype_t t) {
    Tolerance tol{0, 0};
    if (t == ONNXSTREAM_DTYPE_FLOAT32) tol = {1e-4, 1e-4};
    if (t == ONNXSTREAM_DTYPE_FLOAT16) tol = {1e-2, 1e-2};
    if (t == ONNXSTREAM_DTYPE_FLOAT64) tol = {1e-12, 1e-12};
    if (!is_float(t)) return tol; // integers and bool are exact whatever the case says
    if (info.atol) tol.atol = *info.atol;
    if (info.rtol) tol.rtol = *info.rtol;
    return tol;
}

const char *provider_name(int32_t p) {
    switch (p) {
    case ONNXSTREAM_PROVIDER_PREFETCH: return "prefetch";
    case ONNXSTREAM_PROVIDER_MMAP: return "mmap";
    case ONNXSTREAM_PROVIDER_NOCACHE: return "nocache";
    case ONNXSTREAM_PROVIDER_RAM: return "ram";
    default: return "default provider";
    }
}

struct ModelHandle {
    onnxstream_model_t *model = nullptr;
    ~ModelHandle() { onnxstream_model_destroy(model); }
};

// Compares one output and prints its error line; a mismatch is a gtest failure naming the worst element.
void compare_output(const std::string &label, const CaseInfo &info, const onnxstream_tensor_view_t &got,
                    const tools::NpyArray &ref) {
    if (got.dtype != ref.dtype) {
        ADD_FAILURE() << label << ": dtype is " << onnxstream_dtype_name(got.dtype) << " but ONNX Runtime gives "
                      << onnxstream_dtype_name(ref.dtype);
        return;
    }
    std::vector<int64_t> got_shape(got.shape, got.shape + got.rank);
    if (got_shape != ref.shape) {
        ADD_FAILURE() << label << ": shape is " << shape_str(got.shape, got.rank) << " but ONNX Runtime gives "
                      << shape_str(ref.shape.data(), ref.shape.size());
        return;
    }
    size_t n = 1;
    for (int64_t d : ref.shape) n *= static_cast<size_t>(d);
    if (got.byte_size != ref.data.size() || (n && !got.data)) {
        ADD_FAILURE() << label << ": output holds " << got.byte_size << " bytes, expected " << ref.data.size();
        return;
    }
    Tolerance tol = tolerance_for(info, ref.dtype);
    size_t bad = 0, worst = 0;
    bool nan_mismatch = false; // NaN against a number: reported as a NaN max error
    double max_abs = 0, worst_excess = -1;
    double diff_sq = 0, ref_sq = 0; // for the relative L2 error
    std::string worst_got, worst_ref;
    if (is_float(ref.dtype)) {
        std::vector<double> g = to_doubles(got.dtype, got.data, n), r = to_doubles(ref.dtype, ref.data.data(), n);
        for (size_t i = 0; i < n; ++i) {
            double excess;
            if (std::isnan(r[i]) || std::isnan(g[i])) {
                bool both = std::isnan(r[i]) && std::isnan(g[i]);
                nan_mismatch |= !both;
                excess = both ? -1 : std::numeric_limits<double>::infinity();
            } else if (g[i] == r[i]) { // also equal infinities, whose difference is NaN
                excess = -1;
            } else {
                double err = std::fabs(g[i] - r[i]);
                max_abs = std::max(max_abs, err);
                diff_sq += err * err;
                excess = err - (tol.atol + tol.rtol * std::fabs(r[i]));
            }
            if (std::isfinite(r[i])) ref_sq += r[i] * r[i];
            if (excess > 0) ++bad;
            if (excess > worst_excess) {
                worst_excess = excess;
                worst = i;
            }
        }
        if (nan_mismatch) max_abs = std::numeric_limits<double>::quiet_NaN();
        if (n) {
            worst_got = fmt_g(g[worst], 9);
            worst_ref = fmt_g(r[worst], 9);
        }
    } else {
        for (size_t i = 0; i < n; ++i) {
            int64_t g = int_at(got.dtype, got.data, i), r = int_at(ref.dtype, ref.data.data(), i);
            if (g == r) continue;
            double err = std::fabs(static_cast<double>(g) - static_cast<double>(r));
            if (err > worst_excess) {
                worst_excess = err;
                worst = i;
            }
            max_abs = std::max(max_abs, err);
            ++bad;
        }
        if (n) {
            worst_got = std::to_string(int_at(got.dtype, got.data, worst));
            worst_ref = std::to_string(int_at(ref.dtype, ref.data.data(), worst));
        }
    }
    std::string rel_text;
    bool rel_bad = false;
    if (info.rel_l2 && is_float(ref.dtype)) {
        const double rel = nan_mismatch ? std::numeric_limits<double>::quiet_NaN()
                           : ref_sq > 0  ? std::sqrt(diff_sq / ref_sq)
                           : diff_sq > 0 ? std::numeric_limits<double>::infinity()
                                         : 0.0;
        rel_bad = !(rel <= *info.rel_l2);
        rel_text = ", rel L2 " + fmt_g(rel) + " (max " + fmt_g(*info.rel_l2) + ")";
    }
    std::printf("[   case   ] %s %s%s: max abs error %.3g (atol %g, rtol %g)%s%s\n", label.c_str(),
                onnxstream_dtype_name(ref.dtype), shape_str(ref.shape.data(), ref.shape.size()).c_str(), max_abs,
                tol.atol, tol.rtol, rel_text.c_str(), bad || rel_bad ? "  MISMATCH" : "");
    std::fflush(stdout);
    if (bad)
        ADD_FAILURE() << label << ": " << bad << " of " << n << " elements differ from ONNX Runtime; worst at "
                      << index_str(worst, ref.shape) << ": got " << worst_got << ", expected " << worst_ref
                      << "; max abs error " << fmt_g(max_abs) << " (atol " << tol.atol << ", rtol " << tol.rtol
                      << ")";
    if (rel_bad) ADD_FAILURE() << label << ": relative L2 error" << rel_text << " is over the case's limit";
}

using NpyByIndex = std::map<int, tools::NpyArray>;

bool expect_fp16_arithmetic() {
    const char *v = std::getenv("ONNXSTREAM_EXPECT_FP16_ARITHMETIC");
    return v && std::string(v) == "1";
}

uint64_t g_fp16_ops = 0;

class Fp16Environment : public ::testing::Environment {
public:
    void TearDown() override {
        if (expect_fp16_arithmetic()) {
            EXPECT_GT(g_fp16_ops, 0u) << "ONNXSTREAM_EXPECT_FP16_ARITHMETIC=1 but no float16 case of this test "
                                         "program computed an op in fp16";
        }
    }
};
// Registered from this file's static initialisation: every family test program links the harness.
::testing::Environment *const g_fp16_environment = ::testing::AddGlobalTestEnvironment(new Fp16Environment);

// Packed weights mapped from the packed-weights file by the cases of this program that checked them: on
// builds with XNNPACK's weights cache, some must have been, or the checks only saw operators that keep none.
uint64_t g_packed_mapped = 0, g_packed_cases = 0;

class PackedWeightsEnvironment : public ::testing::Environment {
public:
    void TearDown() override {
        if (xnn::has_weights_cache() && g_packed_cases > 0) {
            EXPECT_GT(g_packed_mapped, 0u) << "no case of this test program mapped packed weights";
        }
    }
};
::testing::Environment *const g_packed_environment =
    ::testing::AddGlobalTestEnvironment(new PackedWeightsEnvironment);

void run_with_packed_weights(const OpCase &c, const CaseInfo &info, const std::map<int, tools::NpyArray> &inputs,
                             const std::map<int, tools::NpyArray> &expected);

// The tolerance of runs whose ops computed in float16 (reasons in run_case).
CaseInfo fp16_tolerance(const CaseInfo &info) {
    CaseInfo loose = info;
    loose.atol = std::max(info.atol.value_or(1e-2), 0.15);
    loose.rtol = std::max(info.rtol.value_or(1e-2), 2e-2);
    return loose;
}

// arithmetic / chunk_bytes: the model options of the fp16-arithmetic and chunked runs (AUTO / 0: defaults).
// runs > 1 runs the model that many times and checks the last run's outputs: with the RAM provider, later
// runs use the operators the first one prepared and kept.
void run_with_provider(const OpCase &c, const CaseInfo &info, int32_t provider, const NpyByIndex &inputs,
                       const NpyByIndex &expected, int32_t arithmetic = ONNXSTREAM_ARITHMETIC_AUTO,
                       uint64_t chunk_bytes = 0, int runs = 1, const std::string &cache_path = "",
                       onnxstream_run_stats_t *stats_out = nullptr) {
    std::string label = c.family + "/" + c.name + " (" + info.op + ", " + provider_name(provider);
    if (arithmetic == ONNXSTREAM_ARITHMETIC_FP16) label += ", fp16 arithmetic";
    if (chunk_bytes) label += ", weights in chunks of " + std::to_string(chunk_bytes) + " bytes";
    if (runs > 1) label += ", run " + std::to_string(runs);
    if (!cache_path.empty()) label += ", weights cache " + fs::path(cache_path).filename().string();
    label += ")";
    onnxstream_model_options_t options;
    onnxstream_model_options_init(&options);
    options.threads = 2;
    options.provider = provider;
    options.arithmetic = arithmetic;
    options.weight_chunk_bytes = chunk_bytes;
    if (!cache_path.empty()) options.cache_path = cache_path.c_str();
    ModelHandle h;
    onnxstream_status_t st = onnxstream_model_create(&options, &h.model);
    if (st != ONNXSTREAM_OK) FAIL() << label << ": onnxstream_model_create: " << onnxstream_last_error();
    auto api_error = [&](const std::string &call, onnxstream_status_t s) {
        return label + ": " + call + " failed with " + onnxstream_status_name(s) + ": " +
               onnxstream_model_last_error(h.model);
    };
    st = onnxstream_model_load(h.model, c.dir.c_str());
    if (st != ONNXSTREAM_OK) FAIL() << api_error("onnxstream_model_load", st);
    for (const auto &[i, a] : inputs) {
        std::string name = "in_" + std::to_string(i);
        st = onnxstream_model_push_tensor(h.model, name.c_str(), a.dtype, a.shape.size(), a.shape.data(),
                                          a.data.data(), a.data.size());
        if (st != ONNXSTREAM_OK) FAIL() << api_error("onnxstream_model_push_tensor(" + name + ")", st);
    }
    for (int run = 0; run < runs; ++run) {
        st = onnxstream_model_run(h.model);
        if (st != ONNXSTREAM_OK) FAIL() << api_error("onnxstream_model_run", st);
    }
    onnxstream_run_stats_t rs;
    std::memset(&rs, 0, sizeof rs);
    rs.struct_size = sizeof rs;
    st = onnxstream_model_run_stats(h.model, &rs);
    if (st != ONNXSTREAM_OK) FAIL() << api_error("onnxstream_model_run_stats", st);
    if (stats_out) *stats_out = rs;
    // auto computes float16 activations in fp16 on CPUs with float16 arithmetic (ARMv8.2+): those runs are
    // held to the fp16 tolerance (see run_case), float32 ones keep the case's own.
    const CaseInfo &tol = rs.fp16_ops > 0 ? fp16_tolerance(info) : info;
    if (arithmetic == ONNXSTREAM_ARITHMETIC_FP16) {
        std::printf("[   fp16   ] %s: %llu ops in fp16, %llu fell back to fp32\n", label.c_str(),
                    static_cast<unsigned long long>(rs.fp16_ops), static_cast<unsigned long long>(rs.fp16_fallbacks));
        // ONNXSTREAM_EXPECT_FP16_ARITHMETIC=1 (CI on an emulated ARMv8.2 CPU): nothing may fall back, and the
        // f16 kernels must really run somewhere in the family (Fp16Environment), or these cases would check
        // the float32 path a second time. Per case 0 ops is normal: forms the fp16 path does not cover
        // (ConvTranspose, MatMul of two activations, Gemm with transA, ...) compute in float32 by design.
        if (expect_fp16_arithmetic()) {
            EXPECT_EQ(rs.fp16_fallbacks, 0u) << label;
        }
        g_fp16_ops += rs.fp16_ops;
    }
    EXPECT_EQ(onnxstream_model_output_count(h.model), expected.size())
        << label << ": the model has a different number of outputs than ONNX Runtime produced";
    for (const auto &[k, ref] : expected) {
        std::string name = "out_" + std::to_string(k);
        onnxstream_tensor_view_t view;
        std::memset(&view, 0, sizeof view);
        view.struct_size = sizeof view;
        st = onnxstream_model_get_output_by_name(h.model, name.c_str(), &view);
        if (st != ONNXSTREAM_OK) {
            ADD_FAILURE() << api_error("onnxstream_model_get_output_by_name(" + name + ")", st);
            continue;
        }
        compare_output(label + " " + name, tol, view, ref);
    }
}

void run_with_packed_weights(const OpCase &c, const CaseInfo &info, const NpyByIndex &inputs,
                             const NpyByIndex &expected) {
    char tmpl[] = "/tmp/onnxstream_packed_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr) << "mkdtemp: " << std::strerror(errno);
    const std::string dir = tmpl, cache = dir + "/case.oswc";
    const uint64_t chunk = info.chunk_bytes ? static_cast<uint64_t>(*info.chunk_bytes) : 0;
    onnxstream_run_stats_t first{}, second{};
    run_with_provider(c, info, ONNXSTREAM_PROVIDER_AUTO, inputs, expected, ONNXSTREAM_ARITHMETIC_FP32, chunk, 1,
                      cache, &first);
    if (!::testing::Test::HasFailure())
        run_with_provider(c, info, ONNXSTREAM_PROVIDER_AUTO, inputs, expected, ONNXSTREAM_ARITHMETIC_FP32, chunk, 1,
                          cache, &second);
    const bool file = fs::exists(cache + ".xnnpack");
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (::testing::Test::HasFailure()) return;
    const std::string label = c.family + "/" + c.name + " packed weights";
    if (xnn::has_weights_cache()) {
        EXPECT_EQ(second.packed_weights_mapped, first.packed_weights_stored) << label;
        EXPECT_EQ(second.packed_weights_stored, 0u) << label;
        EXPECT_EQ(file, first.packed_weights_stored > 0) << label;
        g_packed_mapped += second.packed_weights_mapped;
        ++g_packed_cases;
    } else {
        EXPECT_EQ(first.packed_weights_stored + second.packed_weights_mapped, 0u) << label;
        EXPECT_FALSE(file) << label;
    }
}

} // namespace

std::vector<OpCase> list_cases(const std::string &family) {
    std::vector<OpCase> out;
    std::error_code ec;
    fs::path dir = fs::path(cases_root()) / family;
    if (cases_root().empty() || !fs::is_directory(dir, ec)) return out;
    for (const auto &e : fs::directory_iterator(dir, ec))
        if (e.is_directory(ec)) out.push_back({family, e.path().filename().string(), e.path().string()});
    std::sort(out.begin(), out.end(), [](const OpCase &a, const OpCase &b) { return a.name < b.name; });
    return out;
}

void check_family(const std::string &family) {
    std::string root = cases_root();
    ASSERT_FALSE(root.empty()) << "set ONNXSTREAM_OP_CASES_DIR to the generated cases folder (meson test does)";
    fs::path dir = fs::path(root) / family;
    fs::path err = dir / "generation_error.txt";
    if (fs::exists(err)) FAIL() << read_text(err);
    ASSERT_TRUE(fs::is_directory(dir)) << dir.string() << " does not exist: write tests/tools/op_cases/" << family
                                       << ".py (and reconfigure if the file is new)";
    EXPECT_FALSE(list_cases(family).empty()) << "tests/tools/op_cases/" << family << ".py defines no cases";
}

void run_case(const OpCase &c) {
    fs::path dir(c.dir);
    if (fs::exists(dir / "error.txt")) FAIL() << read_text(dir / "error.txt");
    CaseInfo info;
    std::string json = read_text(dir / "case.json");
    ASSERT_FALSE(json.empty()) << c.dir << "/case.json is missing: regenerate the cases";
    info.op = json_raw(json, "op");
    info.atol = json_number(json, "atol");
    info.rtol = json_number(json, "rtol");
    info.rel_l2 = json_number(json, "rel_l2");
    info.chunk_bytes = json_number(json, "chunk_bytes");

    NpyByIndex inputs, expected;
    try {
        for (const auto &[i, path] : indexed_files(dir, "input_")) inputs[i] = tools::read_npy(path.string());
        for (const auto &[k, path] : indexed_files(dir, "expected_")) expected[k] = tools::read_npy(path.string());
    } catch (const std::exception &e) {
        FAIL() << e.what();
    }
    ASSERT_FALSE(expected.empty()) << c.dir << " has no expected_<k>.npy: ort_reference.js did not run on it";

    // Every case also runs with mmap'ed weights: kernels then read the weight bytes in place, with no
    // padding after them, which a copy into our own allocation would hide. A case that already failed with
    // the default provider would only repeat its message.
    for (int32_t provider : {ONNXSTREAM_PROVIDER_PREFETCH, ONNXSTREAM_PROVIDER_MMAP}) {
        run_with_provider(c, info, provider, inputs, expected);
        if (::testing::Test::HasFailure()) break;
    }
    // A case that names a chunk size (Case(chunk_bytes=...)) runs again with its weights streamed in row chunks,
    // held to its own tolerance (chunks of K add float32 partial products: a different order, same precision).
    if (info.chunk_bytes && !::testing::Test::HasFailure())
        run_with_provider(c, info, ONNXSTREAM_PROVIDER_PREFETCH, inputs, expected, ONNXSTREAM_ARITHMETIC_AUTO,
                          static_cast<uint64_t>(*info.chunk_bytes));
    // The families whose operators the RAM provider keeps from run to run (whole weights, and streamed
    // ones chunk by chunk): the second run computes with what the first one packed.
    if ((c.family == "conv" || c.family == "matmul_gemm") && !::testing::Test::HasFailure()) {
        run_with_provider(c, info, ONNXSTREAM_PROVIDER_RAM, inputs, expected, ONNXSTREAM_ARITHMETIC_AUTO, 0, 2);
        if (info.chunk_bytes && !::testing::Test::HasFailure())
            run_with_provider(c, info, ONNXSTREAM_PROVIDER_RAM, inputs, expected, ONNXSTREAM_ARITHMETIC_AUTO,
                              static_cast<uint64_t>(*info.chunk_bytes), 2);
    }
    // With the persistent weights cache, XNNPACK's packed weights are kept beside it (XNNPACK 2024 builds):
    // the first model writes them, a second one maps every one of them instead of packing, and both
    // match ONNX Runtime. Builds without XNNPACK's weights cache keep none, which one case per program
    // checks (the rest would only repeat it, at a cost under emulation).
    static bool checked_without_cache = false;
    if ((c.family == "conv" || c.family == "matmul_gemm") && !::testing::Test::HasFailure() &&
        (xnn::has_weights_cache() || !checked_without_cache)) {
        checked_without_cache = true;
        run_with_packed_weights(c, info, inputs, expected);
    }
    // float16 cases of the families with float16 arithmetic (Conv, MatMul/Gemm with a weight) also run with
    // it forced, whole and with every weight over 256 bytes streamed in chunks, against the same ONNX
    // Runtime outputs. ORT rounds once (float32 accumulation); XNNPACK's f16 kernels round every partial sum
    // to float16 (on this x86 too), an error that grows like sqrt(K) ulps of the partial sums: atol 0.15,
    // rtol 2e-2 covers K = 288 (conv2d_f16_wide, |y| < 8: max error 0.117) and still catches layout,
    // transposition or chunking mistakes, whose errors are of the order of the values themselves.
    bool f16 = false;
    for (const auto &[i, a] : inputs) f16 = f16 || a.dtype == ONNXSTREAM_DTYPE_FLOAT16;
    if (f16 && (c.family == "conv" || c.family == "matmul_gemm") && !::testing::Test::HasFailure()) {
        const CaseInfo loose = fp16_tolerance(info);
        run_with_provider(c, loose, ONNXSTREAM_PROVIDER_PREFETCH, inputs, expected, ONNXSTREAM_ARITHMETIC_FP16);
        run_with_provider(c, loose, ONNXSTREAM_PROVIDER_MMAP, inputs, expected, ONNXSTREAM_ARITHMETIC_FP16, 256);
    }
}

} // namespace onnxstream::optest
