#include "weights/prepare.h"

#include <algorithm>
#include <vector>

#include "ops/layout.h"
#include "ops/quant_kernels.h"
#include "tensor/half.h"
#include "util/error.h"

namespace onnxstream {

namespace {

// A rank >= 3 weight seen as `count` planes (output channels) of `in` input channels x `positions` kernel
// positions: OIHW planes are [in][positions], OHWI planes [positions][in].
struct Planes {
    size_t count = 0, in = 0, positions = 0;
    size_t size() const { return in * positions; }
};

Planes planes_of(const Shape &shape) {
    Planes p;
    p.count = static_cast<size_t>(shape[0]);
    p.in = static_cast<size_t>(shape[1]);
    p.positions = 1;
    for (size_t d = 2; d < shape.size(); ++d) p.positions *= static_cast<size_t>(shape[d]);
    return p;
}

// The layout a request means for this tensor: OHWI only exists for kernels (rank >= 3).
Layout effective_layout(const Tensor &t, Layout want) { return t.rank() >= 3 ? want : Layout::Plain; }

// Does going from t's layout to `want` move any element? Not with one input channel or one kernel position.
bool moves_elements(const Tensor &t, Layout want) {
    if (t.rank() < 3 || t.layout() == want) return false;
    const Planes p = planes_of(t.shape());
    return p.in > 1 && p.positions > 1;
}

// Stored elements to float32, one plane (output channel `plane` of the tensor) at a time.
void plane_to_f32(const Tensor &t, size_t plane, int64_t first_row, float *dst) {
    const size_t n = planes_of(t.shape()).size();
    const uint8_t *src = static_cast<const uint8_t *>(t.raw()) + plane * n * dtype_size(t.dtype());
    if (t.dtype() == DType::F16) {
        half_to_float_n(reinterpret_cast<const uint16_t *>(src), dst, n);
        return;
    }
    // 8-bit: the shared dequantization kernel on a one-plane view, so the values are the ones the whole
    // weight would give (scales of axis 0 indexed by the whole weight's row).
    Shape one = t.shape();
    one[0] = 1;
    Tensor view(t.dtype(), one, borrow_storage(src, n, [] {}));
    view.set_quant(t.quant());
    view.set_layout(t.layout());
    dequantize_rows_f32(view, first_row + static_cast<int64_t>(plane), dst, nullptr);
}

void check_conversion(const Tensor &t, DType want) {
    if (t.dtype() == want) return;
    if (want == DType::F32 && t.dtype() == DType::F16) return;
    if (t.quant().blockwise())
        fail(ONNXSTREAM_ERR_UNSUPPORTED, "an int4 weight ", shape_str(t.quant().logical_shape),
             " is never converted: it computes only in int8 arithmetic");
    if (want == DType::F32 && (t.dtype() == DType::U8 || t.dtype() == DType::I8)) {
        if (!is_quantized_weight(t))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, "an 8-bit weight ", shape_str(t.shape()),
                 " needs quantization parameters to be read as float32");
        return;
    }
    fail(ONNXSTREAM_ERR_UNSUPPORTED, "no conversion of a ", dtype_name(t.dtype()), " weight to ", dtype_name(want));
}

// Same element type, other order: the blocked transposes of ops/layout.h, one plane per batch entry.
void reorder(const Tensor &src, Tensor &dst, size_t rows, size_t cols, size_t planes, pthreadpool_t pool) {
    switch (dtype_size(src.dtype())) {
    case 4: transpose_batched(src.data<float>(), dst.data<float>(), planes, rows, cols, pool); break;
    case 2: transpose_batched_u16(src.data<uint16_t>(), dst.data<uint16_t>(), planes, rows, cols, pool); break;
    case 1: transpose_batched_u8(src.data<uint8_t>(), dst.data<uint8_t>(), planes, rows, cols, pool); break;
    default:
        fail(ONNXSTREAM_ERR_UNSUPPORTED, "reordering a ", dtype_name(src.dtype()), " weight ", shape_str(src.shape()));
    }
}

} // namespace

Tensor prepare_weight(const Tensor &stored, const WeightPrep &want, int64_t first_row, const Allocator &alloc,
                      pthreadpool_t pool, uint64_t *bytes_copied) {
    check_conversion(stored, want.dtype);
    const Layout layout = effective_layout(stored, want.layout);
    const bool convert = stored.dtype() != want.dtype;
    const bool move = moves_elements(stored, layout);
    if (!convert && !move) {
        Tensor same = stored; // shares the storage; only the label changes
        if (stored.rank() >= 3) same.set_layout(layout);
        return same;
    }
    Tensor out = make_tensor(alloc, want.dtype, stored.shape());
    out.set_layout(stored.rank() >= 3 ? layout : Layout::Plain);
    if (!convert) out.set_quant(stored.quant());
    const size_t n = static_cast<size_t>(stored.numel());

    if (!move) { // conversion only, in the order stored
        if (stored.dtype() == DType::F16) half_to_float_parallel(stored.data<uint16_t>(), out.data<float>(), n, pool);
        else dequantize_rows_f32(stored, first_row, out.data<float>(), pool);
    } else {
        // Plain planes are [in][positions]; OHWI planes [positions][in].
        const Planes p = planes_of(stored.shape());
        const bool to_ohwi = layout == Layout::OHWI;
        const size_t rows = to_ohwi ? p.in : p.positions, cols = to_ohwi ? p.positions : p.in;
        if (!convert) {
            reorder(stored, out, rows, cols, p.count, pool);
        } else {
            // Each task converts a plane into a buffer of its own and transposes it into place: one pass
            // over the weight, never a whole converted copy beside the result.
            float *dst = out.data<float>();
            parallel_for(pool, p.count, 1, [&](size_t b, size_t e) {
                std::vector<float> plane(p.size());
                for (size_t o = b; o < e; ++o) {
                    plane_to_f32(stored, o, first_row, plane.data());
                    transpose_batched(plane.data(), dst + o * p.size(), 1, rows, cols, nullptr);
                }
            });
        }
    }
    if (bytes_copied) *bytes_copied += out.byte_size();
    return out;
}

Tensor serve_layout(Tensor stored, const WeightSpec &spec, const Allocator &alloc, std::atomic<uint64_t> *copied) {
    if (spec.wanted == Layout::OHWI || stored.layout() == Layout::Plain) return stored;
    uint64_t bytes = 0;
    Tensor plain = prepare_weight(stored, WeightPrep{Layout::Plain, stored.dtype()}, 0, alloc, nullptr, &bytes);
    if (copied) *copied += bytes;
    return plain;
}

} // namespace onnxstream
