#include "weights/cache_plan.h"

#include <map>
#include <set>
#include <string>

namespace onnxstream::weight_cache {

std::vector<Entry> plan_entries(const Graph &graph) {
    std::map<std::string, bool> widen; // by file
    for (const Node &node : graph.nodes())
        for (size_t i = 0; i < node.inputs.size(); ++i) {
            const NodeInput &in = node.inputs[i];
            if (in.kind != NodeInput::Weight) continue;
            // Widen a float16 weight when every op reading it has float32 kernels that read it as float32
            // (OpDef::f32_weight_mask); each also takes float32 in its float16 path, so nothing is lost.
            bool ok = in.weight.dtype == DType::F16 && !in.weight.quant.present && node.def &&
                      node.def->widens_to_f32(i);
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
            // Quantized weights stay quantized (Prep::DequantizeToF32, which prepare_weight can do, would store
            // four times the bytes for a saving of one dequantization per run).
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
