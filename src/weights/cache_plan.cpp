#include "weights/cache_plan.h"

#include <map>
#include <set>
#include <string>

namespace onnxstream::weight_cache {

namespace {

// The widening ops read a float16 weight in these input slots by converting it to float32 when they
// run (Conv/ConvTranspose through as_f32, Gemm for B and C whatever A's dtype): storing float32 saves
// that conversion on every run and gives the same values. MatMul is left out: with float16 activations
// it converts B with to_f32 unconditionally, which would misread a float32 B.
bool widening_slot(const std::string &op, size_t slot) {
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm") return slot == 1 || slot == 2;
    if (op == "GegluFeedForward") return slot >= 1 && slot <= 4; // weight_f32 / bias_f32 take either dtype
    return op == "MatMul" && slot == 1;
}

} // namespace

std::vector<Entry> plan_entries(const Graph &graph) {
    std::map<std::string, bool> widen; // by file
    for (const Node &node : graph.nodes())
        for (size_t i = 0; i < node.inputs.size(); ++i) {
            const NodeInput &in = node.inputs[i];
            if (in.kind != NodeInput::Weight) continue;
            bool ok = in.weight.dtype == DType::F16 && !in.weight.quant.present &&
                      widening_slot(node.line->type, i);
            auto it = widen.find(in.weight.file);
            if (it == widen.end()) widen.emplace(in.weight.file, ok);
            else it->second = it->second && ok;
        }
    std::vector<Entry> entries;
    std::set<std::string> seen;
    for (const Node &node : graph.nodes())
        for (const NodeInput &in : node.inputs) {
            if (in.kind != NodeInput::Weight) continue;
            if (!seen.insert(entry_key(in.weight.file, in.weight.wanted)).second) continue;
            Entry e;
            e.file = in.weight.file;
            e.wanted = in.weight.wanted;
            e.src_dtype = in.weight.dtype;
            e.shape = in.weight.shape;
            // Quantized weights stay quantized: no op consumer is selected for Prep::DequantizeToF32 yet
            // (the hook for one that would dequantize on every run; write_prepared handles per-tensor
            // parameters, a per-channel consumer must extend it).
            e.prep = widen[in.weight.file] ? Prep::WidenF16 : Prep::AsIs;
            entries.push_back(std::move(e));
        }
    return entries;
}

WeightSpec spec_of(const Entry &e, const QuantParams &quant) {
    WeightSpec s;
    s.file = e.file;
    s.dtype = e.src_dtype;
    s.shape = e.shape;
    s.quant = quant;
    s.wanted = e.wanted;
    return s;
}

} // namespace onnxstream::weight_cache
