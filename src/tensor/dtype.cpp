#include "tensor/dtype.h"

namespace onnxstream {

namespace {
struct DTypeInfo {
    DType dtype;
    const char *name;
    size_t size;
};
constexpr DTypeInfo kInfos[] = {
    {DType::F32, "float32", 4}, {DType::F16, "float16", 2}, {DType::I64, "int64", 8},
    {DType::U8, "uint8", 1},    {DType::I8, "int8", 1},     {DType::I32, "int32", 4},
    {DType::Bool, "bool", 1},
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

bool dtype_valid(int value) {
    for (const auto &info : kInfos)
        if (static_cast<int>(info.dtype) == value) return true;
    return false;
}

} // namespace onnxstream
