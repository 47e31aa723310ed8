// Structural validation of an untrusted ONNX model, run before any pass of the ONNX library sees it.
//
// Debian's libonnx (1.12) version converter and shape inference index inputs, attributes and producers
// without checking they exist: a model that names a missing input or leaves out a required one crashes
// the process there. So everything those passes take for granted is checked here first, and a model that
// breaks it fails with INVALID_MODEL and a message naming the node or tensor.
#pragma once

#include <string>

#include <onnx/onnx_pb.h>

namespace onnxstream::importer {

// The whole model: the opset imports, the main graph and every subgraph (If/Loop/Scan bodies) and every
// model-local function body. Checks, for every node, its input/output counts and its attributes' names
// and types against the operator's schema at the model's opset (nodes of domains the ONNX library does
// not know are left to the supported-op check), that required inputs and outputs are not left empty,
// that every name it reads is a graph input, an initializer, an outer-scope value or another node's
// output, that no value is produced twice, that the nodes form no cycle, and that every initializer's
// and tensor attribute's data matches its dims and data type. `path` names the model in messages.
void validate_model(const onnx::ModelProto &m, const std::string &path);

// One TensorProto: known data type, non-negative dims whose element and byte counts fit 64 bits, and
// raw_data or the typed field holding exactly that many bytes or values. External data is checked where
// it is read (constant_from_proto). `what` names the tensor.
void validate_tensor(const onnx::TensorProto &t, const std::string &what);

} // namespace onnxstream::importer
