// Shared by the converter test programs (tests/convert, tests/sd): file helpers, a scratch folder,
// onnxstream_convert_onnx with its report collected, "run the converted model on a generated case and
// compare with ONNX Runtime", and the Stable Diffusion models' conversion check. Public C API only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "onnxstream.h"

namespace onnxstream::testing {

bool exists(const std::string &path);
std::string read_text(const std::string &path);
// Non-empty lines.
std::vector<std::string> lines_of(const std::string &text);
// Op type -> number of model.txt lines with it.
std::map<std::string, size_t> op_counts(const std::string &model_txt);
size_t count_ops(const std::string &model_txt, const std::string &type);

// A fresh folder for outputs, removed with everything in it; the converted model goes to out(), which
// does not exist yet.
class Scratch {
public:
    explicit Scratch(const char *prefix = "onnxstream-convert-test");
    ~Scratch();
    Scratch(const Scratch &) = delete;
    Scratch &operator=(const Scratch &) = delete;
    const std::string &path() const { return path_; }
    std::string out() const { return path_ + "/out"; }
    // Entries of the scratch folder (to check nothing but the output was created).
    std::vector<std::string> entries() const;

private:
    std::string path_;
};

struct Conversion {
    onnxstream_status_t status = ONNXSTREAM_OK;
    std::string message, report;
    std::vector<std::string> warnings;
};

Conversion convert(const std::string &onnx, const std::string &out, bool fp16 = false,
                   std::vector<const char *> keep = {}, std::vector<const char *> shapes = {});

struct Compare {
    double rel_l2 = 0, max_abs = 0;
};
Compare compare(const float *got, const float *want, size_t n);

// A generated case's names.txt: "input <i> <name>" / "output <k> <name>".
std::map<std::string, std::vector<std::string>> read_names(const std::string &case_dir);

// Run the converted model on the case's inputs and compare every output with ONNX Runtime's
// expected_<k>.npy (or PyTorch's torch_<k>.npy when the generator could not run ONNX Runtime), with
// gtest assertions; prints one line per output. `options`: the model's options (nullptr: defaults);
// `transposes`, when given, receives the run's layout_transposes.
void run_and_compare(const std::string &model_dir, const std::string &case_dir, double rel_l2_tol,
                     double max_abs_tol, const onnxstream_model_options_t *options = nullptr,
                     uint64_t *transposes = nullptr, onnxstream_run_stats_t *stats = nullptr);

// The Stable Diffusion tests (tests/sd: sd_test, sdxl_test). A generated model's folder: $<env_var>/sd/<model>.
std::string sd_case_dir(const char *env_var, const std::string &model);

// Converts one generated SD model (case_dir/model.onnx) with float32 or float16 weights and prints the
// converter's node counts; checks model.txt: shape arithmetic and constants folded (Shape, Constant,
// ConstantOfShape, Identity, Gather, Equal, Where; the ops in `unfolded` may stay, e.g. an embedding's
// Gather), every name of `txt_inputs` (model.txt spellings, OnnxStream's escaping) present as an input,
// with fp16 no float32 Conv/MatMul/Gemm weight matrix and at least one float16 weight; then runs it on the
// case's inputs and compares every output with ONNX Runtime's: relative L2 error <= 1e-4 with float32
// weights, <= 1e-2 with float16 (no max-abs bound: the outputs are unscaled).
void check_sd_model(const std::string &case_dir, const std::vector<std::string> &txt_inputs, bool fp16,
                    const std::vector<std::string> &unfolded = {});

} // namespace onnxstream::testing
