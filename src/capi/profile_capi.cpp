// The profiling entry points (onnxstream.h, "Profiling"): thin glue over exec/profiler.h.
#include <algorithm>
#include <cstring>

#include "capi/guard.h"
#include "exec/roofline.h"

using namespace onnxstream;
using namespace onnxstream::capi;

namespace {

const Profiler &require_profile(onnxstream_model_t *model, const char *fn) {
    const Profiler *p = model->model.profiler();
    if (!p) fail(ONNXSTREAM_ERR_BAD_STATE, fn, ": no profile: create the model with ONNXSTREAM_FLAG_PROFILE");
    if (p->op_count() == 0)
        fail(ONNXSTREAM_ERR_BAD_STATE, fn, ": no profile yet: ",
             model->model.loaded() ? "no run has succeeded" : "no model loaded");
    return *p;
}

} // namespace

extern "C" {

size_t onnxstream_model_profile_op_count(const onnxstream_model_t *model) {
    if (!model || !model->model.profiler()) return 0;
    return model->model.profiler()->op_count();
}

onnxstream_status_t onnxstream_model_get_op_profile(onnxstream_model_t *model, size_t index,
                                                    onnxstream_op_profile_t *op) {
    return guard_model(model, "onnxstream_model_get_op_profile", Access::Read, [&] {
        REQUIRE_ARG(model, "onnxstream_model_get_op_profile: model is NULL");
        REQUIRE_ARG(op, "onnxstream_model_get_op_profile: op is NULL");
        REQUIRE_ARG(op->struct_size != 0, "onnxstream_model_get_op_profile: op->struct_size is 0");
        const Profiler *profiler = model->model.profiler();
        const size_t count = profiler ? profiler->op_count() : 0;
        REQUIRE_ARG(index < count, "onnxstream_model_get_op_profile: index ", index, " is out of range (", count,
                    " ops profiled)");
        const OpProfile r = profiler->op(index);
        onnxstream_op_profile_t p;
        std::memset(&p, 0, sizeof(p));
        p.struct_size = op->struct_size;
        p.op_index = r.timing->node;
        p.line = static_cast<size_t>(r.line);
        p.op_name = r.name->c_str();
        p.op_type = r.type->c_str();
        p.inputs = r.inputs->c_str();
        p.outputs = r.outputs->c_str();
        p.start_ns = r.timing->start_ns;
        p.duration_ns = r.timing->duration_ns;
        p.weight_wait_ns = r.timing->weight_wait_ns;
        p.kernel_prepare_ns = r.timing->kernel_prepare_ns;
        p.flops = r.flops;
        p.weight_bytes = r.weight_bytes;
        p.activation_bytes = r.activation_bytes;
        p.memory_bytes = r.timing->memory_bytes;
        std::memcpy(op, &p, std::min<size_t>(op->struct_size, sizeof(p)));
    });
}

onnxstream_status_t onnxstream_model_render_profile(onnxstream_model_t *model, onnxstream_profile_format_t format,
                                                    const onnxstream_roofline_t *peak, const char **text,
                                                    size_t *length) {
    return guard_model(model, "onnxstream_model_render_profile", Access::Read, [&] {
        REQUIRE_ARG(model, "onnxstream_model_render_profile: model is NULL");
        REQUIRE_ARG(text, "onnxstream_model_render_profile: text is NULL");
        *text = nullptr;
        if (length) *length = 0;
        int f = 0;
        std::memcpy(&f, &format, sizeof(f)); // any int a C caller passed, checked before use
        REQUIRE_ARG(f == ONNXSTREAM_PROFILE_TRACE_JSON || f == ONNXSTREAM_PROFILE_SUMMARY,
                    "onnxstream_model_render_profile: unknown format ", f,
                    " (expected 0 trace JSON, 1 summary)");
        Roofline roof;
        if (peak) {
            REQUIRE_ARG(peak->struct_size != 0, "onnxstream_model_render_profile: peak->struct_size is 0");
            onnxstream_roofline_t r;
            std::memset(&r, 0, sizeof(r));
            std::memcpy(&r, peak, std::min<size_t>(peak->struct_size, sizeof(r)));
            roof.flops_per_s = r.flops_per_s;
            roof.bytes_per_s = r.bytes_per_s;
        }
        const Profiler &p = require_profile(model, "onnxstream_model_render_profile");
        model->profile_text = f == ONNXSTREAM_PROFILE_TRACE_JSON ? p.trace_json() : p.summary(roof);
        *text = model->profile_text.c_str();
        if (length) *length = model->profile_text.size();
    });
}

onnxstream_status_t onnxstream_measure_roofline(int32_t threads, onnxstream_roofline_t *out) {
    return guard(nullptr, [&] {
        REQUIRE_ARG(out, "onnxstream_measure_roofline: out is NULL");
        REQUIRE_ARG(out->struct_size != 0, "onnxstream_measure_roofline: out->struct_size is 0");
        REQUIRE_ARG(threads >= 0 && threads <= 1024, "onnxstream_measure_roofline: threads is ", threads,
                    " (expected 0..1024, 0 = one per core)");
        const Roofline roof = measure_roofline(static_cast<size_t>(threads));
        onnxstream_roofline_t r;
        std::memset(&r, 0, sizeof(r));
        r.struct_size = out->struct_size;
        r.flops_per_s = roof.flops_per_s;
        r.bytes_per_s = roof.bytes_per_s;
        std::memcpy(out, &r, std::min<size_t>(out->struct_size, sizeof(r)));
    });
}

} // extern "C"
