// Implementation of include/onnxstream.h: argument checks, then one call into the C++ core.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "capi/guard.h"
#include "capi/model_options.h"
#include "onnxstream.h"
#include "weights/callback.h"
#include "xnnpack/init.h"

using namespace onnxstream;
using onnxstream::capi::Access;
using onnxstream::capi::guard;
using onnxstream::capi::guard_model;

namespace onnxstream::capi {
std::string &thread_last_error() {
    thread_local std::string message;
    return message;
}
} // namespace onnxstream::capi

namespace {

// A C caller may pass any int where the header has an enum type, but in C++ loading a value outside the
// enum's range is undefined (UBSan: "load of value 99, which is not a valid value for type
// 'onnxstream_dtype'"): such arguments are read as the int they are, and checked before any cast back.
template <typename E> int c_enum(const E &value) {
    static_assert(sizeof(E) == sizeof(int), "the header's enums are int-sized");
    int v;
    std::memcpy(&v, &value, sizeof v);
    return v;
}

void require_loaded(const onnxstream_model_t *model, const char *fn) {
    if (!model->model.loaded()) fail(ONNXSTREAM_ERR_BAD_STATE, fn, ": no model loaded (call onnxstream_model_load first)");
}

void fill_view(onnxstream_model_t *model, size_t index, onnxstream_tensor_view_t *view) {
    const Tensor &t = model->model.outputs()[index];
    onnxstream_tensor_view_t v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = view->struct_size;
    v.name = model->model.output_name(index).c_str();
    v.dtype = static_cast<onnxstream_dtype_t>(t.dtype());
    v.rank = t.rank();
    v.shape = t.shape().data();
    v.data = t.raw();
    v.byte_size = t.byte_size();
    std::memcpy(view, &v, std::min<size_t>(view->struct_size, sizeof(v)));
}

} // namespace

