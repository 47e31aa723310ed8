#include "onnx/input_values.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "tensor/half.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

template <typename T> void append(std::string &bytes, T v) {
    bytes.append(reinterpret_cast<const char *>(&v), sizeof(v));
}

// One value in the input's type, appended to bytes; false when the text is not such a value.
bool encode(int32_t type, const std::string &text, std::string &bytes) {
    if (type == kOnnxFloat || type == kOnnxFloat16) {
        char *end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || *end || !std::isfinite(v)) return false;
        if (type == kOnnxFloat) append(bytes, static_cast<float>(v));
        else append(bytes, float_to_half(static_cast<float>(v)));
        return true;
    }
    int64_t v = 0;
    // numpy and Python print booleans as True/False.
    if (type == kOnnxBool && (text == "True" || text == "true" || text == "False" || text == "false"))
        v = text[0] == 'T' || text[0] == 't';
    else if (!parse_int64(text, v))
        return false;
    switch (type) {
    case kOnnxInt64: append(bytes, v); return true;
    case kOnnxInt32:
        if (v < INT32_MIN || v > INT32_MAX) return false;
        append(bytes, static_cast<int32_t>(v));
        return true;
    case kOnnxInt8:
        if (v < -128 || v > 127) return false;
        append(bytes, static_cast<int8_t>(v));
        return true;
    case kOnnxUint8:
        if (v < 0 || v > 255) return false;
        append(bytes, static_cast<uint8_t>(v));
        return true;
    case kOnnxBool:
        if (v != 0 && v != 1) return false;
        append(bytes, static_cast<uint8_t>(v));
        return true;
    default: return false;
    }
}

} // namespace

bool split_input_value(const std::string &spec, std::string &name, std::vector<std::string> &values) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    name = spec.substr(0, eq);
    values.clear();
    const std::string list = spec.substr(eq + 1);
    if (!list.empty()) // "NAME=" pins an input of no elements (an empty axes list)
        for (std::string_view part : split(list, ',')) values.emplace_back(part);
    return true;
}

void pin_input_values(IrGraph &g, const std::vector<std::string> &specs) {
    for (const std::string &spec : specs) {
        std::string name;
        std::vector<std::string> parts;
        if (!split_input_value(spec, name, parts))
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-value expects NAME=v0,v1,... but got '", spec, "'");
        auto it = std::find(g.inputs.begin(), g.inputs.end(), name);
        if (it == g.inputs.end())
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-value ", spec, ": the model has no input '", name, "'",
                 g.is_constant(name) ? " (it is an initializer)" : "");
        const ValueType *t = g.type_of(name);
        if (!t || !t->is_static())
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-value ", spec, ": input '", name, "' has the shape ",
                 t ? t->shape_text() : std::string("(unknown)"), "; fix it with --input-shape ", name, "=... first");
        const int32_t type = t->elem_type;
        if (type != kOnnxFloat && type != kOnnxFloat16 && type != kOnnxInt64 && type != kOnnxInt32 &&
            type != kOnnxInt8 && type != kOnnxUint8 && type != kOnnxBool)
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-value ", spec, ": input '", name, "' is ",
                 onnx_type_name(type), ", which cannot be pinned");
        const int64_t count = shape_numel(t->dims);
        if (static_cast<int64_t>(parts.size()) != count)
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-value ", spec, ": input '", name, "' of shape ",
                 t->shape_text(), " takes ", count, " value", count == 1 ? "" : "s", ", not ", parts.size());
        std::string bytes;
        for (const std::string &p : parts)
            if (!encode(type, p, bytes))
                fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "--input-value ", spec, ": '", p, "' is not a valid ",
                     onnx_type_name(type), " value");
        g.constants.emplace(name, ConstantData::in_memory(type, t->dims, std::move(bytes)));
        g.inputs.erase(it);
    }
}

} // namespace onnxstream::importer
