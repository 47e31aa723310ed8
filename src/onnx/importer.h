// ONNX -> OnnxStream model folder: load (external data, any opset 11..the newest this ONNX library knows,
// model-local functions inlined), fix symbolic input shapes, infer shapes, simplify to a fixed point
// (constant folding with the engine's kernels, no-op and dead-code elimination, BatchNorm into Conv),
// check that the engine runs every remaining op, and write model.txt + weights atomically.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "onnx/evaluator.h"
#include "onnx/ir.h"
#include "onnx/writer.h"

namespace onnxstream::importer {

struct ConvertOptions {
    bool fp16 = false;
    std::vector<std::string> keep_fp32; // fnmatch patterns on initializer names (or weight file names)
    bool quantize_w8 = false;           // --quantize w8: per-channel int8 Conv/Gemm/MatMul weights
    bool quantize_u8 = false;           // --quantize w8a8: per-tensor uint8 weights (ranges come separately)
    bool quantize_w4 = false;           // --quantize w4: blockwise int4 MatMul/Gemm weights, int8 the rest
    std::vector<std::pair<std::string, Shape>> input_shapes; // fixed shapes for graph inputs
    // --resizable NAME=SHAPE: a second size for these inputs; the model is written to take any size whose
    // dims follow the same rules (onnx/resizable.h)
    std::vector<std::pair<std::string, Shape>> resizable;
    bool safetensors = false;           // weights in one model.safetensors instead of .bin files
    std::vector<std::string> input_values; // "NAME=v0,v1,...": inputs pinned to constants (input_values.h)
    FoldLimits fold;
};

struct ConvertReport {
    std::string source;
    int64_t opset = 0;
    size_t nodes_before = 0, nodes_after = 0;
    std::map<std::string, size_t> ops_before, ops_after;
    int rounds = 0; // simplification rounds until nothing changed
    WriteSummary written;

    // The text `onnxstream-convert --report` prints.
    std::string text() const;
};

// Parse "--input-shape" text "name=1,3,224,224" (a name may itself contain '='; the last one splits).
// Throws INVALID_ARGUMENT.
std::pair<std::string, Shape> parse_input_shape(const std::string &text);

// The whole conversion. Throws Error: IO (missing/unreadable files), INVALID_MODEL (not ONNX, truncated,
// dangling values, cycles), INVALID_ARGUMENT (bad options, symbolic input shapes without --input-shape,
// existing output folder), UNSUPPORTED (ops the engine lacks: every type with its count and first node).
ConvertReport convert_onnx(const std::string &onnx_path, const std::string &out_dir, const ConvertOptions &options);

// The stages of convert_onnx, for tests and tools.
// `input_values`: the --input-value specs, which the reading of opsets 18 to 22 may need (a Reduce's axes
// fed as a graph input); pin_input_values applies them.
IrGraph load_onnx(const std::string &onnx_path, const std::vector<std::pair<std::string, Shape>> &input_shapes,
                  const std::vector<std::string> &input_values = {});
// The same from the file's bytes in memory (fuzzing, hosts holding the model in RAM); `source` names it in
// messages and external data is looked up in `model_dir`.
IrGraph load_onnx_bytes(const std::string &bytes, const std::string &source, const std::string &model_dir,
                        const std::vector<std::pair<std::string, Shape>> &input_shapes);
// Graph inputs the model reads must have fully known shapes: the engine plans every tensor up front. Throws
// INVALID_MODEL for an input without a tensor type, INVALID_ARGUMENT for a symbolic shape.
void check_input_shapes(const IrGraph &g);
// Shape inference and every pass until nothing changes; returns the number of rounds. Big folded
// constants go to `spill` when given.
int simplify(IrGraph &g, ConstantEvaluator &evaluator, const FoldLimits &limits,
             const std::shared_ptr<SpillFile> &spill = nullptr);
// Throws UNSUPPORTED listing every op type the engine cannot run.
void check_supported(const IrGraph &g);

} // namespace onnxstream::importer
