// Tensor metadata (dtype, shape, quantization, layout) plus shared storage. Copying a Tensor shares
// its storage, which is how zero-copy ops (Reshape, Squeeze, ...) produce their outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tensor/allocator.h"
#include "tensor/dtype.h"

namespace onnxstream {

using Shape = std::vector<int64_t>;
// A dimension model.txt writes as '?': any size, set by the pushed inputs (a model converted with
// onnxstream-convert --resizable). Only declarations hold it, never a tensor.
constexpr int64_t kAnyDim = -1;

// The product of the dims; throws INVALID_MODEL when it does not fit in int64 (see util/checked.h).
int64_t shape_numel(const Shape &shape);
// "1,4,64,64": the dimensions comma-separated, kAnyDim as '?' (model.txt's spelling).
std::string dims_text(const Shape &shape);
std::string shape_str(const Shape &shape); // "(1,3,640,640)"

// Physical order of a 4-D tensor's elements. Conv weights are declared OIHW (NCHW) in model.txt but
// OnnxStream also ships them as OHWI ("_nhwc.bin"), which is what XNNPACK packs from directly. NHWC: an
// activation whose shape stays the logical (N,C,H,W) but whose data is channels-last (the layout plan,
// graph/layout_plan.h); only ops the plan chose for it ever see one.
enum class Layout { Plain, OHWI, NHWC };

// 8-bit weight quantization: value = (q - zero_point) * scale. Per-tensor (OnnxStream's uint8[scale,zp])
// uses scale/zero_point; per-channel symmetric int8 (int8[@scales.bin,axis]) has zero point 0 and one scale
// per index along `axis`, which is 0 (output channel of Conv OIHW/OHWI, Gemm transB=1) or the last dim
// (MatMul [K,N], Gemm transB=0). The scales are shared by every tensor and chunk of the same weight.
struct QuantParams {
    bool present = false;
    double scale = 1.0;
    int64_t zero_point = 0;
    int axis = -1; // >= 0: per-channel
    std::shared_ptr<const std::vector<float>> channel_scales;
    // Blockwise int4 (int4[block,axis], tensor/int4_blocks.h): block > 0, axis is the K axis, and the weight
    // is held as its stored uint8 rows; logical_shape is the declared shape ops see in shape inference.
    int64_t block = 0;
    Shape logical_shape;
    bool per_channel() const { return axis >= 0 && block == 0; }
    bool blockwise() const { return block > 0; }
};

struct TensorInfo {
    DType dtype = DType::F32;
    Shape shape;
    QuantParams quant;
};

class Tensor {
public:
    Tensor() = default;
    Tensor(DType dtype, Shape shape, std::shared_ptr<Storage> storage)
        : dtype_(dtype), shape_(std::move(shape)), storage_(std::move(storage)) {}

    DType dtype() const { return dtype_; }
    const Shape &shape() const { return shape_; }
    size_t rank() const { return shape_.size(); }
    int64_t dim(size_t i) const { return shape_[i]; }
    int64_t numel() const { return shape_numel(shape_); }
    size_t byte_size() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
    bool empty() const { return !storage_; }

    Layout layout() const { return layout_; }
    void set_layout(Layout layout) { layout_ = layout; }
    const QuantParams &quant() const { return quant_; }
    void set_quant(const QuantParams &q) { quant_ = q; }
    TensorInfo info() const { return {dtype_, shape_, quant_}; }

    const std::shared_ptr<Storage> &storage() const { return storage_; }
    void *raw() const { return storage_ ? storage_->data() : nullptr; }
    template <typename T> T *data() const { return static_cast<T *>(raw()); }

    // Same storage, another shape with the same element count (caller checks).
    Tensor reshaped(Shape shape) const {
        Tensor t = *this;
        t.shape_ = std::move(shape);
        return t;
    }

private:
    DType dtype_ = DType::F32;
    Shape shape_;
    std::shared_ptr<Storage> storage_;
    Layout layout_ = Layout::Plain;
    QuantParams quant_;
};

// Allocate an uninitialised tensor.
Tensor make_tensor(const Allocator &alloc, DType dtype, const Shape &shape);

// Read element i of an integer tensor (I64, I32, U8, I8, Bool) as int64 - for shape-like inputs.
int64_t int_at(const Tensor &t, int64_t i);
// Read an integer tensor's values (for shape/axes/pads inputs); throws if not integral.
std::vector<int64_t> int_values(const Tensor &t);
// Read element i of a float tensor (F32/F16) as float.
float float_at(const Tensor &t, int64_t i);

} // namespace onnxstream
