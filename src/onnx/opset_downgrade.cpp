// Opsets 18 to 22 read through the opset-17 forms of their operators.
//
// Debian 12's ONNX library knows opset 17 at most, and the importer leans on ONNX's validation and shape
// inference. From 18 to 22 most operators changed only in the types they accept; the few that changed
// form are rewritten to their opset-17 equivalents here (a Reduce's axes input becomes its attribute, Split
// drops num_outputs, defaulted new attributes go), and the model is then read as opset 17 on every Debian
// version. Operators new in those opsets (Gelu, GroupNormalization, Mish, ...) stay as they are: ONNX's
// opset 17 has no schema for them, so validation and inference leave them to the engine's own checks.
// Forms with no opset-17 equivalent that the engine implements stay as they are: validation lets them
// through (validate.cpp), and where ONNX's opset-17 inference would misread them the engine's inference
// gives their shapes (inference_guard.cpp). Those are Resize's antialias, axes, keep_aspect_ratio_policy
// and half_pixel_symmetric coordinates, Pad's axes input and wrap mode, AveragePool's dilations, and ScatterND's and
// ScatterElements' reductions max and min (in opset 16's attribute). Other such forms are refused, naming
// the node and the attribute.
#include "onnx/opset_downgrade.h"

#include <algorithm>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "onnx/input_values.h"
#include "onnx/ir.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream::importer {

namespace {

const std::unordered_set<std::string> kReduceWithAxesInput = {
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
    "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSumSquare"};

// The values of --input-value specs that read as int64 lists (axes), by input name.
std::unordered_map<std::string, std::vector<int64_t>> pinned_ints(const std::vector<std::string> &specs) {
    std::unordered_map<std::string, std::vector<int64_t>> out;
    for (const std::string &spec : specs) {
        std::string name;
        std::vector<std::string> texts;
        if (!split_input_value(spec, name, texts)) continue; // pin_input_values reports it
        std::vector<int64_t> values(texts.size());
        bool ok = true;
        for (size_t i = 0; i < texts.size(); ++i) ok = ok && parse_int64(texts[i], values[i]);
        if (ok) out[name] = std::move(values);
    }
    return out;
}

class Downgrade {
public:
    Downgrade(const std::string &path, const std::string &model_dir,
              const std::unordered_map<std::string, std::vector<int64_t>> &pinned)
        : path_(path), model_dir_(model_dir), pinned_(pinned) {}

    void graph(onnx::GraphProto &g, const std::string &where) {
        std::unordered_map<std::string, const onnx::TensorProto *> constants;
        std::deque<onnx::TensorProto> from_ints; // Constant's value_ints / value_int (function bodies use them)
        for (const auto &t : g.initializer()) constants[t.name()] = &t;
        for (const auto &n : g.node())
            if (n.op_type() == "Constant" && n.output_size() == 1)
                for (const auto &a : n.attribute()) {
                    if (a.name() == "value" && a.type() == onnx::AttributeProto::TENSOR) constants[n.output(0)] = &a.t();
                    const bool ints = a.name() == "value_ints" && a.type() == onnx::AttributeProto::INTS;
                    if (!ints && !(a.name() == "value_int" && a.type() == onnx::AttributeProto::INT)) continue;
                    onnx::TensorProto &t = from_ints.emplace_back();
                    t.set_data_type(onnx::TensorProto::INT64);
                    if (ints) {
                        t.add_dims(a.ints_size());
                        for (int64_t v : a.ints()) t.add_int64_data(v);
                    } else {
                        t.add_int64_data(a.i());
                    }
                    constants[n.output(0)] = &t;
                }
        for (int i = 0; i < g.node_size(); ++i) {
            onnx::NodeProto &n = *g.mutable_node(i);
            if (!n.domain().empty() && n.domain() != "ai.onnx") continue;
            const std::string what = n.name().empty() ? cat(where, n.op_type(), " node #", i + 1)
                                                      : cat(where, "node '", n.name(), "' (", n.op_type(), ")");
            node(n, what, constants);
            for (auto &a : *n.mutable_attribute()) {
                if (a.type() == onnx::AttributeProto::GRAPH) graph(*a.mutable_g(), what + ": ");
                for (auto &sub : *a.mutable_graphs()) graph(sub, what + ": ");
            }
        }
    }

private:
    [[noreturn]] void refuse(const std::string &what, const std::string &why) const {
        fail(ONNXSTREAM_ERR_UNSUPPORTED, path_, ": ", what, ": ", why, " (opset 18 or later) has no equivalent "
             "that onnxstream runs");
    }

