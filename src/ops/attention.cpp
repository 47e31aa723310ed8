// ScaledDotProductAttention: softmax(Q Kᵀ·scale + mask) V as one op (being written).
#include "ops/registry.h"

namespace onnxstream {

void register_attention_ops(Registry &) {}

} // namespace onnxstream
