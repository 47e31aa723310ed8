// If nodes whose condition is known at conversion are replaced by the branch they take.
//
// Exporters emit If for what a model decides from its input's shape (torch.onnx's `if x.dim() == 3`) or
// from a setting fed as an input (a sample rate); once --input-shape fixes the shapes, or --input-value pins
// the setting, folding turns the condition into a constant and the branch is just more nodes. The branch's
// own values get the If's name as a prefix (two branches of two Ifs may use the same names), the values it
// reads from outside keep theirs, and the If's outputs keep theirs, so nothing after the If changes.
#include <unordered_map>
#include <unordered_set>

#include "onnx/passes/passes.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

// The condition's value: ONNX asks for a bool tensor of one element.
bool condition_value(const IrGraph &g, const Node &n, const ConstantData &c) {
    if (c.numel() != 1)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", n.describe(), ": the condition holds ", c.numel(),
             " values; If takes one");
    std::vector<int64_t> v = c.type() == kOnnxFloat || c.type() == kOnnxFloat16 ? std::vector<int64_t>()
                                                                               : c.int_values();
    if (v.empty()) {
        std::vector<float> f = c.float_values();
        return !f.empty() && f[0] != 0;
    }
    return v[0] != 0;
}

class BranchInliner {
public:
    BranchInliner(IrGraph &g, std::unordered_set<std::string> &used) : g_(g), used_(used) {
        for (const Node &n : g.nodes) node_names_.insert(n.name);
    }

    // Appends the nodes of n's taken branch to `out`.
    void inline_branch(const Node &n, bool taken, std::vector<Node> &out) {
        const char *which = taken ? "then_branch" : "else_branch";
        const onnx::AttributeProto *attr = n.attr(which);
        if (!attr || attr->type() != onnx::AttributeProto::GRAPH)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g_.source, ": ", n.describe(), " has no ", which, " graph");
        onnx::GraphProto branch = attr->g();
        if (static_cast<size_t>(branch.output_size()) != n.outputs.size())
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g_.source, ": ", n.describe(), ": ", which, " has ",
                 branch.output_size(), " outputs but the If has ", n.outputs.size());
        const std::string prefix = cat(n.name, "/", taken ? "then" : "else", "/");

        // Names the branch defines get fresh ones; a branch output produced by one of its nodes takes the
        // If's output name directly.
        std::unordered_map<std::string, std::string> rename;
        std::unordered_set<std::string> produced;
        for (const auto &bn : branch.node())
            for (const auto &o : bn.output())
                if (!o.empty()) produced.insert(o);
        for (int i = 0; i < branch.output_size(); ++i) {
            const std::string &inner = branch.output(i).name();
            const std::string &outer = n.outputs[static_cast<size_t>(i)];
            if (produced.count(inner) && !rename.count(inner) && !outer.empty()) rename[inner] = outer;
        }
        for (const auto &name : produced)
            if (!rename.count(name)) rename[name] = fresh(prefix + name);
        for (auto &t : *branch.mutable_initializer()) {
            const std::string name = fresh(prefix + t.name());
            rename[t.name()] = name;
            g_.constants.emplace(name, constant_from_proto(t, g_.model_dir, cat(g_.source, ": ", n.describe(), ": ",
                                                                               which, " initializer '", t.name(), "'")));
        }
        for (const auto &sparse : branch.sparse_initializer())
            fail(ONNXSTREAM_ERR_UNSUPPORTED, g_.source, ": ", n.describe(), ": sparse initializer '",
                 sparse.values().name(), "' is not supported");

        auto map = [&](const std::string &v) {
            auto it = rename.find(v);
            return it == rename.end() ? v : it->second;
        };
        for (int j = 0; j < branch.node_size(); ++j) {
            onnx::NodeProto &p = *branch.mutable_node(j);
            Node b;
            b.name = fresh_node(prefix + (p.name().empty() ? cat(p.op_type(), "_", j) : p.name()));
            b.op_type = p.op_type();
            b.domain = p.domain() == "ai.onnx" ? std::string() : p.domain();
            for (const auto &i : p.input()) b.inputs.push_back(i.empty() ? i : map(i));
            for (const auto &o : p.output()) b.outputs.push_back(o.empty() ? o : map(o));
            for (auto &a : *p.mutable_attribute()) {
                // Nested Ifs read this branch's values too.
                if (a.type() == onnx::AttributeProto::GRAPH) rename_captured(*a.mutable_g(), rename);
                for (auto &sub : *a.mutable_graphs()) rename_captured(sub, rename);
                b.attrs.push_back(a);
            }
            set_captures(b);
            out.push_back(std::move(b));
        }
        // Outputs the branch passes through from outside (or gives twice, or from an initializer).
        for (int i = 0; i < branch.output_size(); ++i) {
            const std::string &outer = n.outputs[static_cast<size_t>(i)];
            const std::string source = map(branch.output(i).name());
            if (outer.empty() || source == outer) continue;
            Node copy;
            copy.name = fresh_node(prefix + "output_" + std::to_string(i));
            copy.op_type = "Identity";
            copy.inputs = {source};
            copy.outputs = {outer};
            out.push_back(std::move(copy));
        }
    }

private:
    std::string fresh(const std::string &base) {
        std::string name = base;
        for (int i = 1; used_.count(name); ++i) name = cat(base, "_", i);
        used_.insert(name);
        return name;
    }
    std::string fresh_node(const std::string &base) {
        std::string name = base;
        for (int i = 1; node_names_.count(name); ++i) name = cat(base, "_", i);
        node_names_.insert(name);
        return name;
    }

    IrGraph &g_;
    std::unordered_set<std::string> &used_;
    std::unordered_set<std::string> node_names_;
};

} // namespace

bool inline_constant_ifs(IrGraph &g) {
    bool any = false;
    for (const Node &n : g.nodes)
        any = any || (n.op_type == "If" && n.default_domain() && !n.inputs.empty() && g.is_constant(n.inputs[0]));
    if (!any) return false;

    std::unordered_set<std::string> used;
    for (const auto &kv : g.constants) used.insert(kv.first);
    used.insert(g.inputs.begin(), g.inputs.end());
    for (const Node &n : g.nodes) {
        used.insert(n.inputs.begin(), n.inputs.end());
        used.insert(n.outputs.begin(), n.outputs.end());
        used.insert(n.captures.begin(), n.captures.end());
    }
    BranchInliner inliner(g, used);
    std::vector<Node> out;
    out.reserve(g.nodes.size());
    for (Node &n : g.nodes) {
        if (n.op_type != "If" || !n.default_domain() || n.inputs.empty() || !g.is_constant(n.inputs[0])) {
            out.push_back(std::move(n));
            continue;
        }
        inliner.inline_branch(n, condition_value(g, n, g.constants.at(n.inputs[0])), out);
    }
    g.nodes = std::move(out);
    // The branch's nodes sit where the If was; what they read from outside may come later in the old order.
    topo_sort(g);
    return true;
}

} // namespace onnxstream::importer
