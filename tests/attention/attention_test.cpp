// ScaledDotProductAttention against gen_attention.py's float64 reference, with every algorithm forced
// through ModelOptions.run, plus models that must be rejected with INVALID_MODEL.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "exec/model.h"
#include "tensor/half.h"
#include "util/npy.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace onnxstream;

namespace {

std::string cases_dir() {
    const char *env = std::getenv("ONNXSTREAM_ATTENTION_CASES");
    return env ? env : "";
}

struct CaseMeta {
    bool bad = false;
    std::string status;
    double tol = 0;
};

CaseMeta read_meta(const fs::path &dir) {
    std::ifstream in(dir / "meta.txt");
    std::string key, value;
    in >> key >> value;
    CaseMeta m;
    if (key == "bad") {
        m.bad = true;
        m.status = value;
    } else {
        m.tol = std::stod(value);
    }
    return m;
}

std::vector<fs::path> case_dirs() {
    std::vector<fs::path> out;
    for (const auto &e : fs::directory_iterator(cases_dir()))
        if (e.is_directory()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<double> as_doubles(onnxstream_dtype_t dtype, const void *data, size_t n) {
    std::vector<double> out(n);
    for (size_t i = 0; i < n; ++i)
        out[i] = dtype == ONNXSTREAM_DTYPE_FLOAT16 ? half_to_float(static_cast<const uint16_t *>(data)[i])
                                                   : static_cast<const float *>(data)[i];
    return out;
}

// Load the case, push its inputs and run; returns the output.
Tensor run_case(const fs::path &dir, const ModelOptions &options) {
    Model model(options);
    model.load_file(dir.string());
    for (const auto &e : fs::directory_iterator(dir)) {
        std::string f = e.path().filename().string();
        if (f.rfind("in_", 0) != 0) continue;
        tools::NpyArray a = tools::read_npy(e.path().string());
        model.push_input(f.substr(3, f.size() - 7), static_cast<DType>(a.dtype), a.shape, a.data.data(),
                         a.data.size());
    }
    model.run({});
    return model.outputs().at(0);
}

struct Config {
    const char *name;
    AttentionAlgo algo;
    int slices;
    size_t block_bytes;
    size_t threads;
};

const Config kConfigs[] = {
    {"full", AttentionAlgo::Full, 0, 0, 2},
    {"sliced2", AttentionAlgo::Sliced, 2, 0, 2},
    {"sliced3", AttentionAlgo::Sliced, 3, 0, 2},
    {"sliced_budget", AttentionAlgo::Sliced, 0, 8 << 10, 2},
    {"flash", AttentionAlgo::Flash, 0, 0, 2},
    {"flash_tiny_tiles", AttentionAlgo::Flash, 0, 2 << 10, 2},
    {"flash_1thread", AttentionAlgo::Flash, 0, 0, 1},
    {"auto", AttentionAlgo::Auto, 0, 0, 2},
    {"auto_budget", AttentionAlgo::Auto, 0, 16 << 10, 2},
};

class AttentionTest : public ::testing::TestWithParam<Config> {};

TEST_P(AttentionTest, MatchesReference) {
    const Config &cfg = GetParam();
    ModelOptions options;
    options.threads = cfg.threads;
    options.run.attention = cfg.algo;
    options.run.attention_slices = cfg.slices;
    options.run.attention_block_bytes = cfg.block_bytes;
    size_t checked = 0;
    double worst_f32 = 0, worst_f16 = 0;
    for (const fs::path &dir : case_dirs()) {
        CaseMeta meta = read_meta(dir);
        if (meta.bad) continue;
        SCOPED_TRACE(dir.filename().string());
        Tensor y;
        try {
            y = run_case(dir, options);
        } catch (const Error &e) {
            ADD_FAILURE() << "error: " << e.what();
            continue;
        }
        tools::NpyArray ref = tools::read_npy((dir / "expected.npy").string());
        ASSERT_EQ(y.shape(), Shape(ref.shape.begin(), ref.shape.end()));
        size_t n = static_cast<size_t>(y.numel());
        std::vector<double> got = as_doubles(static_cast<onnxstream_dtype_t>(y.dtype()), y.raw(), n);
        std::vector<double> want = as_doubles(ref.dtype, ref.data.data(), n);
        double max_ref = 1e-6, max_err = 0;
        size_t worst = 0;
        for (size_t i = 0; i < n; ++i) {
            max_ref = std::max(max_ref, std::fabs(want[i]));
            double e = std::isnan(got[i]) ? INFINITY : std::fabs(got[i] - want[i]);
            if (e > max_err) max_err = e, worst = i;
        }
        worst_f32 = std::max(worst_f32, y.dtype() == DType::F32 ? max_err / max_ref : 0.0);
        worst_f16 = std::max(worst_f16, y.dtype() == DType::F16 ? max_err / max_ref : 0.0);
        EXPECT_LE(max_err / max_ref, meta.tol)
            << "at flat index " << worst << ": got " << got[worst] << ", expected " << want[worst];
        ++checked;
    }
    EXPECT_GT(checked, 10u) << "no cases in " << cases_dir();
    std::printf("%s: %zu cases, worst max|error| / max|expected|: f32 %.2g, f16 %.2g\n", cfg.name, checked,
                worst_f32, worst_f16);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AttentionTest, ::testing::ValuesIn(kConfigs),
                         [](const ::testing::TestParamInfo<Config> &i) { return std::string(i.param.name); });

TEST(AttentionBadModels, RejectedWithInvalidModel) {
    size_t checked = 0;
    for (const fs::path &dir : case_dirs()) {
        CaseMeta meta = read_meta(dir);
        if (!meta.bad) continue;
        SCOPED_TRACE(dir.filename().string());
        ModelOptions options;
        options.threads = 1;
        try {
            run_case(dir, options);
            ADD_FAILURE() << "the model was accepted";
        } catch (const Error &e) {
            EXPECT_STREQ(status_name(e.status()), ("ONNXSTREAM_ERR_" + meta.status).c_str()) << e.what();
            EXPECT_NE(std::string(e.what()).find("ScaledDotProductAttention"), std::string::npos) << e.what();
        }
        ++checked;
    }
    EXPECT_GT(checked, 3u);
}

} // namespace
