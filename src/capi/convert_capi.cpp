// C entry points of the ONNX importer (onnxstream_convert_*), thin glue over onnx/importer.h.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <stdlib.h>

#include "exec/model.h"
#include "util/npy.h"

#include "capi/guard.h"
#include "onnx/importer.h"
#include "onnxstream.h"
#include "util/strings.h"

using namespace onnxstream;
using onnxstream::capi::guard;

namespace {

void add_patterns(std::vector<std::string> &out, const char *list) {
    for (auto p : split(list, ';'))
        if (!p.empty()) out.emplace_back(p);
}

// Calibration runs of the float32 model folder `model_dir`: one run per subfolder of `dir` (sorted), each with
// one NAME.npy per graph input (original or escaped name). Returns the recorded ranges.
RangeMap calibrate_folder(const std::string &model_dir, const std::string &dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "calibration_inputs ", dir, " is not a folder");
    std::vector<std::string> runs;
    for (const auto &e : fs::directory_iterator(dir, ec))
        if (e.is_directory()) runs.push_back(e.path().string());
    if (ec) fail(ONNXSTREAM_ERR_IO, "cannot list ", dir, ": ", ec.message());
    std::sort(runs.begin(), runs.end());
    if (runs.empty())
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "calibration_inputs ", dir, " has no run subfolders (DIR/0/NAME.npy ...)");
    ModelOptions mo;
    Model model(mo);
    model.load_file(model_dir);
    model.set_calibrate(true);
    const Graph &g = model.graph();
    for (const std::string &run : runs) {
        for (int v : g.inputs()) {
            const std::string &name = g.values()[static_cast<size_t>(v)].name;
            std::string path = run + "/" + unescape_name(name) + ".npy";
            if (!fs::exists(path, ec)) path = run + "/" + name + ".npy";
            tools::NpyArray a;
            try {
                a = tools::read_npy(path);
            } catch (const std::runtime_error &e) {
                fail(ONNXSTREAM_ERR_IO, "calibration input ", path, ": ", e.what());
            }
            if (a.dtype != ONNXSTREAM_DTYPE_FLOAT32)
                fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "calibration input ", path, " is not float32");
            model.push_input(name, DType::F32, a.shape, a.data.data(), a.data.size());
        }
        model.run(nullptr);
    }
    model.set_calibrate(false);
    return model.ranges();
}

} // namespace

extern "C" {

void onnxstream_convert_options_init(onnxstream_convert_options_t *options) {
    if (!options) return;
    std::memset(options, 0, sizeof(*options));
    options->struct_size = sizeof(*options);
}

onnxstream_status_t onnxstream_convert_onnx(const char *onnx_path, const char *out_dir,
                                            const onnxstream_convert_options_t *options) {
    return guard(nullptr, [&] {
        if (!onnx_path) fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "onnxstream_convert_onnx: onnx_path is NULL");
        if (!out_dir) fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "onnxstream_convert_onnx: out_dir is NULL");
        onnxstream_convert_options_t o;
        onnxstream_convert_options_init(&o);
        if (options) {
            if (options->struct_size == 0)
                fail(ONNXSTREAM_ERR_INVALID_ARGUMENT,
                     "onnxstream_convert_onnx: options->struct_size is 0 (call onnxstream_convert_options_init)");
            uint32_t keep = o.struct_size;
            std::memcpy(&o, options, std::min<size_t>(options->struct_size, sizeof(o)));
            o.struct_size = keep;
        }
        importer::ConvertOptions c;
        c.fp16 = o.fp16 != 0;
        if (o.quantize < 0 || o.quantize > 3)
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "onnxstream_convert_onnx: options->quantize is ", o.quantize,
                 " (expected 0 for none, 1 for w8, 2 for w8a8 or 3 for w4)");
        if ((o.quantize == 2) != (o.calibration_inputs != nullptr))
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "onnxstream_convert_onnx: options->calibration_inputs ",
                 o.quantize == 2 ? "is required with quantize = 2 (w8a8)" : "is only used with quantize = 2 (w8a8)");
        c.quantize_w8 = o.quantize == 1;
        c.quantize_w4 = o.quantize == 3;
        if (o.weights_format != ONNXSTREAM_WEIGHTS_FILES && o.weights_format != ONNXSTREAM_WEIGHTS_SAFETENSORS)
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "onnxstream_convert_onnx: options->weights_format is ",
                 o.weights_format, " (expected 0 for files or 1 for safetensors)");
        c.safetensors = o.weights_format == ONNXSTREAM_WEIGHTS_SAFETENSORS;
        for (const char *const *p = o.keep_fp32; p && *p; ++p)
            if (**p) c.keep_fp32.emplace_back(*p);
        if (o.keep_fp32_list) add_patterns(c.keep_fp32, o.keep_fp32_list);
        for (const char *const *p = o.input_shapes; p && *p; ++p)
            c.input_shapes.push_back(importer::parse_input_shape(*p));
        for (const char *const *p = o.input_values; p && *p; ++p) c.input_values.emplace_back(*p);
        for (const char *const *p = o.resizable_shapes; p && *p; ++p)
            c.resizable.push_back(importer::parse_input_shape(*p));

        RangeMap ranges;
        if (o.quantize == 2) {
            // Calibrate the float32 conversion in a temporary sibling folder, then write the uint8 model.
            std::string out = out_dir;
            while (out.size() > 1 && out.back() == '/') out.pop_back();
            std::string templ = out + ".calib-XXXXXX";
            if (!::mkdtemp(templ.data()))
                fail(ONNXSTREAM_ERR_IO, "cannot create a temporary folder next to ", out, ": ", std::strerror(errno));
            struct Cleanup {
                std::string path;
                ~Cleanup() {
                    std::error_code ec;
                    std::filesystem::remove_all(path, ec);
                }
            } cleanup{templ};
            importer::convert_onnx(onnx_path, templ, c);
            ranges = calibrate_folder(templ, o.calibration_inputs);
            c.quantize_u8 = true;
        }
        importer::ConvertReport report = importer::convert_onnx(onnx_path, out_dir, c);
        if (o.quantize == 2) {
            try {
                write_range_data(std::string(out_dir) + "/range_data.txt", ranges);
            } catch (...) {
                std::error_code ec;
                std::filesystem::remove_all(out_dir, ec); // never leave a W8A8 model without its ranges
                throw;
            }
        }
        if (o.report_fn) {
            o.report_fn(o.report_user_data, ONNXSTREAM_LOG_INFO, report.text().c_str());
            for (const auto &note : report.written.notes)
                o.report_fn(o.report_user_data, ONNXSTREAM_LOG_WARNING, note.c_str());
        }
    });
}

} // extern "C"
