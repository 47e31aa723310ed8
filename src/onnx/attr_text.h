// ONNX node attributes in model.txt's text form, as OnnxStream's onnx2txt writes them: ints "1", lists
// "1,1", floats as the shortest text that reads back as the same float32 ("1e-05", "0.5"), strings as is,
// lists of strings joined by ',' ("Sigmoid,Tanh,Tanh"), a one-element tensor (ConstantOfShape's value) as the Python str() of its element ("0.0", "1", "True").
#pragma once

#include <string>
#include <vector>

#include "graph/model_txt.h"
#include "onnx/ir.h"

namespace onnxstream::importer {

// Shortest float32 text, always with a '.' or an exponent for finite values ("1.0", "1e-05", "-inf").
std::string float_text(float v);

// All attributes of `node`, in the node's order. Empty lists are left out (every ONNX op reads an empty
// list like an absent one). Throws UNSUPPORTED naming the node for kinds model.txt cannot carry
// (graphs, lists of tensors, sparse tensors), strings containing ';', '*' or line breaks, and list elements
// that are empty or contain ','.
std::vector<AttributeText> attributes_text(const Node &node, const std::string &model_dir);

} // namespace onnxstream::importer