extern "C" {

uint32_t onnxstream_version(void) { return ONNXSTREAM_VERSION; }

const char *onnxstream_version_string(void) {
#define ONNXSTREAM_STR2(x) #x
#define ONNXSTREAM_STR(x) ONNXSTREAM_STR2(x)
    return ONNXSTREAM_STR(ONNXSTREAM_VERSION_MAJOR) "." ONNXSTREAM_STR(ONNXSTREAM_VERSION_MINOR) "." ONNXSTREAM_STR(
        ONNXSTREAM_VERSION_PATCH);
}

const char *onnxstream_kernel_library(void) { return onnxstream::kernel_library_description(); }

const char *onnxstream_status_name(onnxstream_status_t status) {
    const int s = c_enum(status);
    return s >= ONNXSTREAM_OK && s <= ONNXSTREAM_ERR_INTERNAL ? status_name(static_cast<Status>(s))
                                                              : "ONNXSTREAM_UNKNOWN_STATUS";
}

const char *onnxstream_dtype_name(onnxstream_dtype_t dtype) {
    const int d = c_enum(dtype);
    return dtype_valid(d) ? onnxstream::dtype_name(static_cast<DType>(d)) : "unknown";
}

size_t onnxstream_dtype_size(onnxstream_dtype_t dtype) {
    const int d = c_enum(dtype);
    return dtype_valid(d) ? onnxstream::dtype_size(static_cast<DType>(d)) : 0;
}

const char *onnxstream_last_error(void) { return capi::thread_last_error().c_str(); }

void onnxstream_model_options_init(onnxstream_model_options_t *options) {
    if (!options) return;
    std::memset(options, 0, sizeof(*options));
    options->struct_size = sizeof(*options);
    options->threads = 0;
    options->provider = ONNXSTREAM_PROVIDER_AUTO;
    options->flags = 0;
    options->prefetch_bytes = 0;
    options->memory_mode = ONNXSTREAM_MEMORY_BALANCED;
    options->attention = ONNXSTREAM_ATTENTION_AUTO;
    options->attention_slices = 0;
    options->weight_chunk_bytes = 0;
    options->cache_path = nullptr;
    options->max_bytes = 0;
    options->arithmetic = ONNXSTREAM_ARITHMETIC_AUTO;
    options->kept_kernel_bytes = 0;
}

onnxstream_status_t onnxstream_model_create(const onnxstream_model_options_t *options, onnxstream_model_t **out) {
    return guard(nullptr, [&] {
        REQUIRE_ARG(out, "onnxstream_model_create: out is NULL");
        *out = nullptr;
        onnxstream_model_options_t o;
        onnxstream_model_options_init(&o);
        if (options) {
            REQUIRE_ARG(options->struct_size != 0,
                        "onnxstream_model_create: options->struct_size is 0 (call onnxstream_model_options_init)");
            uint32_t keep = o.struct_size;
            std::memcpy(&o, options, std::min<size_t>(options->struct_size, sizeof(o)));
            o.struct_size = keep;
        }
        REQUIRE_ARG(o.threads >= 0 && o.threads <= 1024, "onnxstream_model_create: threads is ", o.threads,
                    " (expected 0..1024, 0 = one per core)");
        REQUIRE_ARG(o.provider >= ONNXSTREAM_PROVIDER_AUTO && o.provider <= ONNXSTREAM_PROVIDER_RAM,
                    "onnxstream_model_create: unknown provider kind ", o.provider);
        REQUIRE_ARG((o.flags & ~(ONNXSTREAM_FLAG_NCHW_ONLY | ONNXSTREAM_FLAG_PROFILE | ONNXSTREAM_FLAG_SPIN_WORKERS |
                                     ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS)) == 0, "onnxstream_model_create: unknown flags 0x", std::hex,
                    o.flags);
        REQUIRE_ARG(o.memory_mode >= ONNXSTREAM_MEMORY_BALANCED && o.memory_mode <= ONNXSTREAM_MEMORY_MAX_SPEED,
                    "onnxstream_model_create: unknown memory mode ", o.memory_mode, " (expected 0 balanced, 1 min, 2 max-speed)");
        REQUIRE_ARG(o.attention >= ONNXSTREAM_ATTENTION_AUTO && o.attention <= ONNXSTREAM_ATTENTION_FLASH,
                    "onnxstream_model_create: unknown attention kind ", o.attention, " (expected 0..3)");
        REQUIRE_ARG(o.attention_slices >= 0 && o.attention_slices <= 65536, "onnxstream_model_create: attention_slices is ",
                    o.attention_slices, " (expected 0..65536)");
        REQUIRE_ARG(o.reserved0 == 0, "onnxstream_model_create: reserved0 must be 0");
        REQUIRE_ARG(o.arithmetic >= ONNXSTREAM_ARITHMETIC_AUTO && o.arithmetic <= ONNXSTREAM_ARITHMETIC_FP16,
                    "onnxstream_model_create: unknown arithmetic ", o.arithmetic, " (expected 0 auto, 1 fp32, 2 fp16)");
        *out = new onnxstream_model(model_options_from(o));
    });
}

void onnxstream_model_destroy(onnxstream_model_t *model) { delete model; }

const char *onnxstream_model_last_error(const onnxstream_model_t *model) {
    return model ? model->last_error.c_str() : "";
}

onnxstream_status_t onnxstream_model_load(onnxstream_model_t *model, const char *path) {
    return guard_model(model, "onnxstream_model_load", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_load: model is NULL");
        REQUIRE_ARG(path, "onnxstream_model_load: path is NULL");
        model->model.load_file(path);
    });
}

onnxstream_status_t onnxstream_model_load_string(onnxstream_model_t *model, const char *model_txt,
                                                 const char *weights_dir) {
    return guard_model(model, "onnxstream_model_load_string", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_load_string: model is NULL");
        REQUIRE_ARG(model_txt, "onnxstream_model_load_string: model_txt is NULL");
        model->model.load_string(model_txt, weights_dir ? weights_dir : "", "model.txt");
    });
}

onnxstream_status_t onnxstream_model_set_max_bytes(onnxstream_model_t *model, uint64_t max_bytes) {
    return guard_model(model, "onnxstream_model_set_max_bytes", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_set_max_bytes: model is NULL");
        model->model.allocator().set_limit(max_bytes);
    });
}

