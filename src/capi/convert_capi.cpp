// C entry points of the ONNX importer (onnxstream_convert_*), thin glue over onnx/importer.h.
#include <algorithm>
#include <cstring>

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
        if (o.quantize != 0 && o.quantize != 1)
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "onnxstream_convert_onnx: options->quantize is ", o.quantize,
                 " (expected 0 for none or 1 for w8)");
        c.quantize_w8 = o.quantize == 1;
        for (const char *const *p = o.keep_fp32; p && *p; ++p)
            if (**p) c.keep_fp32.emplace_back(*p);
        if (o.keep_fp32_list) add_patterns(c.keep_fp32, o.keep_fp32_list);
        for (const char *const *p = o.input_shapes; p && *p; ++p)
            c.input_shapes.push_back(importer::parse_input_shape(*p));

        importer::ConvertReport report = importer::convert_onnx(onnx_path, out_dir, c);
        if (o.report_fn) {
            o.report_fn(o.report_user_data, ONNXSTREAM_LOG_INFO, report.text().c_str());
            for (const auto &note : report.written.notes)
                o.report_fn(o.report_user_data, ONNXSTREAM_LOG_WARNING, note.c_str());
        }
    });
}

} // extern "C"
