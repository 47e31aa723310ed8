// Models of opsets 18 to 22 are read as opset 17 (see the .cpp for why and how).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace onnxstream::importer {

// The opset every newer model is read as: the newest Debian 12's ONNX library knows.
constexpr int64_t kReadAsOpset = 17;
// The newest opset whose changes the rewrite knows.
constexpr int64_t kNewestReadableOpset = 22;

// Rewrite the nodes of a model of a newer default opset (up to kNewestReadableOpset) into their opset-17
// forms, subgraphs and model-local functions included, and make it import opset 17. Returns the model's
// original default opset. Throws UNSUPPORTED naming the node for a form opset 17 cannot express.
// `input_values`: --input-value specs (NAME=v0,v1,...); a pinned graph input counts as a constant here.
int64_t downgrade_to_opset17(onnx::ModelProto &m, const std::string &path, const std::string &model_dir,
                             const std::vector<std::string> &input_values = {});

} // namespace onnxstream::importer
