// Typed access to an op's attributes. model.txt stores attribute values untyped ("1,1", "-0.75",
// "nearest"), so the op that reads one says which type it expects; a value of the wrong form is an
// INVALID_MODEL error naming the op line and attribute.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxstream {

// One `KEY:VALUE` of a model.txt line, as written. It lives here rather than beside the parser
// (graph/model_txt.h) so that ops, which read it, do not depend on the graph layer above them.
struct AttributeText {
    std::string key;
    std::string value;
    int column = 0;
};

class Attributes {
public:
    Attributes() = default;
    Attributes(const std::vector<AttributeText> *attrs, std::string where) : attrs_(attrs), where_(std::move(where)) {}

    bool has(const std::string &key) const { return find(key) != nullptr; }
    int64_t get_int(const std::string &key, int64_t fallback) const;
    int64_t require_int(const std::string &key) const;
    float get_float(const std::string &key, float fallback) const;
    std::vector<int64_t> get_ints(const std::string &key, const std::vector<int64_t> &fallback = {}) const;
    std::vector<float> get_floats(const std::string &key, const std::vector<float> &fallback = {}) const;
    std::string get_string(const std::string &key, const std::string &fallback) const;
    // Raw text, or nullptr.
    const std::string *raw(const std::string &key) const;

private:
    const AttributeText *find(const std::string &key) const;
    [[noreturn]] void bad(const AttributeText &a, const char *expected) const;

    const std::vector<AttributeText> *attrs_ = nullptr;
    std::string where_;
};

} // namespace onnxstream
