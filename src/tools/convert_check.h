// onnxstream-convert --check: runs a converted folder and ONNX Runtime (onnxruntime-node, through
// check_ort.js) on the same inputs and prints each output's error.
#pragma once

#include <string>
#include <vector>

namespace onnxstream::tools {

struct CheckOptions {
    std::string model_onnx, folder;
    std::vector<std::string> input_shapes; // NAME=d0,d1,... as given to the converter
    std::vector<std::string> input_values; // NAME=v0,v1,...: inputs the converter pinned (ONNX Runtime gets them)
    std::string inputs_dir;                // the user's inputs (NAME.npy), or "" for generated ones
    std::string node = "node";             // the node executable
    double tolerance = 1e-4;               // largest relative L2 error accepted per float output
};

// Prints one line per output and returns true when every output is within the tolerance (integer and
// bool outputs must be equal). Throws std::runtime_error when the check cannot run (no node or
// onnxruntime-node, a model that does not load or run).
bool check_conversion(const CheckOptions &options);

} // namespace onnxstream::tools
