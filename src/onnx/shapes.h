// ONNX's own shape inference over the importer's graph.
#pragma once

#include "onnx/ir.h"

namespace onnxstream::importer {

// Re-run ONNX shape inference (with data propagation) and record the type of every value it can type in
// g.types. Graph input types are taken as they are (the --input-shape overrides live there). Small
// constants travel with their data so shape inputs (Reshape, Slice, Resize scales...) resolve; big ones
// only with their type. Throws INVALID_MODEL when ONNX finds the graph inconsistent.
void infer_types(IrGraph &g);

} // namespace onnxstream::importer
