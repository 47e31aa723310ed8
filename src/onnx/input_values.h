// --input-value NAME=v0,v1,...: a graph input pinned to a value at conversion becomes a constant, so what
// depends on it folds away (an If on a sample-rate input, a Reshape reading a size from an input).
#pragma once

#include <string>
#include <vector>

#include "onnx/ir.h"

namespace onnxstream::importer {

// Each spec is "NAME=v0,v1,..." with as many values as the input's static shape has elements (a scalar
// takes one), in its element type (integers for int64/int32/int8/uint8, 0/1 for bool, numbers for float
// and float16). The input leaves the converted model's inputs. Throws INVALID_ARGUMENT naming the spec.
void pin_input_values(IrGraph &g, const std::vector<std::string> &specs);

// One spec as text: the input's name and its value texts ("NAME=" has none). False, with `name` and
// `values` unspecified, when the spec has no "NAME=" (pin_input_values reports it).
bool split_input_value(const std::string &spec, std::string &name, std::vector<std::string> &values);

} // namespace onnxstream::importer