onnxstream_status_t onnxstream_model_read_range_data(onnxstream_model_t *model, const char *path) {
    return guard_model(model, "onnxstream_model_read_range_data", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_read_range_data: model is NULL");
        REQUIRE_ARG(path, "onnxstream_model_read_range_data: path is NULL");
        require_loaded(model, "onnxstream_model_read_range_data");
        model->model.read_range_data(path);
    });
}

onnxstream_status_t onnxstream_model_write_range_data(onnxstream_model_t *model, const char *path) {
    return guard_model(model, "onnxstream_model_write_range_data", Access::Read, [&] {
        REQUIRE_ARG(model, "onnxstream_model_write_range_data: model is NULL");
        REQUIRE_ARG(path, "onnxstream_model_write_range_data: path is NULL");
        require_loaded(model, "onnxstream_model_write_range_data");
        model->model.write_range_data(path);
    });
}

onnxstream_status_t onnxstream_model_set_calibrate(onnxstream_model_t *model, int32_t on) {
    return guard_model(model, "onnxstream_model_set_calibrate", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_set_calibrate: model is NULL");
        require_loaded(model, "onnxstream_model_set_calibrate");
        model->model.set_calibrate(on != 0);
    });
}

onnxstream_status_t onnxstream_model_add_output(onnxstream_model_t *model, const char *name) {
    return guard_model(model, "onnxstream_model_add_output", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_add_output: model is NULL");
        REQUIRE_ARG(name, "onnxstream_model_add_output: name is NULL");
        require_loaded(model, "onnxstream_model_add_output");
        model->model.add_output(name);
    });
}

onnxstream_status_t onnxstream_model_add_lora(onnxstream_model_t *model, const char *path, float scale,
                                              const char *key_prefix, size_t *modules_taken) {
    return guard_model(model, "onnxstream_model_add_lora", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_add_lora: model is NULL");
        REQUIRE_ARG(path, "onnxstream_model_add_lora: path is NULL");
        require_loaded(model, "onnxstream_model_add_lora");
        if (!std::isfinite(scale))
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "onnxstream_model_add_lora: scale is not a finite number");
        const size_t taken = model->model.add_lora(path, scale, key_prefix ? key_prefix : "");
        if (modules_taken) *modules_taken = taken;
    });
}

onnxstream_status_t onnxstream_model_set_weights_provider(onnxstream_model_t *model,
                                                          const onnxstream_weights_provider_t *provider,
                                                          void *user_data) {
    return guard_model(model, "onnxstream_model_set_weights_provider", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_set_weights_provider: model is NULL");
        REQUIRE_ARG(provider, "onnxstream_model_set_weights_provider: provider is NULL");
        model->model.set_provider(make_callback_provider(*provider, user_data));
    });
}

onnxstream_status_t onnxstream_model_push_tensor(onnxstream_model_t *model, const char *name,
                                                 onnxstream_dtype_t dtype, size_t rank, const int64_t *shape,
                                                 const void *data, size_t byte_size) {
    const int dtype_value = c_enum(dtype);
    return guard_model(model, "onnxstream_model_push_tensor", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_push_tensor: model is NULL");
        REQUIRE_ARG(name, "onnxstream_model_push_tensor: name is NULL");
        REQUIRE_ARG(dtype_valid(dtype_value), "onnxstream_model_push_tensor: unknown dtype ", dtype_value);
        REQUIRE_ARG(rank == 0 || shape, "onnxstream_model_push_tensor: shape is NULL but rank is ", rank);
        REQUIRE_ARG(rank <= 16, "onnxstream_model_push_tensor: rank ", rank, " is larger than 16");
        REQUIRE_ARG(data || byte_size == 0, "onnxstream_model_push_tensor: data is NULL but byte_size is ", byte_size);
        require_loaded(model, "onnxstream_model_push_tensor");
        Shape s(shape, shape + rank);
        for (int64_t d : s)
            REQUIRE_ARG(d >= 0, "onnxstream_model_push_tensor: negative dimension in shape ", shape_str(s));
        model->model.push_input(name, static_cast<DType>(dtype_value), s, data, byte_size);
    });
}

