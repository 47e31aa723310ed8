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
    F64 = ONNXSTREAM_DTYPE_FLOAT64,
    I16 = ONNXSTREAM_DTYPE_INT16,
    U16 = ONNXSTREAM_DTYPE_UINT16,
    U32 = ONNXSTREAM_DTYPE_UINT32,
    U64 = ONNXSTREAM_DTYPE_UINT64,
    BF16 = ONNXSTREAM_DTYPE_BFLOAT16,
    F8E4M3FN = ONNXSTREAM_DTYPE_FLOAT8E4M3FN,
    F8E4M3FNUZ = ONNXSTREAM_DTYPE_FLOAT8E4M3FNUZ,
    F8E5M2 = ONNXSTREAM_DTYPE_FLOAT8E5M2,
    F8E5M2FNUZ = ONNXSTREAM_DTYPE_FLOAT8E5M2FNUZ,
    I4 = ONNXSTREAM_DTYPE_INT4, // one value per byte (ONNX packs two): data movement needs no sub-byte access
    U4 = ONNXSTREAM_DTYPE_UINT4,
};

size_t dtype_size(DType dtype);
// Name as written in model.txt: float32, float16, int64, uint8, int8, int32, bool, float64, int16, uint16,
// uint32, uint64, bfloat16, float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz, int4, uint4.
const char *dtype_name(DType dtype);
// Parse a model.txt dtype name; false if unknown.
bool parse_dtype(std::string_view text, DType &out);
// True for values that are a known DType.
bool dtype_valid(int value);
// The DType of an ONNX TensorProto element type number (Cast's 'to', EyeLike's 'dtype'); false for types
// the engine has no DType for.
bool dtype_from_onnx(int64_t onnx_type, DType &out);
// The ONNX element type number of a dtype.
int dtype_onnx_type(DType dtype);
// The ONNX element types dtype_from_onnx takes, for error messages: "1 (float), 10 (float16), ...".
const char *onnx_types_supported();
// The float dtypes computed in float32 (float16 staged through float32); float64 is computed in double by the
// ops that take it.
inline bool is_float(DType d) { return d == DType::F32 || d == DType::F16; }

} // namespace onnxstream
