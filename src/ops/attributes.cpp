#include "ops/attributes.h"

#include "util/error.h"
#include "util/strings.h"

namespace onnxstream {

const AttributeText *Attributes::find(const std::string &key) const {
    if (!attrs_) return nullptr;
    for (const auto &a : *attrs_)
        if (a.key == key) return &a;
    return nullptr;
}

void Attributes::bad(const AttributeText &a, const char *expected) const {
    fail(ONNXSTREAM_ERR_INVALID_MODEL, where_, ": attribute '", a.key, "' has value '", a.value, "', expected ",
         expected);
}

const std::string *Attributes::raw(const std::string &key) const {
    const AttributeText *a = find(key);
    return a ? &a->value : nullptr;
}

int64_t Attributes::get_int(const std::string &key, int64_t fallback) const {
    const AttributeText *a = find(key);
    if (!a) return fallback;
    int64_t v = 0;
    if (!parse_int64(a->value, v)) bad(*a, "an integer");
    return v;
}

int64_t Attributes::require_int(const std::string &key) const {
    if (!find(key)) fail(ONNXSTREAM_ERR_INVALID_MODEL, where_, ": required attribute '", key, "' is missing");
    return get_int(key, 0);
}

float Attributes::get_float(const std::string &key, float fallback) const {
    const AttributeText *a = find(key);
    if (!a) return fallback;
    double v = 0;
    if (!parse_double(a->value, v)) bad(*a, "a number");
    return static_cast<float>(v);
}

std::vector<int64_t> Attributes::get_ints(const std::string &key, const std::vector<int64_t> &fallback) const {
    const AttributeText *a = find(key);
    if (!a) return fallback;
    std::vector<int64_t> out;
    if (a->value.empty()) return out;
    for (auto part : split(a->value, ',')) {
        int64_t v = 0;
        if (!parse_int64(part, v)) bad(*a, "a comma-separated list of integers");
        out.push_back(v);
    }
    return out;
}

std::vector<float> Attributes::get_floats(const std::string &key, const std::vector<float> &fallback) const {
    const AttributeText *a = find(key);
    if (!a) return fallback;
    std::vector<float> out;
    if (a->value.empty()) return out;
    for (auto part : split(a->value, ',')) {
        double v = 0;
        if (!parse_double(part, v)) bad(*a, "a comma-separated list of numbers");
        out.push_back(static_cast<float>(v));
    }
    return out;
}

std::string Attributes::get_string(const std::string &key, const std::string &fallback) const {
    const AttributeText *a = find(key);
    return a ? a->value : fallback;
}

} // namespace onnxstream
