// onnxstream-convert --resizable: one model folder for many input sizes. The graph is simplified twice,
// for the declared input shapes and for a second ("probe") size; both must come out with the same nodes.
// What differs is only what follows the input size: the declared shapes of activations, which become '?'
// (kAnyDim) in model.txt, and the integer constants the ONNX graph computed from shapes (Reshape targets,
// Expand shapes) and folding fixed for one size, which become InputDims nodes (ops/input_dims.cpp) whose
// entries are found as products of input dimensions that give both sizes' values.
#pragma once

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onnx/ir.h"

namespace onnxstream::importer {

// Turns `g` (simplified for the declared shapes) into its resizable form, given `probe`, the same model
// simplified with the probe shapes of `resizable` (input name -> probe shape; each of these inputs' dims
// that differ from the declared ones become resizable). Fills `any_dims` (value -> per-dimension flag) for
// the writer. Throws UNSUPPORTED naming the first node, attribute or constant that differs between the
// two sizes in a way no such form can express.
void make_resizable(IrGraph &g, const IrGraph &probe, const std::vector<std::pair<std::string, Shape>> &resizable,
                    std::unordered_map<std::string, std::vector<bool>> &any_dims);

} // namespace onnxstream::importer