onnxstream_status_t onnxstream_model_set_progress_callback(onnxstream_model_t *model, onnxstream_progress_fn fn,
                                                           void *user_data) {
    return guard_model(model, "onnxstream_model_set_progress_callback", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_set_progress_callback: model is NULL");
        model->progress_fn = fn;
        model->progress_user_data = user_data;
    });
}

onnxstream_status_t onnxstream_model_set_log_callback(onnxstream_model_t *model, onnxstream_log_fn fn,
                                                      void *user_data, onnxstream_log_level_t min_level) {
    return guard_model(model, "onnxstream_model_set_log_callback", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_set_log_callback: model is NULL");
        if (!fn) {
            model->model.set_log(nullptr, min_level);
            return;
        }
        model->model.set_log([fn, user_data](onnxstream_log_level_t level, const std::string &msg) {
            fn(user_data, level, msg.c_str());
        },
                             min_level);
    });
}

onnxstream_status_t onnxstream_model_run(onnxstream_model_t *model) {
    return guard_model(model, "onnxstream_model_run", Access::Write, [&] {
        REQUIRE_ARG(model, "onnxstream_model_run: model is NULL");
        require_loaded(model, "onnxstream_model_run");
        ProgressFn progress;
        if (model->progress_fn) {
            progress = [model](const OpProgress &p) {
                onnxstream_progress_t info;
                std::memset(&info, 0, sizeof(info));
                info.struct_size = sizeof(info);
                info.op_index = p.op_index;
                info.op_count = p.op_count;
                info.op_name = p.line->name.c_str();
                info.op_type = p.line->type.c_str();
                info.elapsed_us = p.elapsed_us;
                info.current_bytes = p.current_bytes;
                info.peak_bytes = p.peak_bytes;
                return model->progress_fn(model->progress_user_data, &info) != 0;
            };
        }
        model->model.run(progress);
    });
}

size_t onnxstream_model_input_count(const onnxstream_model_t *model) {
    return model && model->model.loaded() ? model->model.graph().inputs().size() : 0;
}

onnxstream_status_t onnxstream_model_get_input(onnxstream_model_t *model, size_t index,
                                               onnxstream_tensor_view_t *view) {
    return guard_model(model, "onnxstream_model_get_input", Access::Read, [&] {
        REQUIRE_ARG(model, "onnxstream_model_get_input: model is NULL");
        REQUIRE_ARG(view, "onnxstream_model_get_input: view is NULL");
        REQUIRE_ARG(view->struct_size != 0, "onnxstream_model_get_input: view->struct_size is 0");
        require_loaded(model, "onnxstream_model_get_input");
        const Graph &g = model->model.graph();
        REQUIRE_ARG(index < g.inputs().size(), "onnxstream_model_get_input: index ", index, " is out of range (",
                    g.inputs().size(), " inputs)");
        const Value &v = g.values()[static_cast<size_t>(g.inputs()[index])];
        const Tensor &pushed = model->model.pushed_input(index);
        onnxstream_tensor_view_t out;
        std::memset(&out, 0, sizeof(out));
        out.struct_size = view->struct_size;
        out.name = v.name.c_str();
        out.dtype = pushed.empty() ? ONNXSTREAM_DTYPE_FLOAT32 : static_cast<onnxstream_dtype_t>(pushed.dtype());
        out.rank = v.declared_shape.size();
        out.shape = v.declared_shape.data();
        std::memcpy(view, &out, std::min<size_t>(view->struct_size, sizeof(out)));
    });
}

size_t onnxstream_model_output_count(const onnxstream_model_t *model) {
    return model ? model->model.outputs().size() : 0;
}

