#include "tensor/dtype.h"

namespace onnxstream {

namespace {
struct DTypeInfo {
    DType dtype;
    const char *name;
    size_t size;
    int onnx_type; // TensorProto.DataType
};
constexpr DTypeInfo kInfos[] = {
    {DType::F32, "float32", 4, 1}, {DType::F16, "float16", 2, 10}, {DType::F64, "float64", 8, 11},
    {DType::I64, "int64", 8, 7},   {DType::I32, "int32", 4, 6},    {DType::I16, "int16", 2, 5},
    {DType::I8, "int8", 1, 3},     {DType::U64, "uint64", 8, 13},  {DType::U32, "uint32", 4, 12},
    {DType::U16, "uint16", 2, 4},  {DType::U8, "uint8", 1, 2},     {DType::Bool, "bool", 1, 9},
    {DType::BF16, "bfloat16", 2, 16},
    {DType::F8E4M3FN, "float8e4m3fn", 1, 17}, {DType::F8E4M3FNUZ, "float8e4m3fnuz", 1, 18},
    {DType::F8E5M2, "float8e5m2", 1, 19},     {DType::F8E5M2FNUZ, "float8e5m2fnuz", 1, 20},
    {DType::I4, "int4", 1, 22},               {DType::U4, "uint4", 1, 21},
};
} // namespace

size_t dtype_size(DType dtype) {
    for (const auto &info : kInfos)
        if (info.dtype == dtype) return info.size;
    return 0;
}

const char *dtype_name(DType dtype) {
    for (const auto &info : kInfos)
        if (info.dtype == dtype) return info.name;
    return "unknown";
}

bool parse_dtype(std::string_view text, DType &out) {
    for (const auto &info : kInfos) {
        if (text == info.name) {
            out = info.dtype;
            return true;
        }
    }
    return false;
}

bool dtype_from_onnx(int64_t onnx_type, DType &out) {
    for (const auto &info : kInfos) {
        if (info.onnx_type == onnx_type) {
            out = info.dtype;
            return true;
        }
    }
    return false;
}

int dtype_onnx_type(DType dtype) {
    for (const auto &info : kInfos)
        if (info.dtype == dtype) return info.onnx_type;
    return 0;
}

const char *onnx_types_supported() {
    return "1 (float), 10 (float16), 11 (double), 16 (bfloat16), 7 (int64), 6 (int32), 5 (int16), 3 (int8), "
           "13 (uint64), 12 (uint32), 4 (uint16), 2 (uint8), 9 (bool), 17 (float8e4m3fn), 18 (float8e4m3fnuz), "
           "19 (float8e5m2), 20 (float8e5m2fnuz), 22 (int4), 21 (uint4)";
}

bool dtype_valid(int value) {
    for (const auto &info : kInfos)
        if (static_cast<int>(info.dtype) == value) return true;
    return false;
}

} // namespace onnxstream
