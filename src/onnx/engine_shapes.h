// The engine's own shape inference, where ONNX's leaves a value without a static type.
#pragma once

#include <string>

#include "onnx/ir.h"

namespace onnxstream::importer {

// For each node (in order) with an output of no static type whose inputs all have static types, ask the
// engine's infer for that op (with small constant inputs' data) and record what it gives in g.types and
// g.engine_typed. ONNX's inference leaves symbolic what it cannot see through: Einsum's output in ONNX 1.12,
// ops newer than the library, engine-only ops. True when a type was recorded.
bool infer_with_engine(IrGraph &g);

// Why neither inference gives node n's outputs a static shape (the engine's reason), or "" if it does.
std::string why_no_static_shape(const IrGraph &g, const Node &n);

} // namespace onnxstream::importer
