#include "tools/convert_check.h"

#include <algorithm>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "onnxstream.h"
#include "tensor/float8.h"
#include "tensor/half.h"
#include "util/npy.h"

namespace onnxstream::tools {

namespace {

std::string shell_quote(const std::string &s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

bool is_file(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// check_ort.js: where `meson install` put it, else next to the sources of this build; ONNXSTREAM_CHECK_SCRIPT
// overrides both.
std::string check_script() {
    if (const char *env = std::getenv("ONNXSTREAM_CHECK_SCRIPT")) return env;
    for (const char *path : {ONNXSTREAM_CHECK_SCRIPT_INSTALLED, ONNXSTREAM_CHECK_SCRIPT_SOURCE})
        if (is_file(path)) return path;
    throw std::runtime_error(std::string("--check: check_ort.js is neither at ") + ONNXSTREAM_CHECK_SCRIPT_INSTALLED +
                             " nor at " + ONNXSTREAM_CHECK_SCRIPT_SOURCE + " (set ONNXSTREAM_CHECK_SCRIPT)");
}

struct Listed {
    std::string name, file;
};

std::vector<double> as_doubles(const void *data, onnxstream_dtype_t dtype, size_t count) {
    std::vector<double> v(count);
    for (size_t i = 0; i < count; ++i) {
        switch (dtype) {
        case ONNXSTREAM_DTYPE_FLOAT32: v[i] = static_cast<const float *>(data)[i]; break;
        case ONNXSTREAM_DTYPE_FLOAT16: {
            float f;
            half_to_float_n(static_cast<const uint16_t *>(data) + i, &f, 1);
            v[i] = f;
            break;
        }
        case ONNXSTREAM_DTYPE_INT64: v[i] = static_cast<double>(static_cast<const int64_t *>(data)[i]); break;
        case ONNXSTREAM_DTYPE_INT32: v[i] = static_cast<const int32_t *>(data)[i]; break;
        case ONNXSTREAM_DTYPE_INT8:
        case ONNXSTREAM_DTYPE_INT4: v[i] = static_cast<const int8_t *>(data)[i]; break;
        case ONNXSTREAM_DTYPE_FLOAT64: v[i] = static_cast<const double *>(data)[i]; break;
        case ONNXSTREAM_DTYPE_INT16: v[i] = static_cast<const int16_t *>(data)[i]; break;
        case ONNXSTREAM_DTYPE_UINT16: v[i] = static_cast<const uint16_t *>(data)[i]; break;
        case ONNXSTREAM_DTYPE_UINT32: v[i] = static_cast<const uint32_t *>(data)[i]; break;
        case ONNXSTREAM_DTYPE_UINT64: v[i] = static_cast<double>(static_cast<const uint64_t *>(data)[i]); break;
        case ONNXSTREAM_DTYPE_BFLOAT16: v[i] = bfloat16_to_float(static_cast<const uint16_t *>(data)[i]); break;
        default: {
            const uint8_t byte = static_cast<const uint8_t *>(data)[i];
            Float8Format f;
            v[i] = float8_format(static_cast<DType>(dtype), f) ? float8_to_float(byte, f) : byte; // else uint8, bool
            break;
        }
        }
    }
    return v;
}

// The model's run on the listed inputs.
onnxstream_model_t *run_folder(const std::string &folder, const std::vector<Listed> &inputs) {
    onnxstream_model_t *model = nullptr;
    if (onnxstream_model_create(nullptr, &model) != ONNXSTREAM_OK) throw std::runtime_error(onnxstream_last_error());
    auto check = [&](onnxstream_status_t s) {
        if (s == ONNXSTREAM_OK) return;
        const std::string message = onnxstream_model_last_error(model);
        onnxstream_model_destroy(model);
        throw std::runtime_error("--check: " + message);
    };
    check(onnxstream_model_load(model, folder.c_str()));
    for (const Listed &in : inputs) {
        NpyArray a = read_npy(in.file);
        check(onnxstream_model_push_tensor(model, in.name.c_str(), a.dtype, a.shape.size(), a.shape.data(),
                                           a.data.data(), a.data.size()));
    }
    check(onnxstream_model_run(model));
    return model;
}

} // namespace

bool check_conversion(const CheckOptions &o) {
    const char *tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/onnxstream-check-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("--check: cannot make a temporary folder in " + templ);
    const std::string work = buf.data();
    struct Cleanup {
        std::string dir;
        ~Cleanup() {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    } cleanup{work};

    // ONNX Runtime first: it knows the inputs' dtypes (model.txt does not), makes the missing inputs and
    // writes its outputs.
    std::string cmd = shell_quote(o.node) + " " + shell_quote(check_script()) + " " + shell_quote(o.model_onnx) + " " +
                      shell_quote(work);
    for (const std::string &s : o.input_shapes) cmd += " " + shell_quote(s);
    if (!o.inputs_dir.empty()) cmd = "ONNXSTREAM_CHECK_INPUTS=" + shell_quote(o.inputs_dir) + " " + cmd;
    std::string pinned;
    for (const std::string &v : o.input_values) pinned += (pinned.empty() ? "" : ";") + v;
    if (!pinned.empty()) cmd = "ONNXSTREAM_CHECK_VALUES=" + shell_quote(pinned) + " " + cmd;
    const int status = std::system(cmd.c_str());
    if (status == -1 || !WIFEXITED(status))
        throw std::runtime_error("--check: could not start " + o.node);
    if (WEXITSTATUS(status) == 127)
        throw std::runtime_error("--check needs Node.js (`" + o.node + "` not found; --node PATH names it)");
    if (WEXITSTATUS(status) == 2)
        throw std::runtime_error("--check needs the npm package onnxruntime-node: `npm install onnxruntime-node` "
                                 "and point NODE_PATH at the node_modules folder it went into");
    if (WEXITSTATUS(status) != 0) throw std::runtime_error("--check: ONNX Runtime could not run " + o.model_onnx);

    std::vector<Listed> inputs, outputs;
    std::ifstream listing(work + "/check.txt");
    for (std::string line; std::getline(listing, line);) {
        const size_t a = line.find('\t'), b = line.rfind('\t');
        if (a == std::string::npos || a == b) continue;
        Listed l{line.substr(a + 1, b - a - 1), line.substr(b + 1)};
        (line.compare(0, a, "input") == 0 ? inputs : outputs).push_back(l);
    }
    if (outputs.empty()) throw std::runtime_error("--check: ONNX Runtime wrote no outputs");

    // Pinned inputs are constants of the converted model: only ONNX Runtime takes them.
    inputs.erase(std::remove_if(inputs.begin(), inputs.end(),
                                [&](const Listed &in) {
                                    for (const std::string &v : o.input_values)
                                        if (v.compare(0, in.name.size() + 1, in.name + "=") == 0) return true;
                                    return false;
                                }),
                 inputs.end());
    onnxstream_model_t *model = run_folder(o.folder, inputs);
    bool ok = true;
    std::printf("%-40s %-16s %12s %12s  %s\n", "output", "shape", "rel L2", "max abs", "vs ONNX Runtime");
    for (const Listed &out : outputs) {
        NpyArray ref = read_npy(out.file);
        onnxstream_tensor_view_t view;
        view.struct_size = sizeof(view);
        std::string shape;
        for (size_t i = 0; i < ref.shape.size(); ++i) shape += (i ? "x" : "") + std::to_string(ref.shape[i]);
        if (onnxstream_model_get_output_by_name(model, out.name.c_str(), &view) != ONNXSTREAM_OK) {
            std::printf("%-40s %-16s %12s %12s  missing: %s\n", out.name.c_str(), shape.c_str(), "-", "-",
                        onnxstream_model_last_error(model));
            ok = false;
            continue;
        }
        bool same_shape = view.rank == ref.shape.size();
        for (size_t i = 0; same_shape && i < view.rank; ++i) same_shape = view.shape[i] == ref.shape[i];
        const size_t count = view.byte_size / onnxstream_dtype_size(view.dtype);
        if (!same_shape || ref.data.size() / onnxstream_dtype_size(ref.dtype) != count) {
            std::printf("%-40s %-16s %12s %12s  shape differs\n", out.name.c_str(), shape.c_str(), "-", "-");
            ok = false;
            continue;
        }
        const std::vector<double> got = as_doubles(view.data, view.dtype, count);
        const std::vector<double> want = as_doubles(ref.data.data(), ref.dtype, count);
        double diff2 = 0, ref2 = 0, max_abs = 0;
        size_t nan_mismatches = 0;
        for (size_t i = 0; i < count; ++i) {
            // NaN where ONNX Runtime has NaN is a match (log of a negative number); anywhere else a failure.
            if (std::isnan(got[i]) || std::isnan(want[i])) {
                nan_mismatches += std::isnan(got[i]) != std::isnan(want[i]);
                continue;
            }
            const double d = got[i] - want[i];
            diff2 += d * d;
            ref2 += want[i] * want[i];
            max_abs = std::fmax(max_abs, std::fabs(d));
        }
        const bool exact = ref.dtype != ONNXSTREAM_DTYPE_FLOAT32 && ref.dtype != ONNXSTREAM_DTYPE_FLOAT16;
        const double rel = ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
        const bool pass = std::isfinite(rel) && nan_mismatches == 0 && (exact ? diff2 == 0 : rel <= o.tolerance);
        ok = ok && pass;
        std::printf("%-40s %-16s %12.3g %12.3g  %s\n", out.name.c_str(), shape.c_str(), rel, max_abs,
                    pass                 ? "ok"
                    : nan_mismatches > 0 ? "NaN where ONNX Runtime has a number, or the reverse"
                    : exact              ? "DIFFERS (must be equal)"
                                         : "OVER the tolerance");
    }
    onnxstream_model_destroy(model);
    return ok;
}

} // namespace onnxstream::tools
