#include "graph/graph.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>

#include "ops/registry.h"
#include "tensor/int4_blocks.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/strings.h"

namespace onnxstream {

bool is_safe_weight_file_name(const std::string &file) {
    if (file.empty() || file == "." || file == "..") return false;
    if (file.find('/') != std::string::npos || file.find('\\') != std::string::npos) return false;
    if (file.find('\0') != std::string::npos || file.find(':') != std::string::npos) return false;
    return true;
}

Graph::Graph(ModelText text, const std::string &source) : text_(std::move(text)), source_(source) {
    const Registry &registry = Registry::builtin();
    std::map<std::string, std::pair<int, std::string>> unknown; // type -> (count, first op)
    // Weight file -> first reference and its line. Providers and the planner cache weights by file name,
    // so one file must have one dtype/shape/quantization everywhere.
    std::unordered_map<std::string, std::pair<const TensorRef *, int>> weight_refs;
    auto weight_decl = [](const TensorRef &r) {
        return cat(dtype_name(r.dtype), r.quant.present ? "[" + r.quant_text + "]" : "", " ", shape_str(r.shape));
    };
    nodes_.reserve(text_.ops.size());
    auto intern = [&](const TensorRef &ref, const OpLine &op) -> int {
        auto it = by_name_.find(ref.name);
        if (it != by_name_.end()) {
            Value &v = values_[static_cast<size_t>(it->second)];
            if (v.declared_shape != ref.shape)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", op.line, ":", ref.column, ": tensor '", ref.name,
                     "' is declared ", shape_str(ref.shape), " here but ", shape_str(v.declared_shape), " before");
            return it->second;
        }
        int id = static_cast<int>(values_.size());
        values_.push_back({ref.name, ref.shape, -1, {}});
        by_name_[ref.name] = id;
        return id;
    };

