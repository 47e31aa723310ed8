#include "onnx/passes/subgraph.h"

#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

SubgraphInliner::SubgraphInliner(IrGraph &g) : g_(g) {
    for (const auto &kv : g.constants) used_.insert(kv.first);
    used_.insert(g.inputs.begin(), g.inputs.end());
    for (const Node &n : g.nodes) {
        used_.insert(n.inputs.begin(), n.inputs.end());
        used_.insert(n.outputs.begin(), n.outputs.end());
        used_.insert(n.captures.begin(), n.captures.end());
        node_names_.insert(n.name);
    }
}

std::string SubgraphInliner::fresh_value(const std::string &base) {
    std::string name = base;
    for (int i = 1; used_.count(name); ++i) name = cat(base, "_", i);
    used_.insert(name);
    return name;
}

std::string SubgraphInliner::fresh_node(const std::string &base) {
    std::string name = base;
    for (int i = 1; node_names_.count(name); ++i) name = cat(base, "_", i);
    node_names_.insert(name);
    return name;
}

Node SubgraphInliner::new_node(const std::string &base, const char *type, std::vector<std::string> inputs,
                               std::vector<std::string> outputs) {
    Node n;
    n.name = fresh_node(base);
    n.op_type = type;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    return n;
}

std::string SubgraphInliner::int64_constant(const std::string &base, Shape shape, const std::vector<int64_t> &values) {
    const std::string name = fresh_value(base);
    std::string bytes(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(int64_t));
    g_.constants.emplace(name, ConstantData::in_memory(kOnnxInt64, std::move(shape), std::move(bytes)));
    return name;
}

void SubgraphInliner::stack(const std::vector<std::string> &parts, int64_t axis, bool new_axis,
                            const std::string &result, const std::string &prefix, std::vector<Node> &out) {
    std::vector<std::string> pieces;
    // Unsqueeze takes its axes as an input from opset 13, as an attribute before.
    const std::string axes = new_axis && g_.opset >= 13 ? int64_constant(prefix + "axes", {1}, {axis}) : "";
    for (const std::string &p : parts) {
        if (!new_axis) {
            pieces.push_back(p);
            continue;
        }
        const std::string piece = fresh_value(prefix + "unsqueezed");
        Node u = new_node(prefix + "Unsqueeze", "Unsqueeze", {p}, {piece});
        if (!axes.empty()) u.inputs.push_back(axes);
        else u.attrs.push_back(ints_attr("axes", {axis}));
        out.push_back(std::move(u));
        pieces.push_back(piece);
    }
    Node c = new_node(prefix + "Concat", "Concat", pieces, {result});
    c.attrs.push_back(int_attr("axis", axis));
    out.push_back(std::move(c));
}

std::vector<std::string> SubgraphInliner::inline_graph(const onnx::GraphProto &source, const std::string &prefix,
                                                       const std::unordered_map<std::string, std::string> &bind,
                                                       const std::vector<std::string> &outputs,
                                                       const std::string &where, std::vector<Node> &out) {
    onnx::GraphProto graph = source; // nested subgraphs are renamed in the copy
    std::unordered_map<std::string, std::string> rename = bind;
    std::unordered_set<std::string> produced;
    for (const auto &n : graph.node())
        for (const auto &o : n.output())
            if (!o.empty()) produced.insert(o);
    // A subgraph output its nodes produce takes the wanted outer name directly (once: the same value given
    // twice gets an Identity for its second name).
    for (int i = 0; i < graph.output_size(); ++i) {
        const std::string &inner = graph.output(i).name();
        const std::string wanted = static_cast<size_t>(i) < outputs.size() ? outputs[static_cast<size_t>(i)] : "";
        if (produced.count(inner) && !rename.count(inner) && !wanted.empty()) rename[inner] = wanted;
    }
    for (const auto &name : produced)
        if (!rename.count(name)) rename[name] = fresh_value(prefix + name);
    for (auto &t : *graph.mutable_initializer()) {
        const std::string name = fresh_value(prefix + t.name());
        rename[t.name()] = name;
        g_.constants.emplace(name, constant_from_proto(t, g_.model_dir, cat(where, " initializer '", t.name(), "'")));
    }
    for (const auto &sparse : graph.sparse_initializer())
        fail(ONNXSTREAM_ERR_UNSUPPORTED, where, ": sparse initializer '", sparse.values().name(), "' is not supported");

    auto map = [&](const std::string &v) {
        auto it = rename.find(v);
        return it == rename.end() ? v : it->second;
    };
    for (int j = 0; j < graph.node_size(); ++j) {
        onnx::NodeProto &p = *graph.mutable_node(j);
        Node b;
        b.name = fresh_node(prefix + (p.name().empty() ? cat(p.op_type(), "_", j) : p.name()));
        b.op_type = p.op_type();
        b.domain = p.domain() == "ai.onnx" ? std::string() : p.domain();
        for (const auto &i : p.input()) b.inputs.push_back(i.empty() ? i : map(i));
        for (const auto &o : p.output()) b.outputs.push_back(o.empty() ? o : map(o));
        for (auto &a : *p.mutable_attribute()) {
            // Nested subgraphs read this one's values too.
            if (a.type() == onnx::AttributeProto::GRAPH) rename_captured(*a.mutable_g(), rename);
            for (auto &sub : *a.mutable_graphs()) rename_captured(sub, rename);
            b.attrs.push_back(a);
        }
        set_captures(b);
        out.push_back(std::move(b));
    }
    std::vector<std::string> result;
    for (int i = 0; i < graph.output_size(); ++i) {
        const std::string source_name = map(graph.output(i).name());
        const std::string wanted = static_cast<size_t>(i) < outputs.size() ? outputs[static_cast<size_t>(i)] : "";
        if (wanted.empty() || source_name == wanted) {
            result.push_back(source_name);
            continue;
        }
        // An output the subgraph passes through from outside, gives twice, or takes from an initializer.
        out.push_back(new_node(prefix + "output_" + std::to_string(i), "Identity", {source_name}, {wanted}));
        result.push_back(wanted);
    }
    return result;
}

} // namespace onnxstream::importer
