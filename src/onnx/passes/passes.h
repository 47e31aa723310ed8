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

// dedup_constants.cpp: constants with the same type, shape and bytes become one (compared in bounded
// chunks, so external weights are never loaded whole).
bool dedup_constants(IrGraph &g);

// fuse_chains.cpp: Transpose∘Transpose, chains of Reshape/Squeeze/Unsqueeze/Flatten (one Reshape to the
// static shape), and Slice∘Slice on disjoint axes, when the value between them has no other reader.
bool fuse_chains(IrGraph &g);

// fuse_pad.cpp: a constant Pad of spatial dims folds into the pads of the Conv / AveragePool (zero padding)
// or MaxPool (-inf padding) reading it, where that is exactly equivalent.
bool fuse_pad(IrGraph &g);

// matmul_bias.cpp: MatMul(2-D activation, constant [K,N]) + Add(constant bias) becomes Gemm.
bool matmul_add_to_gemm(IrGraph &g);
// matmul_bias.cpp: MatMul(activation of rank >= 3, constant [K,N]) + Add(constant [N] bias) becomes a MatMul
// with the bias as its third input. Run once the other fusions are done: they match MatMul + Add.
bool fuse_matmul_bias(IrGraph &g);

// conv1d_to_conv2d.cpp: Conv on (N,C,L) becomes Unsqueeze -> 2-D Conv with a (O,I/g,1,K) kernel -> Squeeze,
// so it runs on the engine's 2-D path.
bool conv1d_to_conv2d(IrGraph &g);

// groupnorm.cpp: torch's GroupNorm export, Reshape -> InstanceNormalization -> Reshape [-> Mul(gamma)]
// [-> Add(beta)], becomes one GroupNormalization with per-channel scale and bias; a per-channel Mul/Add after
// a plain InstanceNormalization folds into its scale and bias.
bool fuse_groupnorm(IrGraph &g);
// A GroupNormalization whose only reader is a Swish (SiLU) becomes one GroupNormSwish.
bool fuse_groupnorm_swish(IrGraph &g);

// layernorm.cpp: the opset < 17 LayerNorm formula (ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div
// [, Mul gamma][, Add beta]) over trailing axes becomes LayerNormalization.
bool fuse_layernorm(IrGraph &g);

// gelu.cpp: x * 0.5 * (1 + Erf(x / sqrt 2)) and the tanh approximation become Gelu.
bool fuse_gelu(IrGraph &g);

// swish.cpp: x * Sigmoid(x) (SiLU) and x * Sigmoid(alpha * x) (CLIP's QuickGELU, alpha a constant), in either
// operand order, become Swish (ONNX opset 24).
bool fuse_swish(IrGraph &g);

// attention.cpp: MatMul(Q, K^T) [-> Mul/Div scalar] [-> Add mask] -> Softmax(last axis) -> MatMul(., V)
// becomes ScaledDotProductAttention (when the engine has it).
bool fuse_attention(IrGraph &g);

// geglu_ffn.cpp: MatMul(x, W1) [+ b1] -> halves a | g of the last axis -> a * Gelu(g) -> MatMul(., W2) [+ b2]
// (or the Gemm forms) becomes GegluFeedForward(x, W1 transposed, b1, W2, b2).
bool fuse_geglu_ffn(IrGraph &g);

// inline_if.cpp: an If whose condition is a constant becomes the nodes of the branch it takes (nested Ifs
// inside stay Ifs until their own conditions fold).
bool inline_constant_ifs(IrGraph &g);

// flatten_if.cpp: an If whose condition is only known at run time becomes both branches' nodes, guarded
// by the condition (Node::guard), and an IfMerge node that takes each output from the branch that ran.
// Nested Ifs come out as guarded Ifs for the next call.
bool flatten_ifs(IrGraph &g);

// settle_guards.cpp: after other passes replaced guarded nodes, gives every node the guard its inputs and
// readers imply (see the file). Throws UNSUPPORTED when a guard folded to a constant.
bool settle_guards(IrGraph &g);

// unroll_loop.cpp: a Loop with a constant trip count (up to 1024) and a condition that stays true becomes
// its body once per iteration; its scan outputs and the lists it appends to (SequenceInsert, then
// ConcatFromSequence) become Concats.
bool unroll_loops(IrGraph &g);

// unroll_scan.cpp: a Scan whose scan inputs have static shapes (up to 1024 steps) becomes its body once per
// step, reading Gathers of the step's slices; scan outputs are stacked along their axes.
bool unroll_scans(IrGraph &g);

// eliminate_dead.cpp: nodes none of whose outputs are used, and constants no node reads.
bool eliminate_dead_code(IrGraph &g);

} // namespace onnxstream::importer