onnxstream_status_t onnxstream_model_get_output(onnxstream_model_t *model, size_t index,
                                                onnxstream_tensor_view_t *view) {
    return guard_model(model, "onnxstream_model_get_output", Access::Read, [&] {
        REQUIRE_ARG(model, "onnxstream_model_get_output: model is NULL");
        REQUIRE_ARG(view, "onnxstream_model_get_output: view is NULL");
        REQUIRE_ARG(view->struct_size != 0, "onnxstream_model_get_output: view->struct_size is 0");
        REQUIRE_ARG(index < model->model.outputs().size(), "onnxstream_model_get_output: index ", index,
                    " is out of range (", model->model.outputs().size(), " outputs)");
        fill_view(model, index, view);
    });
}

onnxstream_status_t onnxstream_model_get_output_by_name(onnxstream_model_t *model, const char *name,
                                                        onnxstream_tensor_view_t *view) {
    return guard_model(model, "onnxstream_model_get_output_by_name", Access::Read, [&] {
        REQUIRE_ARG(model, "onnxstream_model_get_output_by_name: model is NULL");
        REQUIRE_ARG(name, "onnxstream_model_get_output_by_name: name is NULL");
        REQUIRE_ARG(view, "onnxstream_model_get_output_by_name: view is NULL");
        REQUIRE_ARG(view->struct_size != 0, "onnxstream_model_get_output_by_name: view->struct_size is 0");
        require_loaded(model, "onnxstream_model_get_output_by_name");
        int index = model->model.find_output(name);
        REQUIRE_ARG(index >= 0, "onnxstream_model_get_output_by_name: no output named '", name, "' in the last run");
        fill_view(model, static_cast<size_t>(index), view);
    });
}

onnxstream_status_t onnxstream_model_memory_stats(onnxstream_model_t *model, onnxstream_memory_stats_t *stats,
                                                  int reset_peak) {
    return guard_model(model, "onnxstream_model_memory_stats", Access::Read, [&] {
        REQUIRE_ARG(model, "onnxstream_model_memory_stats: model is NULL");
        REQUIRE_ARG(stats, "onnxstream_model_memory_stats: stats is NULL");
        REQUIRE_ARG(stats->struct_size != 0, "onnxstream_model_memory_stats: stats->struct_size is 0");
        onnxstream_memory_stats_t s;
        s.struct_size = stats->struct_size;
        s.current_bytes = model->model.allocator().current_bytes();
        s.peak_bytes = model->model.allocator().peak_bytes();
        std::memcpy(stats, &s, std::min<size_t>(stats->struct_size, sizeof(s)));
        if (reset_peak) model->model.allocator().reset_peak();
    });
}

onnxstream_status_t onnxstream_model_run_stats(onnxstream_model_t *model, onnxstream_run_stats_t *stats) {
    return guard_model(model, "onnxstream_model_run_stats", Access::Read, [&] {
        REQUIRE_ARG(model, "onnxstream_model_run_stats: model is NULL");
        REQUIRE_ARG(stats, "onnxstream_model_run_stats: stats is NULL");
        REQUIRE_ARG(stats->struct_size != 0, "onnxstream_model_run_stats: stats->struct_size is 0");
        const auto &last = model->model.last_run();
        onnxstream_run_stats_t s;
        std::memset(&s, 0, sizeof(s));
        s.struct_size = stats->struct_size;
        s.run_us = last.exec.run_us;
        s.weight_bytes_read = last.bytes_read;
        s.weight_read_us = last.read_us;
        s.weight_wait_us = last.exec.weight_wait_us;
        s.layout_transposes = last.exec.layout_transposes;
        s.fp16_ops = last.exec.fp16_ops;
        s.fp16_fallbacks = last.exec.fp16_fallbacks;
        s.arithmetic = model->model.fp16_arithmetic() ? ONNXSTREAM_ARITHMETIC_FP16 : ONNXSTREAM_ARITHMETIC_FP32;
        s.weight_bytes_copied = last.weight_bytes_copied;
        s.int8_ops = last.exec.int8_ops;
        s.packed_weights_mapped = last.packed_mapped;
        s.packed_weights_stored = last.packed_stored;
        s.kept_kernels = last.kept_kernels;
        s.kept_kernel_bytes = last.kept_kernel_bytes;
        std::memcpy(stats, &s, std::min<size_t>(stats->struct_size, sizeof(s)));
    });
}

} // extern "C"
