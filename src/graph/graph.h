// The parsed model: ops in execution order, the activation tensors that connect them, and the weight
// files each op reads. Built once from model.txt; planning and execution never re-parse text.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "ops/attributes.h"
#include "graph/model_txt.h"
#include "ops/op.h"
#include "util/checked.h"

namespace onnxstream {

struct WeightSpec {
    std::string file; // file name in the model folder (never a path)
    DType dtype = DType::F32;
    Shape shape;
    QuantParams quant;
    // OHWI: the op prepares this kernel itself (RunContext::kernel_weight), so providers serve it in the
    // layout they hold, OnnxStream's "_nhwc.bin" twin when there is one. Plain: providers serve Plain.
    Layout wanted = Layout::Plain;
    // What shape inference sees: the declared dtype and shape. A blockwise int4 weight is held as its stored
    // uint8 rows (dtype and shape above, tensor/int4_blocks.h) but declared int4 [K, N] or [N, K].
    TensorInfo info() const {
        return quant.blockwise() ? TensorInfo{DType::I4, quant.logical_shape, quant} : TensorInfo{dtype, shape, quant};
    }
    // Throws when the weight cannot be held by this process (a model.txt shape is untrusted).
    size_t byte_size() const { return checked::size_bytes(shape, dtype_size(dtype), "weight " + file); }
};

struct NodeInput {
    enum Kind { None, Value, Weight } kind = None;
    int value = -1;    // Value: index into Graph::values
    WeightSpec weight; // Weight
};

struct Node {
    int index = 0;
    const OpLine *line = nullptr;
    const OpDef *def = nullptr;
    std::string where; // "model.txt:12 (/model.0/conv/Conv Conv)"
    Attributes attrs;
    std::vector<NodeInput> inputs;
    std::vector<int> outputs; // value indices
    // The value (one-element bool) that decides whether the node runs (kGuardAttribute), or -1. A skipped
    // node's outputs stay absent; only the nodes of its branch and IfMerge read them.
    int guard = -1;
    NodeView view() const { return {line->name, line->type, where, attrs}; }
};

struct Value {
    std::string name;      // escaped, as in model.txt
    Shape declared_shape;  // as written where the tensor first appears
    int producer = -1;     // node index, -1 for graph inputs
    std::vector<int> consumers;
};

class Graph {
public:
    // Build from parsed text; `source` names model.txt in messages. Throws INVALID_MODEL (dangling or
    // duplicate tensors, inconsistent declared shapes, unsafe weight file names) or UNSUPPORTED
    // (unknown op types, all listed).
    Graph(ModelText text, const std::string &source);
    Graph(const Graph &) = delete;
    Graph &operator=(const Graph &) = delete;

    const ModelText &text() const { return text_; }
    const std::string &source() const { return source_; }
    const std::vector<Node> &nodes() const { return nodes_; }
    const std::vector<Value> &values() const { return values_; }
    const std::vector<int> &inputs() const { return inputs_; }
    const std::vector<int> &outputs() const { return outputs_; }

    // Find a value by escaped or original name; -1 if none.
    int find_value(const std::string &name) const;
    // Mark a consumed tensor as an output too (kept after its last use).
    void add_output(int value);
    // The outputs the source model declares, in its order (outputs.txt beside model.txt). Values model.txt
    // implies (computed and never read) that are not among them are dropped as soon as they are computed.
    void declare_outputs(const std::vector<int> &declared);
    // Attach the per-channel scales of a per-channel weight input (weights/weight_files.h reads them).
    void set_channel_scales(size_t node, size_t input, std::shared_ptr<const std::vector<float>> scales);

private:
    ModelText text_;
    std::string source_;
    std::vector<Node> nodes_;
    std::vector<Value> values_;
    std::vector<int> inputs_, outputs_;
    std::unordered_map<std::string, int> by_name_;
};

// True when `file` is a plain file name that stays inside the model folder.
bool is_safe_weight_file_name(const std::string &file);

} // namespace onnxstream
