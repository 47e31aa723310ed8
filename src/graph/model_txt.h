// OnnxStream's model.txt format: one operation per line,
//   NAME:TYPE*input:IN;IN;...*output:OUT;...[*ATTR:VALUE;ATTR:VALUE...]
// where an input/output is an activation `escaped_name(d0,d1,...)`, a weight
// `file.bin(dtype:d0,d1,...)` / `file.bin(uint8[scale,zero_point]:d0,...)` (OnnxStream's per-tensor 8-bit
// weights) / `file.bin(int8[@scales.bin,axis]:d0,...)` (per-channel symmetric int8: one float32 scale per
// index along `axis`, read from scales.bin), or empty (omitted optional input). Parsing keeps every token's text so that writing gives back the same bytes.
#pragma once

#include <string>
#include <vector>

#include "ops/attributes.h"
#include "tensor/tensor.h"

namespace onnxstream {

// The attribute that makes an op conditional: `onnxstream_guard:VALUE` runs the op only when VALUE, a
// one-element bool activation computed earlier, holds true (see docs/model-format.md, "Run-time If").
constexpr const char *kGuardAttribute = "onnxstream_guard";

struct TensorRef {
    bool present = true;     // false for an omitted optional input (";;")
    bool is_weight = false;  // "file.bin(dtype:...)"
    std::string name;        // escaped activation name, or the weight file name
    Shape shape;
    DType dtype = DType::F32; // weights only; activations get theirs from inference
    QuantParams quant;        // weights only, "uint8[scale,zero_point]" or "int8[@scales.bin,axis]"
    std::string quant_text;   // "scale,zero_point" / "@scales.bin,axis" exactly as written (round trip)
    std::string scales_file;  // per-channel: the float32 scales file (quant.channel_scales loads later)
    int column = 0;           // 1-based column of the reference in its line
};

struct OpLine {
    int line = 0; // 1-based line number in the file
    std::string name;
    std::string type;
    std::vector<TensorRef> inputs;
    std::vector<TensorRef> outputs;
    std::vector<AttributeText> attrs;
    bool has_attr_section = false; // a 4th '*' section exists (possibly empty)
};

struct ModelText {
    std::vector<OpLine> ops;
    bool crlf = false;             // lines end with \r\n
    bool trailing_newline = true;  // the last line ends with a newline
    std::vector<int> blank_lines;  // line numbers of empty lines (kept for the round trip)
};

// Parse model.txt text. `source` names the file in error messages ("dir/model.txt").
// Throws Error(INVALID_MODEL) with "source:line:column: reason".
ModelText parse_model_txt(const std::string &text, const std::string &source);

// Write model.txt text; parse_model_txt(write_model_txt(m)) == m and, for text that parse accepted,
// write_model_txt(parse_model_txt(text)) == text.
std::string write_model_txt(const ModelText &model);
std::string write_op_line(const OpLine &op);

} // namespace onnxstream