    for (size_t i = 0; i < text_.ops.size(); ++i) {
        const OpLine &op = text_.ops[i];
        Node node;
        node.index = static_cast<int>(i);
        node.line = &op;
        node.where = cat(source_, ":", op.line, " (", op.name, " ", op.type, ")");
        node.attrs = Attributes(&op.attrs, node.where);
        node.def = registry.find(op.type);
        if (!node.def) {
            auto &u = unknown[op.type];
            if (u.first++ == 0) u.second = cat(op.name, " at line ", op.line);
        }
        for (size_t k = 0; k < op.inputs.size(); ++k) {
            const TensorRef &ref = op.inputs[k];
            NodeInput in;
            if (!ref.present) {
                in.kind = NodeInput::None;
            } else if (ref.is_weight) {
                if (!is_safe_weight_file_name(ref.name))
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", op.line, ":", ref.column, ": weight file name '",
                         ref.name, "' is not a plain file name inside the model folder");
                auto seen = weight_refs.emplace(ref.name, std::make_pair(&ref, op.line)).first->second;
                const TensorRef &first = *seen.first;
                if (first.dtype != ref.dtype || first.shape != ref.shape || first.quant.present != ref.quant.present ||
                    first.quant_text != ref.quant_text)
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", op.line, ":", ref.column, ": weight file '",
                         ref.name, "' is declared ", weight_decl(ref), " here but ", weight_decl(first), " on line ",
                         seen.second);
                if (ref.quant.per_channel()) {
                    if (!is_safe_weight_file_name(ref.scales_file))
                        fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", op.line, ":", ref.column, ": scales file name '",
                             ref.scales_file, "' is not a plain file name inside the model folder");
                    // OHWI moves the axes after 0, so only output-channel scales survive the twin's layout.
                    if (ref.quant.axis != 0 && node.def && node.def->ohwi_weight_input == static_cast<int>(k) &&
                        ref.shape.size() == 4)
                        fail(ONNXSTREAM_ERR_UNSUPPORTED, source_, ":", op.line, ":", ref.column, ": weight '", ref.name,
                             "' of ", op.type, " is quantized along axis ", ref.quant.axis,
                             "; per-channel ", op.type, " weights must use axis 0 (output channels)");
                }
                in.kind = NodeInput::Weight;
                in.weight.file = ref.name;
                in.weight.dtype = ref.dtype;
                in.weight.shape = ref.shape;
                in.weight.quant = ref.quant;
                if (ref.quant.blockwise()) {
                    // Only the fully connected kernels read int4 blocks: B of a MatMul or a Gemm, W1 and W2 of
                    // the GEGLU feed-forward.
                    const bool fc = (k == 1 && (op.type == "MatMul" || op.type == "Gemm")) ||
                                    ((k == 1 || k == 3) && op.type == "GegluFeedForward");
                    if (!fc)
                        fail(ONNXSTREAM_ERR_UNSUPPORTED, source_, ":", op.line, ":", ref.column, ": int4 weight '",
                             ref.name, "' is input ", k, " of ", op.type,
                             "; int4 weights can only be input 1 (B) of MatMul or Gemm, or input 1 or 3 (W1, W2) "
                             "of GegluFeedForward");
                    int4::RowLayout layout;
                    int4::layout_of(ref.shape, ref.quant.axis, ref.quant.block, layout); // checked by the parser
                    in.weight.dtype = DType::U8;
                    in.weight.shape = layout.stored_shape();
                    in.weight.quant.logical_shape = ref.shape;
                }
                if (node.def && node.def->ohwi_weight_input == static_cast<int>(k) && ref.shape.size() == 4)
                    in.weight.wanted = Layout::OHWI;
            } else {
                in.kind = NodeInput::Value;
                in.value = intern(ref, op);
                values_[static_cast<size_t>(in.value)].consumers.push_back(node.index);
            }
            node.inputs.push_back(std::move(in));
        }
        for (const AttributeText &a : op.attrs) {
            if (a.key != kGuardAttribute) continue;
            auto it = by_name_.find(a.value);
            if (it == by_name_.end())
                fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", op.line, ":", a.column, ": ", kGuardAttribute,
                     " names tensor '", a.value, "', which no earlier line uses or produces");
            node.guard = it->second;
            values_[static_cast<size_t>(node.guard)].consumers.push_back(node.index);
        }
        for (const TensorRef &ref : op.outputs) {
            int id = intern(ref, op);
            Value &v = values_[static_cast<size_t>(id)];
            if (v.producer >= 0)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", op.line, ":", ref.column, ": tensor '", ref.name,
                     "' is already produced by line ", text_.ops[static_cast<size_t>(v.producer)].line);
            if (!v.consumers.empty()) {
                const int reader = text_.ops[static_cast<size_t>(v.consumers.front())].line;
                if (reader == op.line)
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", op.line, ":", ref.column, ": tensor '", ref.name,
                         "' is both an input and an output of this line (a cycle)");
                fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ":", op.line, ":", ref.column, ": tensor '", ref.name,
                     "' is used by line ", reader, " before this line produces it");
            }
            v.producer = node.index;
            node.outputs.push_back(id);
        }
        nodes_.push_back(std::move(node));
    }
    if (!unknown.empty()) {
        std::string list;
        for (const auto &kv : unknown)
            list += cat(list.empty() ? "" : "; ", kv.first, " x", kv.second.first, " (first: ", kv.second.second, ")");
        fail(ONNXSTREAM_ERR_UNSUPPORTED, source_, ": unsupported operator types: ", list);
    }
    if (nodes_.empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, source_, ": the model has no operations");
    for (size_t v = 0; v < values_.size(); ++v) {
        if (values_[v].producer < 0) inputs_.push_back(static_cast<int>(v));
        if (values_[v].consumers.empty()) outputs_.push_back(static_cast<int>(v));
    }
}

int Graph::find_value(const std::string &name) const {
    auto it = by_name_.find(name);
    if (it != by_name_.end()) return it->second;
    it = by_name_.find(escape_name(name));
    return it == by_name_.end() ? -1 : it->second;
}

void Graph::set_channel_scales(size_t node, size_t input, std::shared_ptr<const std::vector<float>> scales) {
    NodeInput &in = nodes_.at(node).inputs.at(input);
    if (in.kind != NodeInput::Weight || !in.weight.quant.per_channel())
        fail(ONNXSTREAM_ERR_INTERNAL, nodes_[node].where, ": input ", input, " is not a per-channel weight");
    in.weight.quant.channel_scales = std::move(scales);
}

void Graph::add_output(int value) {
    if (std::find(outputs_.begin(), outputs_.end(), value) == outputs_.end()) outputs_.push_back(value);
}

void Graph::declare_outputs(const std::vector<int> &declared) {
    std::vector<int> outputs;
    for (int v : declared)
        if (std::find(outputs.begin(), outputs.end(), v) == outputs.end()) outputs.push_back(v);
    outputs_ = std::move(outputs);
}

} // namespace onnxstream
