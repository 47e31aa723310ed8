// Element types. The numeric values are the public onnxstream_dtype_t values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "onnxstream.h"

namespace onnxstream {

enum class DType : int {
    F32 = ONNXSTREAM_DTYPE_FLOAT32,
    F16 = ONNXSTREAM_DTYPE_FLOAT16,
    I64 = ONNXSTREAM_DTYPE_INT64,
    U8 = ONNXSTREAM_DTYPE_UINT8,
    I8 = ONNXSTREAM_DTYPE_INT8,
    I32 = ONNXSTREAM_DTYPE_INT32,
    Bool = ONNXSTREAM_DTYPE_BOOL,
};

size_t dtype_size(DType dtype);
// Name as written in model.txt: float32, float16, int64, uint8, int8, int32, bool.
const char *dtype_name(DType dtype);
// Parse a model.txt dtype name; false if unknown.
bool parse_dtype(std::string_view text, DType &out);
// True for values that are a known DType.
bool dtype_valid(int value);
inline bool is_float(DType d) { return d == DType::F32 || d == DType::F16; }

} // namespace onnxstream
