#include "conversion_util.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "util/npy.h"

namespace onnxstream::testing {

using tools::NpyArray;
using tools::read_npy;

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

std::map<std::string, size_t> op_counts(const std::string &model_txt) {
    std::map<std::string, size_t> n;
    for (const auto &line : lines_of(model_txt)) {
        std::string head = line.substr(0, line.find('*'));
        ++n[head.substr(head.rfind(':') + 1)];
    }
    return n;
}

size_t count_ops(const std::string &model_txt, const std::string &type) {
    auto counts = op_counts(model_txt);
    auto it = counts.find(type);
    return it == counts.end() ? 0 : it->second;
}

Scratch::Scratch(const char *prefix) {
    const char *tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "-XXXXXX";
    path_ = ::mkdtemp(templ.data()) ? templ : "";
}

Scratch::~Scratch() {
    // No std::system("rm -rf"): forking a process that has a thread pool can hang
    // under qemu-user, where the ARM tests run.
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
}

std::vector<std::string> Scratch::entries() const {
    std::vector<std::string> names;
    if (DIR *d = ::opendir(path_.c_str())) {
        while (dirent *e = ::readdir(d))
            if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
        ::closedir(d);
    }
    return names;
}

namespace {
void collect(void *user_data, onnxstream_log_level_t level, const char *message) {
    auto *c = static_cast<Conversion *>(user_data);
    if (level >= ONNXSTREAM_LOG_WARNING)
        c->warnings.push_back(message);
    else
        c->report += message;
}
} // namespace

Conversion convert(const std::string &onnx, const std::string &out, bool fp16, std::vector<const char *> keep,
                   std::vector<const char *> shapes) {
    Conversion c;
    keep.push_back(nullptr);
    shapes.push_back(nullptr);
    onnxstream_convert_options_t o;
    onnxstream_convert_options_init(&o);
    o.fp16 = fp16;
    o.keep_fp32 = keep.data();
    o.input_shapes = shapes.data();
    o.report_fn = collect;
    o.report_user_data = &c;
    c.status = onnxstream_convert_onnx(onnx.c_str(), out.c_str(), &o);
    if (c.status != ONNXSTREAM_OK) c.message = onnxstream_last_error();
    return c;
}

Compare compare(const float *got, const float *want, size_t n) {
    double diff = 0, ref = 0, max_abs = 0;
    for (size_t i = 0; i < n; ++i) {
        double d = static_cast<double>(got[i]) - want[i];
        diff += d * d;
        ref += static_cast<double>(want[i]) * want[i];
        max_abs = std::max(max_abs, std::fabs(d));
    }
    return {std::sqrt(diff / std::max(ref, 1e-30)), max_abs};
}

std::map<std::string, std::vector<std::string>> read_names(const std::string &case_dir) {
    std::map<std::string, std::vector<std::string>> names;
    for (const auto &line : lines_of(read_text(case_dir + "/names.txt"))) {
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

void run_and_compare(const std::string &model_dir, const std::string &case_dir, double rel_l2_tol,
                     double max_abs_tol, const onnxstream_model_options_t *options, uint64_t *transposes,
                     onnxstream_run_stats_t *stats) {
    onnxstream_model_t *m = nullptr;
    ASSERT_EQ(onnxstream_model_create(options, &m), ONNXSTREAM_OK);
    struct Destroy {
        onnxstream_model_t *m;
        ~Destroy() { onnxstream_model_destroy(m); }
    } destroy{m};
    ASSERT_EQ(onnxstream_model_load(m, model_dir.c_str()), ONNXSTREAM_OK) << onnxstream_model_last_error(m);
    auto names = read_names(case_dir);
    for (size_t i = 0; i < names["input"].size(); ++i) {
        NpyArray a = read_npy(case_dir + "/input_" + std::to_string(i) + ".npy");
        ASSERT_EQ(onnxstream_model_push_tensor(m, names["input"][i].c_str(), a.dtype, a.shape.size(), a.shape.data(),
                                               a.data.data(), a.data.size()),
                  ONNXSTREAM_OK)
            << onnxstream_model_last_error(m);
    }
    ASSERT_EQ(onnxstream_model_run(m), ONNXSTREAM_OK) << onnxstream_model_last_error(m);
    if (transposes || stats) {
        onnxstream_run_stats_t rs;
        std::memset(&rs, 0, sizeof(rs));
        rs.struct_size = sizeof(rs);
        ASSERT_EQ(onnxstream_model_run_stats(m, &rs), ONNXSTREAM_OK);
        if (transposes) *transposes = rs.layout_transposes;
        if (stats) *stats = rs;
    }
    for (size_t k = 0; k < names["output"].size(); ++k) {
        std::string expected = case_dir + "/expected_" + std::to_string(k) + ".npy";
        if (!exists(expected)) {
            std::string torch = case_dir + "/torch_" + std::to_string(k) + ".npy";
            ASSERT_TRUE(exists(torch)) << expected << " missing: ONNX Runtime did not run (see the generator's log)";
            std::fprintf(stderr, "note: %s missing (no ONNX Runtime), comparing with PyTorch\n", expected.c_str());
            expected = torch;
        }
        NpyArray want = read_npy(expected);
        onnxstream_tensor_view_t v;
        std::memset(&v, 0, sizeof(v));
        v.struct_size = sizeof(v);
        ASSERT_EQ(onnxstream_model_get_output_by_name(m, names["output"][k].c_str(), &v), ONNXSTREAM_OK)
            << onnxstream_model_last_error(m);
        ASSERT_EQ(v.dtype, ONNXSTREAM_DTYPE_FLOAT32);
        ASSERT_EQ(std::vector<int64_t>(v.shape, v.shape + v.rank), want.shape) << "output " << names["output"][k];
        Compare c = compare(static_cast<const float *>(v.data), reinterpret_cast<const float *>(want.data.data()),
                            want.data.size() / 4);
        EXPECT_LE(c.rel_l2, rel_l2_tol) << "output " << names["output"][k];
        EXPECT_LE(c.max_abs, max_abs_tol) << "output " << names["output"][k];
        std::printf("%s output %s: rel L2 %.3g, max abs %.3g\n", case_dir.c_str(), names["output"][k].c_str(),
                    c.rel_l2, c.max_abs);
    }
}

std::string sd_case_dir(const char *env_var, const std::string &model) {
    const char *v = std::getenv(env_var);
    return std::string(v ? v : "") + "/sd/" + model;
}

void check_sd_model(const std::string &case_dir, const std::vector<std::string> &txt_inputs, bool fp16,
                    const std::vector<std::string> &unfolded) {
    std::string model = case_dir.substr(case_dir.rfind('/') + 1);
    ASSERT_TRUE(exists(case_dir + "/model.onnx"))
        << case_dir << "/model.onnx missing: the cases folder variable does not point at the generator's --out";
    Scratch scratch("onnxstream-sd-test");
    Conversion c = convert(case_dir + "/model.onnx", scratch.out(), fp16);
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    for (const auto &w : c.warnings) std::printf("converter warning: %s\n", w.c_str());
    // The converter's own summary line: "N nodes before simplification, M after".
    for (const auto &line : lines_of(c.report))
        if (line.find("nodes before") != std::string::npos)
            std::printf("%s%s:%s\n", model.c_str(), fp16 ? " fp16" : "", line.c_str());

    std::string txt = read_text(scratch.out() + "/model.txt");
    auto ops = op_counts(txt);
    // Shape arithmetic and constants must be folded into weights: the exports are full of them.
    for (const char *folded : {"Shape", "Constant", "ConstantOfShape", "Identity", "Gather", "Equal", "Where"})
        if (std::find(unfolded.begin(), unfolded.end(), folded) == unfolded.end()) {
            EXPECT_EQ(ops[folded], 0u) << model << ": " << folded << " left in model.txt";
        }
    for (const auto &name : txt_inputs)
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
                EXPECT_FALSE(matrix && spec.rfind("float32:", 0) == 0) << model << ": float32 weight in " << line;
            }
        }
        EXPECT_GT(half, 0u) << "no float16 weight written";
    }

    run_and_compare(scratch.out(), case_dir, fp16 ? 1e-2 : 1e-4, HUGE_VAL);
}

} // namespace onnxstream::testing
