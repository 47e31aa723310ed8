// InputDims: an int64 vector computed from the shapes of its inputs, never their values. A model converted
// with `onnxstream-convert --resizable` holds one wherever the ONNX graph computed a shape (a Reshape target,
// an Expand shape) from the input size: the converter folded it for one size and found, by converting for
// a second size, how each entry follows the inputs' dimensions. Its value is known as soon as the input
// shapes are, so the planner gives it to the ops that read it as if it were a constant (OpDef::plan_value).
//
// Attribute `dims`: one term per output entry, comma-separated. A term is an integer, or a product of input
// dimensions `@I.D` (dimension D of input I) with an optional integer factor in front, then optionally
// `/N` (an exact division) and `+N` or `-N`: "1,@0.2@0.3/64,320" is [1, H*W/64, 320] of an NCHW input 0.
#include <algorithm>
#include <string>
#include <vector>

#include "ops/op.h"
#include "ops/shape_common.h"
#include "ops/registry.h"
#include "util/error.h"
#include "util/strings.h"

namespace onnxstream {

namespace {

using shapeops::invalid;
using shapeops::kMaxElements;

struct Factor {
    size_t input = 0, dim = 0;
};

struct Term {
    int64_t scale = 1;
    std::vector<Factor> factors;
    int64_t divisor = 1, offset = 0;
};

bool parse_count(std::string_view text, size_t &pos, int64_t &out) {
    size_t start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') ++pos;
    return pos > start && pos - start <= 15 && parse_int64(text.substr(start, pos - start), out);
}

std::vector<Term> parse_terms(const std::string &where, const std::string &text) {
    std::vector<Term> terms;
    if (text.empty()) return terms;
    for (std::string_view part : split(text, ',')) {
        Term t;
        size_t pos = 0;
        bool ok = true;
        int64_t n = 0;
        if (pos < part.size() && part[pos] != '@') ok = parse_count(part, pos, t.scale);
        while (ok && pos < part.size() && part[pos] == '@') {
            int64_t input = 0, dim = 0;
            ++pos;
            ok = parse_count(part, pos, input) && pos < part.size() && part[pos++] == '.' && parse_count(part, pos, dim);
            t.factors.push_back({static_cast<size_t>(input), static_cast<size_t>(dim)});
        }
        if (ok && pos < part.size() && part[pos] == '/') {
            ++pos;
            ok = parse_count(part, pos, t.divisor) && t.divisor > 0;
        }
        if (ok && pos < part.size() && (part[pos] == '+' || part[pos] == '-')) {
            const bool minus = part[pos++] == '-';
            ok = parse_count(part, pos, n);
            t.offset = minus ? -n : n;
        }
        if (!ok || pos != part.size())
            invalid(where, "bad term '", part, "' in dims '", text, "' (expected INT or [INT]@I.D...[/N][+N|-N])");
        terms.push_back(t);
    }
    return terms;
}

// The entries for inputs of the given shapes; a division that is not exact means the input size is not one
// the model can take (e.g. a UNet latent that is not a multiple of 8), said in those terms.
std::vector<int64_t> evaluate(const std::string &where, const std::vector<Term> &terms,
                              const std::vector<const Shape *> &shapes) {
    std::vector<int64_t> out;
    for (const Term &t : terms) {
        int64_t v = t.scale;
        for (const Factor &f : t.factors) {
            if (f.input >= shapes.size() || !shapes[f.input] || f.dim >= shapes[f.input]->size())
                invalid(where, "dims refer to dimension ", f.dim, " of input ", f.input, ", which it does not have");
            const int64_t d = (*shapes[f.input])[f.dim];
            if (d != 0 && v > kMaxElements / d) invalid(where, "a dimension product overflows");
            v *= d;
        }
        if (v % t.divisor != 0) {
            std::string which;
            for (const Factor &f : t.factors)
                which += cat(which.empty() ? "" : " x ", "dimension ", f.dim, " of input ", f.input, " ",
                             shape_str(*shapes[f.input]));
            invalid(where, "this model takes inputs whose ", which, t.scale == 1 ? "" : cat(" times ", t.scale),
                    " is a multiple of ", t.divisor, " (the size it was converted for is one)");
        }
        out.push_back(v / t.divisor + t.offset);
    }
    return out;
}

// The entries of `node` for inputs of these shapes (nullptr: an absent input, an error when a term uses it).
std::vector<int64_t> entries(const NodeView &node, const std::vector<const Shape *> &shapes) {
    return evaluate(node.where, parse_terms(node.where, node.attrs.get_string("dims", "")), shapes);
}

std::vector<int64_t> planned_entries(const InferContext &ctx) {
    std::vector<const Shape *> shapes;
    for (size_t i = 0; i < ctx.input_count(); ++i) shapes.push_back(&ctx.input(i).shape);
    return entries(ctx.node, shapes);
}

std::vector<TensorInfo> input_dims_infer(const InferContext &ctx) {
    ctx.require_inputs(1, 64);
    if (!ctx.attrs().has("dims")) ctx.error("needs the dims attribute");
    return {TensorInfo{DType::I64, {static_cast<int64_t>(planned_entries(ctx).size())}, {}}};
}

Tensor input_dims_value(const InferContext &ctx, const Allocator &alloc) {
    const std::vector<int64_t> values = planned_entries(ctx);
    Tensor t = make_tensor(alloc, DType::I64, {static_cast<int64_t>(values.size())});
    std::copy(values.begin(), values.end(), t.data<int64_t>());
    return t;
}

void input_dims_run(RunContext &ctx) {
    std::vector<const Shape *> shapes;
    for (size_t i = 0; i < ctx.input_count(); ++i) shapes.push_back(ctx.has_input(i) ? &ctx.input(i).shape() : nullptr);
    const std::vector<int64_t> values = entries(ctx.node, shapes);
    std::copy(values.begin(), values.end(), ctx.alloc_output(0).data<int64_t>());
}

} // namespace

void register_input_dims_ops(Registry &r) { r.add("InputDims", input_dims_infer, input_dims_run).with_plan_value(input_dims_value); }

} // namespace onnxstream
