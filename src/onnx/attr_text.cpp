#include "onnx/attr_text.h"

#include <charconv>
#include <cmath>

#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

std::string float_text(float v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), v);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".e") == std::string::npos) s += ".0";
    return s;
}

namespace {

bool text_safe(const std::string &s) {
    for (unsigned char c : s)
        if (c == ';' || c == '*' || c < 0x20 || c == 0x7F) return false;
    return true;
}

// One tensor-valued attribute: its elements joined by ','. The element type is lost, so ConstantOfShape
// also gets a `dtype` attribute (ONNX type number) when the value is neither float32, int64 nor bool,
// which the engine's ConstantOfShape understands.
std::string tensor_text(const Node &node, const onnx::AttributeProto &a, const std::string &model_dir, int32_t &type) {
    onnx::TensorProto t = a.t();
    ConstantData c = constant_from_proto(t, model_dir, cat(node.describe(), " attribute '", a.name(), "'"));
    type = c.type();
    std::string out;
    if (c.type() == kOnnxFloat || c.type() == kOnnxFloat16 || c.type() == kOnnxDouble) {
        for (float v : c.float_values()) out += (out.empty() ? "" : ",") + float_text(v);
    } else if (c.type() == kOnnxBool) {
        for (int64_t v : c.int_values()) out += std::string(out.empty() ? "" : ",") + (v ? "True" : "False");
    } else if (onnx_type_size(c.type()) != 0 && !onnx_bits_only_type(c.type())) {
        for (int64_t v : c.int_values()) out += (out.empty() ? "" : ",") + std::to_string(v);
    } else {
        fail(ONNXSTREAM_ERR_UNSUPPORTED, node.describe(), ": attribute '", a.name(), "' is a ",
             onnx_type_name(c.type()), " tensor, which model.txt cannot store");
    }
    return out;
}

} // namespace

std::vector<AttributeText> attributes_text(const Node &node, const std::string &model_dir) {
    std::vector<AttributeText> out;
    for (const auto &a : node.attrs) {
        AttributeText t;
        t.key = a.name();
        auto type = a.type();
        // Very old exporters leave the type out; the populated field tells it.
        if (type == onnx::AttributeProto::UNDEFINED) {
            if (a.ints_size())
                type = onnx::AttributeProto::INTS;
            else if (a.floats_size())
                type = onnx::AttributeProto::FLOATS;
            else if (a.strings_size())
                type = onnx::AttributeProto::STRINGS;
            else if (a.has_i())
                type = onnx::AttributeProto::INT;
            else if (a.has_f())
                type = onnx::AttributeProto::FLOAT;
            else if (a.has_s())
                type = onnx::AttributeProto::STRING;
            else if (a.has_t())
                type = onnx::AttributeProto::TENSOR;
            else if (a.has_g())
                type = onnx::AttributeProto::GRAPH;
        }
        switch (type) {
        case onnx::AttributeProto::INT: t.value = std::to_string(a.i()); break;
        case onnx::AttributeProto::FLOAT: t.value = float_text(a.f()); break;
        case onnx::AttributeProto::INTS:
            if (a.ints_size() == 0) continue;
            t.value = join_ints(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
            break;
        case onnx::AttributeProto::FLOATS:
            if (a.floats_size() == 0) continue;
            for (float v : a.floats()) t.value += (t.value.empty() ? "" : ",") + float_text(v);
            break;
        case onnx::AttributeProto::STRINGS:
            // Joined by ',' like the numeric lists (the recurrent ops' activations: "Sigmoid,Tanh,Tanh").
            if (a.strings_size() == 0) continue;
            for (int k = 0; k < a.strings_size(); ++k) {
                const std::string &s = a.strings(k);
                if (s.empty() || s.find(',') != std::string::npos || !text_safe(s))
                    fail(ONNXSTREAM_ERR_UNSUPPORTED, node.describe(), ": element ", k, " of string list attribute '",
                         a.name(), "' is empty or contains ',', ';', '*' or a control character, which model.txt "
                         "cannot store");
                t.value += (t.value.empty() ? "" : ",") + s;
            }
            break;
        case onnx::AttributeProto::STRING:
            t.value = a.s();
            if (!text_safe(t.value))
                fail(ONNXSTREAM_ERR_UNSUPPORTED, node.describe(), ": string attribute '", a.name(),
                     "' contains ';', '*' or a control character, which model.txt cannot store");
            break;
        case onnx::AttributeProto::TENSOR: {
            int32_t elem = 0;
            t.value = tensor_text(node, a, model_dir, elem);
            out.push_back(t);
            if (node.op_type == "ConstantOfShape" && elem != kOnnxFloat && elem != kOnnxInt64 && elem != kOnnxBool &&
                !node.attr("dtype"))
                out.push_back({"dtype", std::to_string(elem), 0});
            continue;
        }
        default:
            fail(ONNXSTREAM_ERR_UNSUPPORTED, node.describe(), ": attribute '", a.name(), "' is of ONNX kind ",
                 onnx::AttributeProto::AttributeType_Name(type), ", which model.txt cannot store");
        }
        if (t.key.empty() || !text_safe(t.key) || t.key.find(':') != std::string::npos)
            fail(ONNXSTREAM_ERR_UNSUPPORTED, node.describe(), ": attribute name '", t.key,
                 "' cannot be written to model.txt");
        out.push_back(std::move(t));
    }
    return out;
}

} // namespace onnxstream::importer
