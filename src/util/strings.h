// Small string helpers shared by the parser, the CLI and the C API.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace onnxstream {

// Split on every occurrence of sep (empty fields kept: "a;;b" -> {"a","","b"}).
std::vector<std::string_view> split(std::string_view text, char sep);

// OnnxStream escapes every character outside [A-Za-z0-9] as _XX_ (XX = uppercase hex):
// "input.1" -> "input_2E_1", "onnx::Gemm_5" -> "onnx_3A__3A_Gemm_5F_5".
std::string escape_name(std::string_view name);
// Inverse of escape_name; text that is not a valid escape is kept as is.
std::string unescape_name(std::string_view name);

// Strict number parsing: the whole text must be a number. Return false otherwise.
bool parse_int64(std::string_view text, int64_t &out);
bool parse_double(std::string_view text, double &out);

// Join integers as "1,3,640,640".
std::string join_ints(const std::vector<int64_t> &values, const char *sep = ",");

bool ends_with(std::string_view text, std::string_view suffix);

// `text` as the inside of a JSON string: quote and backslash escaped, control characters as \u00XX.
std::string json_escape(std::string_view text);

// Offset of the first byte that does not belong to well-formed UTF-8 (no overlong forms, no surrogates,
// nothing above U+10FFFF), or std::string_view::npos when all of `text` is valid.
size_t first_invalid_utf8(std::string_view text);

} // namespace onnxstream
