// Graph simplification passes, one per file. Each returns true when it changed the graph; the importer
// runs them (with shape inference in between) until none does. Passes keep g.nodes topologically
// sorted and never change what the graph computes.
#pragma once

#include "onnx/evaluator.h"
#include "onnx/ir.h"

namespace onnxstream::importer {

// fold_constants.cpp: Constant nodes become constants; Shape/Size of statically shaped values become
// constants; every other node whose inputs are all constant is evaluated by the engine and replaced by
// its outputs (within `limits`, never for graph outputs or random ops). Results bigger than
// limits.small_bytes go to `spill` (when given) instead of staying in memory.
bool fold_constants(IrGraph &g, ConstantEvaluator &evaluator, const FoldLimits &limits,
                    const std::shared_ptr<SpillFile> &spill);

// eliminate_noop.cpp: Identity, Dropout (inference), Cast to the same type, and Reshape / Transpose /
// Expand / Pad / Concat / Split / Squeeze / Unsqueeze / Flatten that leave their input unchanged.
bool eliminate_noops(IrGraph &g);

// fuse_bn_conv.cpp: BatchNormalization (inference) right after a Conv with constant weights folds into
// the Conv's weight and bias.
bool fuse_batchnorm_into_conv(IrGraph &g);

// eliminate_dead.cpp: nodes none of whose outputs are used, and constants no node reads.
bool eliminate_dead_code(IrGraph &g);

} // namespace onnxstream::importer