    static onnx::AttributeProto *find(onnx::NodeProto &n, const std::string &name) {
        for (auto &a : *n.mutable_attribute())
            if (a.name() == name) return &a;
        return nullptr;
    }
    // A reduction over no axes (noop_with_empty_axes) is its element-wise part alone: |x| for L1 and L2,
    // x*x for SumSquare, log x for LogSum, x itself for the others (LogSumExp included).
    static void no_reduction(onnx::NodeProto &n) {
        const std::string op = n.op_type();
        n.clear_attribute();
        if (n.input_size() < 1) return;
        if (op == "ReduceL1" || op == "ReduceL2") n.set_op_type("Abs");
        else if (op == "ReduceLogSum") n.set_op_type("Log");
        else if (op == "ReduceSumSquare") {
            n.set_op_type("Mul");
            n.add_input(n.input(0));
        } else n.set_op_type("Identity");
    }
    static void keep_first_input(onnx::NodeProto &n) {
        if (n.input_size() > 1) n.mutable_input()->DeleteSubrange(1, n.input_size() - 1);
    }
    static void drop(onnx::NodeProto &n, const std::string &name) {
        auto *attrs = n.mutable_attribute();
        for (int i = 0; i < attrs->size(); ++i)
            if (attrs->Get(i).name() == name) {
                attrs->DeleteSubrange(i, 1);
                return;
            }
    }
    // Drop attribute `name` when it holds its default (an int or a string); refuse the node otherwise.
    void drop_default(onnx::NodeProto &n, const std::string &what, const std::string &name, int64_t int_default,
                      const char *string_default = nullptr) {
        onnx::AttributeProto *a = find(n, name);
        if (!a) return;
        const bool is_default = string_default ? a->s() == string_default : a->i() == int_default;
        if (!is_default)
            refuse(what, string_default ? cat(name, " '", a->s(), "'") : cat(name, " = ", a->i()));
        drop(n, name);
    }

    std::vector<int64_t> constant_ints(const onnx::TensorProto &t, const std::string &what) const {
        if (t.data_type() != onnx::TensorProto::INT64)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, path_, ": ", what, " is ", onnx_type_name(t.data_type()),
                 "; ONNX asks for int64");
        onnx::TensorProto copy = t; // constant_from_proto takes the bytes out of its argument
        return constant_from_proto(copy, model_dir_, what).int_values();
    }

