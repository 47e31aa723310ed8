// Preconditions in front of ONNX shape-inference functions that trust their inputs.
//
// libonnx 1.12's Conv/ConvTranspose/pool inference reads one stride, dilation and pad per weight
// dimension from vectors sized by the *input's* rank, and divides by the strides: a weight whose rank
// differs from the input's, or a zero stride, is an out-of-bounds read or a division by zero inside the
// library (a crash, not an error). The ranks are only known while inference runs (they are inferred from
// upstream nodes), so the check wraps those operators' inference functions in the schema registry.
// Resize's and Pad's are wrapped too: for their opset-18+ forms (chosen axes, keep_aspect_ratio_policy),
// which the model keeps although it is read as opset 17, ONNX's opset-17 inference is wrong or fails, so
// they get the input's element type and rank and the engine's inference fills in the dimensions.
// The same wrappers correct MaxPool's and AveragePool's output sizes where ONNX's inference gets them
// wrong (ceil_mode's dropped last window, AveragePool's opset 19 dilations).
#pragma once

#include <cstddef>
#include <string>

namespace onnxstream::importer {

// Wraps the inference functions once per process; call before any ONNX pass runs. The wrappers throw
// onnxstream::Error (INVALID_MODEL) naming the operator and the inconsistent ranks or attribute.
void install_inference_guards();

// Whether op_type (default domain) is one of the guarded operators.
bool is_guarded_op(const std::string &op_type);
// The guarded inference calls made on this thread since the last reset. ONNX infers a flat graph's
// nodes in order, so after a guard failed, the count is the failing node's rank among the guarded ones.
void reset_guarded_calls();
size_t guarded_calls();
// The message of the guard that failed since the last reset on this thread, or "" (libonnx 1.17 wraps the
// exception a guard throws in its own, with a different text).
const std::string &guard_rejection();

} // namespace onnxstream::importer
