// Minimal NumPy .npy reader/writer (format versions 1-3, little-endian, C order): onnxstream-run's inputs and
// outputs, the converter's calibration inputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "onnxstream.h"

namespace onnxstream::tools {

struct NpyArray {
    onnxstream_dtype_t dtype = ONNXSTREAM_DTYPE_FLOAT32;
    std::vector<int64_t> shape;
    std::vector<uint8_t> data;
};

// Throw onnxstream::Error (a std::runtime_error) with a clear message on any problem: IO when the file
// cannot be read, INVALID_ARGUMENT for a malformed or truncated array. `source` names the data in messages.
NpyArray read_npy(const std::string &path);
NpyArray parse_npy(const std::string &bytes, const std::string &source);
void write_npy(const std::string &path, onnxstream_dtype_t dtype, const std::vector<int64_t> &shape,
               const void *data, size_t bytes);

} // namespace onnxstream::tools
