// The importer's graph as an OnnxStream model folder: model.txt plus one .bin file per weight, named and
// laid out as OnnxStream's onnx2txt does (escaped names, Conv weights as "<name>_nchw.bin" in the line and
// "<name>_nhwc.bin" in OHWI order on disk), or those weights packed into one model.safetensors; written
// atomically.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx/ir.h"

namespace onnxstream::importer {

struct WriteOptions {
    bool fp16 = false;                  // float32 weights are written as float16 ...
    std::vector<std::string> keep_fp32; // ... except those whose name matches one of these fnmatch patterns
    bool quantize_w8 = false;           // Conv/Gemm/MatMul weights as per-channel int8 (quantize_export.h)
    bool quantize_u8 = false;           // the same weights as per-tensor uint8 asymmetric (--quantize w8a8)
    bool quantize_w4 = false;           // MatMul/Gemm weights as blockwise int4, the other w8 weights as int8
    bool safetensors = false;           // the weight files packed into one model.safetensors (weights/safetensors_pack.h)
    // A resizable model (onnx/resizable.h): per value, the dimensions written '?' ...
    std::unordered_map<std::string, std::vector<bool>> any_dims;
    // ... and the input sizes the written model is planned at before it is kept (value name -> shape, for
    // the graph inputs), each with the shapes every value must then have (empty: not checked). Without
    // any: planned at the declared shapes.
    struct SizeCheck {
        std::unordered_map<std::string, Shape> inputs;
        std::unordered_map<std::string, Shape> expected;
    };
    std::vector<SizeCheck> size_checks;
};

struct WriteSummary {
    size_t ops = 0;
    size_t weight_files = 0;
    uint64_t weight_bytes = 0;
    bool packed = false;        // the weight files went into model.safetensors
    std::string largest_weight; // file name
    uint64_t largest_bytes = 0;
    size_t fp16_weights = 0;
    size_t w8_weights = 0;          // weights stored as per-channel int8
    uint64_t w8_saved_bytes = 0;    // bytes they would have taken unquantized, minus int8 data and scales
    size_t w4_weights = 0;          // weights stored as blockwise int4
    uint64_t w4_saved_bytes = 0;    // bytes they would have taken unquantized, minus int4 rows
    std::vector<std::string> notes; // things the user should know (extra outputs, fp16 clamping, ...)
};

// Throws INVALID_ARGUMENT / IO unless out_dir can be created: its parent exists and it does not exist
// (or is an empty folder). Checked before converting so a bad path fails fast.
void check_output_dir(const std::string &out_dir);

// Write g into out_dir. Everything goes to a temporary sibling folder first; the result is loaded back
// through the engine's parser, graph checks and shape planner, and only a model that passes is renamed to
// out_dir. On any failure the temporary folder is removed and out_dir is left as it was.
WriteSummary write_model(const IrGraph &g, const std::string &out_dir, const WriteOptions &options);

// The model.txt name of a constant's weight file (escaped name + ".bin", shortened with a hash when the
// file name would be too long for common file systems).
std::string weight_file_base(const std::string &constant_name);

} // namespace onnxstream::importer
