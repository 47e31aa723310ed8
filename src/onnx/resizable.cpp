#include "onnx/resizable.h"

#include <algorithm>
#include <numeric>
#include <optional>

#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

// One dimension that follows the input size: dimension `dim` of the InputDims node's input `input`, with
// its value at the declared size and at the probe size.
struct Variable {
    size_t input = 0, dim = 0;
    int64_t declared = 0, probe = 0;
    std::string ref() const { return cat("@", input, ".", dim); }
};

// p/q in lowest terms, q > 0.
struct Ratio {
    int64_t p = 0, q = 1;
};

std::optional<Ratio> ratio(int64_t num, int64_t den) {
    if (den == 0) return std::nullopt;
    const int64_t g = std::gcd(num, den);
    Ratio r{num / g, den / g};
    if (r.q < 0) r = {-r.p, -r.q};
    if (r.p <= 0) return std::nullopt; // shapes are positive: a negative factor is no shape rule
    return r;
}

std::string term(const Ratio &r, const std::string &refs) {
    return cat(r.p == 1 ? "" : std::to_string(r.p), refs, r.q == 1 ? "" : cat("/", r.q));
}

// The InputDims term giving `declared` at the declared size and `probe` at the probe size: a constant, a
// rational multiple of one variable or of a product of two, or one variable plus an offset. Products come
// first: shapes in exported graphs are products and quotients of dimensions far more often than sums.
std::optional<std::string> find_term(int64_t declared, int64_t probe, const std::vector<Variable> &vars) {
    if (declared == probe) return std::to_string(declared);
    auto fits = [&](const Ratio &r, int64_t v_declared, int64_t v_probe) {
        int64_t lhs = 0, rhs = 0;
        if (__builtin_mul_overflow(r.p, v_declared, &lhs) || __builtin_mul_overflow(r.p, v_probe, &rhs)) return false;
        return lhs % r.q == 0 && lhs / r.q == declared && rhs % r.q == 0 && rhs / r.q == probe;
    };
    for (const Variable &v : vars)
        if (auto r = ratio(declared, v.declared); r && fits(*r, v.declared, v.probe)) return term(*r, v.ref());
    for (size_t a = 0; a < vars.size(); ++a)
        for (size_t b = a; b < vars.size(); ++b) {
            int64_t d = 0, p = 0;
            if (__builtin_mul_overflow(vars[a].declared, vars[b].declared, &d) ||
                __builtin_mul_overflow(vars[a].probe, vars[b].probe, &p))
                continue;
            if (auto r = ratio(declared, d); r && fits(*r, d, p)) return term(*r, vars[a].ref() + vars[b].ref());
        }
    for (const Variable &v : vars) {
        const int64_t offset = declared - v.declared;
        if (probe - v.probe == offset && offset != 0)
            return cat(v.ref(), offset > 0 ? "+" : "-", offset > 0 ? offset : -offset);
    }
    return std::nullopt;
}

bool same_attrs(const Node &a, const Node &b) {
    if (a.attrs.size() != b.attrs.size()) return false;
    for (size_t i = 0; i < a.attrs.size(); ++i)
        if (a.attrs[i].SerializeAsString() != b.attrs[i].SerializeAsString()) return false;
    return true;
}

[[noreturn]] void not_resizable(const IrGraph &g, const std::string &why) {
    fail(ONNXSTREAM_ERR_UNSUPPORTED, g.source, ": cannot be made resizable: ", why,
         " (convert without --resizable, once per input size)");
}

} // namespace

