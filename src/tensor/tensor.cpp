#include "tensor/tensor.h"

#include "tensor/float8.h"
#include "tensor/half.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream {

int64_t shape_numel(const Shape &shape) {
    int64_t n = 1;
    if (!checked::product(shape, n))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "shape ", shape_str(shape), " has more elements than fit in 64 bits");
    return n;
}

std::string dims_text(const Shape &shape) {
    std::string out;
    for (size_t i = 0; i < shape.size(); ++i)
        out += (i ? "," : "") + (shape[i] == kAnyDim ? std::string("?") : std::to_string(shape[i]));
    return out;
}

std::string shape_str(const Shape &shape) { return "(" + dims_text(shape) + ")"; }

Tensor make_tensor(const Allocator &alloc, DType dtype, const Shape &shape) {
    for (int64_t d : shape)
        if (d < 0) fail(ONNXSTREAM_ERR_INTERNAL, "negative dimension in shape ", shape_str(shape));
    const size_t bytes = checked::size_bytes(shape, dtype_size(dtype), cat("a ", dtype_name(dtype), " tensor of shape ", shape_str(shape)));
    return Tensor(dtype, shape, alloc.allocate(bytes));
}

int64_t int_at(const Tensor &t, int64_t i) {
    switch (t.dtype()) {
    case DType::I64: return t.data<int64_t>()[i];
    case DType::I32: return t.data<int32_t>()[i];
    case DType::U8:
    case DType::U4:
    case DType::Bool: return t.data<uint8_t>()[i];
    case DType::I8:
    case DType::I4: return t.data<int8_t>()[i];
    case DType::I16: return t.data<int16_t>()[i];
    case DType::U16: return t.data<uint16_t>()[i];
    case DType::U32: return t.data<uint32_t>()[i];
    case DType::U64: return static_cast<int64_t>(t.data<uint64_t>()[i]);
    default: fail(ONNXSTREAM_ERR_INVALID_MODEL, "expected an integer tensor, got ", dtype_name(t.dtype()));
    }
}

std::vector<int64_t> int_values(const Tensor &t) {
    std::vector<int64_t> v(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = int_at(t, i);
    return v;
}

float float_at(const Tensor &t, int64_t i) {
    switch (t.dtype()) {
    case DType::F32: return t.data<float>()[i];
    case DType::F16: return half_to_float(t.data<uint16_t>()[i]);
    case DType::F64: return static_cast<float>(t.data<double>()[i]);
    case DType::BF16: return bfloat16_to_float(t.data<uint16_t>()[i]);
    default: {
        Float8Format f;
        if (float8_format(t.dtype(), f)) return float8_to_float(t.data<uint8_t>()[i], f);
        return static_cast<float>(int_at(t, i));
    }
    }
}

} // namespace onnxstream
