// Evaluates one ONNX node on constant inputs with the engine's own operators, for constant folding: the
// node becomes a one-line model.txt whose inputs are in-memory weights, checked by the op's infer and run
// by the executor, so folding computes exactly what the engine would compute at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "onnx/ir.h"

namespace onnxstream::importer {

// Folding must not inflate the model: outputs up to small_bytes always fold; bigger ones only up to
// max_bytes and growth x the inputs' bytes.
struct FoldLimits {
    uint64_t small_bytes = 1ull << 20;
    uint64_t max_bytes = 64ull << 20;
    uint64_t growth = 4;
};

class ConstantEvaluator {
public:
    ConstantEvaluator();
    ~ConstantEvaluator();
    ConstantEvaluator(const ConstantEvaluator &) = delete;
    ConstantEvaluator &operator=(const ConstantEvaluator &) = delete;

    enum class Result { Folded, NoKernel, TooBig };
    // Evaluate `node` (every present input in `inputs`, nullptr for omitted ones). On Folded, `outputs`
    // holds one constant per node output. Errors the op raises propagate, prefixed with the node.
    Result evaluate(const Node &node, const std::vector<const ConstantData *> &inputs, const std::string &model_dir,
                    const FoldLimits &limits, std::vector<ConstantData> &outputs);

private:
    struct State;
    std::unique_ptr<State> state_;
};

} // namespace onnxstream::importer
