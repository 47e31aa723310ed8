// Stable Diffusion 1.5 architecture (small variants, random weights) through onnxstream-convert, public C API
// only: convert each of gen_sd.py's text encoder, UNet and VAE decoder with float32 and float16 weights, check
// the model.txt keeps OnnxStream's SD tensor names and has its shape chains folded, run it on gen_sd.py's
// inputs and compare with ONNX Runtime's outputs on the same ONNX file (float32 weights: relative L2 error
// <= 1e-4; float16 weights: <= 1e-2). The converter's node counts before/after simplification are printed.
//
// Environment: ONNXSTREAM_SD_CASES (gen_sd.py's --out).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxstream.h"
#include "tools/npy.h"

namespace {

using onnxstream::tools::NpyArray;
using onnxstream::tools::read_npy;

std::string case_dir(const std::string &name) {
    const char *v = std::getenv("ONNXSTREAM_SD_CASES");
    return std::string(v ? v : "") + "/sd/" + name;
}

bool exists(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

std::string read_text(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::string> lines_of(const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(line);
    return out;
}

// Number of model.txt lines per op type.
std::map<std::string, size_t> op_counts(const std::string &model_txt) {
    std::map<std::string, size_t> n;
    for (const auto &line : lines_of(model_txt)) {
        std::string head = line.substr(0, line.find('*'));
        ++n[head.substr(head.rfind(':') + 1)];
    }
    return n;
}

class Scratch {
public:
    Scratch() {
        const char *tmp = std::getenv("TMPDIR");
        std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/onnxstream-sd-test-XXXXXX";
        path_ = ::mkdtemp(templ.data()) ? templ : "";
    }
    ~Scratch() {
        if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
    }
    std::string out() const { return path_ + "/out"; }

private:
    std::string path_;
};

struct Conversion {
    onnxstream_status_t status = ONNXSTREAM_OK;
    std::string message, report;
    std::vector<std::string> warnings;
};

void collect(void *user_data, onnxstream_log_level_t level, const char *message) {
    auto *c = static_cast<Conversion *>(user_data);
    if (level >= ONNXSTREAM_LOG_WARNING)
        c->warnings.push_back(message);
    else
        c->report += message;
}

Conversion convert(const std::string &onnx, const std::string &out, bool fp16) {
    Conversion c;
    const char *none[] = {nullptr};
    onnxstream_convert_options_t o;
    onnxstream_convert_options_init(&o);
    o.fp16 = fp16 ? 1 : 0;
    o.keep_fp32 = none;
    o.input_shapes = none;
    o.report_fn = collect;
    o.report_user_data = &c;
    c.status = onnxstream_convert_onnx(onnx.c_str(), out.c_str(), &o);
    if (c.status != ONNXSTREAM_OK) c.message = onnxstream_last_error();
    return c;
}

// names.txt: "input <i> <name>" / "output <k> <name>".
std::map<std::string, std::vector<std::string>> read_names(const std::string &dir) {
    std::map<std::string, std::vector<std::string>> names;
    for (const auto &line : lines_of(read_text(dir + "/names.txt"))) {
        std::istringstream in(line);
        std::string kind, name;
        size_t index = 0;
        in >> kind >> index >> name;
        auto &v = names[kind];
        if (v.size() <= index) v.resize(index + 1);
        v[index] = name;
    }
    return names;
}

struct Expectation {
    const char *model;
    // model.txt spellings (OnnxStream's escaping) of the inputs OnnxStream's own SD program pushes.
    std::vector<std::string> txt_inputs;
};

// Converts one model, checks the result, runs it and compares with ONNX Runtime.
void check_model(const Expectation &e, bool fp16) {
    std::string dir = case_dir(e.model);
    ASSERT_TRUE(exists(dir + "/model.onnx")) << "ONNXSTREAM_SD_CASES does not point at gen_sd.py's output (" << dir
                                             << ")";
    Scratch scratch;
    Conversion c = convert(dir + "/model.onnx", scratch.out(), fp16);
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    for (const auto &w : c.warnings) std::printf("converter warning: %s\n", w.c_str());
    // The converter's own summary line: "N nodes before simplification, M after".
    for (const auto &line : lines_of(c.report))
        if (line.find("nodes before") != std::string::npos) std::printf("%s%s:%s\n", e.model, fp16 ? " fp16" : "", line.c_str());

    std::string txt = read_text(scratch.out() + "/model.txt");
    auto ops = op_counts(txt);
    // Shape arithmetic and constants must be folded into weights: the exports are full of them.
    for (const char *folded : {"Shape", "Constant", "ConstantOfShape", "Identity", "Gather", "Equal", "Where"})
        if (std::string(folded) != "Gather" || std::string(e.model) != "text_encoder") // the embedding lookup stays
            EXPECT_EQ(ops[folded], 0u) << e.model << ": " << folded << " left in model.txt";
    for (const auto &name : e.txt_inputs)
        EXPECT_NE(txt.find(name + "("), std::string::npos) << "input " << name << " missing from model.txt";
    if (fp16) {
        // The bulk of SD's weights (convolution kernels, projection matrices) must stream as float16.
        size_t half = 0;
        for (const auto &line : lines_of(txt)) {
            std::string head = line.substr(0, line.find('*'));
            std::string type = head.substr(head.rfind(':') + 1);
            if (type != "Conv" && type != "MatMul" && type != "Gemm") continue;
            for (size_t at = line.find(".bin("); at != std::string::npos; at = line.find(".bin(", at + 1)) {
                std::string spec = line.substr(at + 5, line.find(')', at) - at - 5);
                bool matrix = spec.find(',') != std::string::npos;
                if (spec.rfind("float16:", 0) == 0) ++half;
                EXPECT_FALSE(matrix && spec.rfind("float32:", 0) == 0) << e.model << ": float32 weight in " << line;
            }
        }
        EXPECT_GT(half, 0u) << "no float16 weight written";
    }

    onnxstream_model_t *m = nullptr;
    ASSERT_EQ(onnxstream_model_create(nullptr, &m), ONNXSTREAM_OK);
    struct Destroy {
        onnxstream_model_t *m;
        ~Destroy() { onnxstream_model_destroy(m); }
    } destroy{m};
    ASSERT_EQ(onnxstream_model_load(m, scratch.out().c_str()), ONNXSTREAM_OK) << onnxstream_model_last_error(m);
    auto names = read_names(dir);
    for (size_t i = 0; i < names["input"].size(); ++i) {
        NpyArray a = read_npy(dir + "/input_" + std::to_string(i) + ".npy");
        ASSERT_EQ(onnxstream_model_push_tensor(m, names["input"][i].c_str(), a.dtype, a.shape.size(), a.shape.data(),
                                               a.data.data(), a.data.size()),
                  ONNXSTREAM_OK)
            << onnxstream_model_last_error(m);
    }
    ASSERT_EQ(onnxstream_model_run(m), ONNXSTREAM_OK) << onnxstream_model_last_error(m);

    std::string expected = dir + "/expected_0.npy";
    ASSERT_TRUE(exists(expected)) << expected << " missing: ONNX Runtime did not run (see the gen_sd.py log)";
    NpyArray want = read_npy(expected);
    onnxstream_tensor_view_t v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = sizeof(v);
    ASSERT_EQ(onnxstream_model_get_output_by_name(m, names["output"][0].c_str(), &v), ONNXSTREAM_OK)
        << onnxstream_model_last_error(m);
    ASSERT_EQ(v.dtype, ONNXSTREAM_DTYPE_FLOAT32);
    ASSERT_EQ(std::vector<int64_t>(v.shape, v.shape + v.rank), want.shape);
    const float *got = static_cast<const float *>(v.data);
    const float *ref = reinterpret_cast<const float *>(want.data.data());
    size_t n = want.data.size() / sizeof(float);
    double diff = 0, norm = 0, max_abs = 0;
    for (size_t i = 0; i < n; ++i) {
        double d = static_cast<double>(got[i]) - ref[i];
        diff += d * d;
        norm += static_cast<double>(ref[i]) * ref[i];
        max_abs = std::max(max_abs, std::fabs(d));
    }
    double rel_l2 = std::sqrt(diff / std::max(norm, 1e-30));
    std::printf("%s%s: rel L2 %.3g, max abs %.3g vs ONNX Runtime\n", e.model, fp16 ? " fp16" : "", rel_l2, max_abs);
    EXPECT_LE(rel_l2, fp16 ? 1e-2 : 1e-4) << e.model << (fp16 ? " with float16 weights" : "");
}

const Expectation kTextEncoder{"text_encoder", {"onnx_3A__3A_Reshape_5F_0"}};
const Expectation kUnet{"unet", {"sample", "timestep", "encoder_5F_hidden_5F_states"}};
const Expectation kVaeDecoder{"vae_decoder", {"input_2E_1"}};

TEST(Sd15Small, TextEncoderFp32) { check_model(kTextEncoder, false); }
TEST(Sd15Small, TextEncoderFp16) { check_model(kTextEncoder, true); }
TEST(Sd15Small, UnetFp32) { check_model(kUnet, false); }
TEST(Sd15Small, UnetFp16) { check_model(kUnet, true); }
TEST(Sd15Small, VaeDecoderFp32) { check_model(kVaeDecoder, false); }
TEST(Sd15Small, VaeDecoderFp16) { check_model(kVaeDecoder, true); }

} // namespace