    void node(onnx::NodeProto &n, const std::string &what,
              const std::unordered_map<std::string, const onnx::TensorProto *> &constants) {
        const std::string &op = n.op_type();
        if (kReduceWithAxesInput.count(op)) {
            const bool noop_empty = find(n, "noop_with_empty_axes") && find(n, "noop_with_empty_axes")->i() != 0;
            drop(n, "noop_with_empty_axes");
            if (n.input_size() < 2 || n.input(1).empty()) {
                keep_first_input(n);
                if (noop_empty) no_reduction(n);
                return;
            }
            auto c = constants.find(n.input(1));
            auto pin = pinned_.find(n.input(1));
            if (c == constants.end() && pin == pinned_.end())
                fail(ONNXSTREAM_ERR_UNSUPPORTED, path_, ": ", what, ": the values of '", n.input(1),
                     "' (its axes) decide the output's shape and are computed at run time; when it is a graph "
                     "input, pin it with --input-value ", n.input(1), "=...");
            const std::vector<int64_t> axes = c != constants.end() ? constant_ints(*c->second, what + " axes")
                                                                  : pin->second;
            keep_first_input(n);
            if (axes.empty()) {
                if (noop_empty) no_reduction(n);
                return;
            }
            onnx::AttributeProto *a = n.add_attribute();
            a->set_name("axes");
            a->set_type(onnx::AttributeProto::INTS);
            for (int64_t v : axes) a->add_ints(v);
        } else if (op == "Split") {
            if (onnx::AttributeProto *a = find(n, "num_outputs")) {
                if (a->i() != n.output_size())
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, path_, ": ", what, ": num_outputs is ", a->i(), " but the node has ",
                         n.output_size(), " outputs");
                drop(n, "num_outputs"); // opset 17 splits into as many parts as there are outputs
            }
        } else if (op == "Pad") {
            // An empty axes input means every axis, opset 17's Pad; named axes and mode 'wrap' stay for the
            // engine's Pad.
            if (n.input_size() > 3 && n.input(3).empty()) n.mutable_input()->DeleteSubrange(3, n.input_size() - 3);
        } else if (op == "Resize") {
            // antialias = 1, axes, keep_aspect_ratio_policy and half_pixel_symmetric stay: the engine's Resize
            // does them.
            if (onnx::AttributeProto *a = find(n, "antialias"); a && a->i() == 0) drop(n, "antialias");
            if (onnx::AttributeProto *a = find(n, "keep_aspect_ratio_policy"); a && a->s() == "stretch")
                drop(n, "keep_aspect_ratio_policy");
        } else if (op == "AveragePool" || op == "LpPool") {
            // AveragePool's dilations stay: the engine implements them, validation lets them through
            // (validate.cpp) and the inference guard sizes the output with them (inference_guard.cpp).
            if (onnx::AttributeProto *a = find(n, "dilations")) {
                if (std::all_of(a->ints().begin(), a->ints().end(), [](int64_t d) { return d == 1; }))
                    drop(n, "dilations");
                else if (op == "LpPool")
                    refuse(what, "dilations other than 1");
            }
            if (op == "LpPool") drop_default(n, what, "ceil_mode", 0);
        } else if (op == "GridSample") {
            // Opset 20 renamed the modes; opset 16's names mean the same interpolation.
            if (onnx::AttributeProto *a = find(n, "mode")) {
                if (a->s() == "linear") a->set_s("bilinear");
                else if (a->s() == "cubic") a->set_s("bicubic");
            }
        } else if (op == "Cast" || op == "CastLike" || op == "QuantizeLinear" || op == "DequantizeLinear") {
            // saturate = 0 (conversions to float8 that overflow to NaN or infinity), a non-zero output_dtype
            // and blocked quantization's block_size stay for the engine; validation lets them through
            // (validate.cpp).
            if (onnx::AttributeProto *a = find(n, "saturate"); a && a->i() == 1) drop(n, "saturate");
            if (onnx::AttributeProto *a = find(n, "output_dtype"); a && a->i() == 0) drop(n, "output_dtype");
            if (onnx::AttributeProto *a = find(n, "block_size"); a && a->i() == 0) drop(n, "block_size");
        }
    }

    std::string path_, model_dir_;
    const std::unordered_map<std::string, std::vector<int64_t>> &pinned_;
};

} // namespace

int64_t downgrade_to_opset17(onnx::ModelProto &m, const std::string &path, const std::string &model_dir,
                             const std::vector<std::string> &input_values) {
    int64_t from = 0;
    for (const auto &op : m.opset_import())
        if (op.domain().empty() || op.domain() == "ai.onnx") from = op.version();
    if (from <= kReadAsOpset) return from;
    const auto pinned = pinned_ints(input_values);
    Downgrade(path, model_dir, pinned).graph(*m.mutable_graph(), "");
    for (auto &f : *m.mutable_functions()) {
        // Function bodies are inlined later; their nodes follow the same rules.
        onnx::GraphProto body;
        body.mutable_node()->CopyFrom(f.node());
        Downgrade(path, model_dir, pinned).graph(body, cat("function '", f.name(), "': "));
        f.mutable_node()->CopyFrom(body.node());
    }
    for (auto &op : *m.mutable_opset_import())
        if (op.domain().empty() || op.domain() == "ai.onnx") op.set_version(kReadAsOpset);
    for (auto &f : *m.mutable_functions())
        for (auto &op : *f.mutable_opset_import())
            if ((op.domain().empty() || op.domain() == "ai.onnx") && op.version() > kReadAsOpset)
                op.set_version(kReadAsOpset);
    return from;
}

} // namespace onnxstream::importer