void make_resizable(IrGraph &g, const IrGraph &probe, const std::vector<std::pair<std::string, Shape>> &resizable,
                    std::unordered_map<std::string, std::vector<bool>> &any_dims) {
    // The variables: every dimension of a resizable input that the probe size changes.
    std::vector<Variable> vars;
    std::vector<std::string> var_inputs;
    for (const auto &[name, probe_shape] : resizable) {
        const ValueType *t = g.type_of(name);
        if (!t || !t->is_static() || t->dims.size() != probe_shape.size())
            not_resizable(g, cat("the probe shape ", shape_str(probe_shape), " of '", name, "' does not have the rank of ",
                                 t ? t->shape_text() : std::string("its declared shape")));
        const size_t index = var_inputs.size();
        bool any = false;
        for (size_t d = 0; d < probe_shape.size(); ++d)
            if (probe_shape[d] != t->dims[d]) {
                vars.push_back({index, d, t->dims[d], probe_shape[d]});
                any = true;
            }
        if (!any) not_resizable(g, cat("the probe shape of '", name, "' equals its declared shape"));
        var_inputs.push_back(name);
    }

    if (g.nodes.size() != probe.nodes.size())
        not_resizable(g, cat("it simplifies to ", g.nodes.size(), " nodes at the declared size but ", probe.nodes.size(),
                             " at the probe size"));
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node &a = g.nodes[i], &b = probe.nodes[i];
        if (a.op_type != b.op_type || a.domain != b.domain || a.inputs != b.inputs || a.outputs != b.outputs)
            not_resizable(g, cat("node ", a.describe(), " differs from the probe size's ", b.describe()));
        if (!same_attrs(a, b))
            not_resizable(g, cat("the attributes of ", a.describe(), " depend on the input size"));
    }

    // Constants folded from shapes become InputDims nodes, placed first (they read only graph inputs).
    std::vector<Node> dims_nodes;
    std::vector<std::string> replaced;
    std::vector<std::string> names;
    for (const auto &kv : g.constants) names.push_back(kv.first);
    std::sort(names.begin(), names.end()); // the same model.txt on every run
    for (const std::string &name : names) {
        const ConstantData &c = g.constants.at(name);
        auto it = probe.constants.find(name);
        if (it == probe.constants.end()) not_resizable(g, cat("constant '", name, "' exists at the declared size only"));
        const ConstantData &pc = it->second;
        if (*c.bytes() == *pc.bytes() && c.shape() == pc.shape()) continue;
        if (c.type() != kOnnxInt64 || c.type() != pc.type() || c.shape() != pc.shape() || c.shape().size() > 1)
            not_resizable(g, cat("constant '", name, "' (", onnx_type_name(c.type()), " ", shape_str(c.shape()),
                                 ") depends on the input size and is not a list of dimensions"));
        const std::vector<int64_t> da = c.int_values(), db = pc.int_values();
        std::string dims;
        for (size_t k = 0; k < da.size(); ++k) {
            std::optional<std::string> t = find_term(da[k], db[k], vars);
            if (!t)
                not_resizable(g, cat("entry ", k, " of constant '", name, "' is ", da[k], " at the declared size and ", db[k],
                                     " at the probe size, which no product of input dimensions gives"));
            dims += (k ? "," : "") + *t;
        }
        Node n;
        n.name = g.fresh_name(name + "_input_dims");
        n.op_type = "InputDims";
        n.inputs = var_inputs;
        n.outputs = {name};
        onnx::AttributeProto attr;
        attr.set_name("dims");
        attr.set_type(onnx::AttributeProto::STRING);
        attr.set_s(dims);
        n.attrs.push_back(attr);
        ValueType type;
        type.elem_type = kOnnxInt64;
        type.has_shape = true;
        type.dims = {static_cast<int64_t>(da.size())};
        g.types[name] = type;
        dims_nodes.push_back(std::move(n));
        replaced.push_back(name);
    }
    for (const std::string &name : replaced) g.constants.erase(name);
    g.nodes.insert(g.nodes.begin(), std::make_move_iterator(dims_nodes.begin()), std::make_move_iterator(dims_nodes.end()));

    // Declared shapes: each dimension the probe size changes is '?'.
    for (const auto &[name, type] : g.types) {
        const ValueType *pt = probe.type_of(name);
        if (!pt || !type.is_static() || !pt->is_static()) continue;
        if (pt->dims.size() != type.dims.size())
            not_resizable(g, cat("the rank of '", name, "' depends on the input size"));
        std::vector<bool> flags(type.dims.size(), false);
        bool any = false;
        for (size_t d = 0; d < flags.size(); ++d) any |= flags[d] = type.dims[d] != pt->dims[d];
        if (any) any_dims[name] = std::move(flags);
    }
}

} // namespace onnxstream::importer
