#include "exec/op_flops.h"

#include <map>

namespace onnxstream {

namespace {

// Product of dims [from, to) of s, as a double (FLOP counts of big models pass 2^53 only far beyond any
// model here, and a double cannot overflow on a hostile shape).
double product(const Shape &s, size_t from = 0, size_t to = SIZE_MAX) {
    double p = 1;
    for (size_t i = from; i < s.size() && i < to; ++i) p *= static_cast<double>(s[i]);
    return p;
}

// Einsum: 2 x the product of every distinct index's size (a contraction loops over all of them once).
// Equations with an ellipsis are not counted.
double einsum_flops(const std::string &equation, const std::vector<Shape> &inputs) {
    const size_t arrow = equation.find("->");
    const std::string lhs = equation.substr(0, arrow);
    if (lhs.find('.') != std::string::npos) return 0;
    std::map<char, int64_t> sizes;
    size_t operand = 0, axis = 0;
    for (char c : lhs) {
        if (c == ',') {
            ++operand;
            axis = 0;
        } else if (c != ' ') {
            if (operand >= inputs.size() || axis >= inputs[operand].size()) return 0;
            sizes[c] = inputs[operand][axis++];
        }
    }
    double p = 2;
    for (const auto &kv : sizes) p *= static_cast<double>(kv.second);
    return p;
}

double flops(const std::string &type, const Attributes &attrs, const std::vector<Shape> &in,
             const std::vector<Shape> &out) {
    auto has = [&](size_t i) { return i < in.size() && !in[i].empty(); };
    if (out.empty() || out[0].empty()) return 0;
    const Shape &y = out[0];
    if (type == "Conv" && has(1)) return 2 * product(y) * product(in[1], 1); // W: [Cout, Cin/g, k...]
    if (type == "ConvTranspose" && has(0) && has(1)) return 2 * product(in[0]) * product(in[1], 1);
    if (type == "MatMul" && has(0)) return 2 * product(y) * static_cast<double>(in[0].back());
    if (type == "Gemm" && has(0) && in[0].size() == 2)
        return 2 * product(y) * static_cast<double>(in[0][attrs.get_int("transA", 0) != 0 ? 0 : 1]);
    if (type == "Einsum") return einsum_flops(attrs.get_string("equation", ""), in);
    if (type == "ScaledDotProductAttention" && has(0) && has(2) && in[2].size() >= 2 && y.size() >= 2) {
        // Q Kᵀ (S x T x D) and the weighted sum of V (S x T x Dv), per batch-head.
        const double t = static_cast<double>(in[2][in[2].size() - 2]);
        return 2 * product(y, 0, y.size() - 1) * t * (static_cast<double>(in[0].back()) + static_cast<double>(y.back()));
    }
    if (type == "GegluFeedForward" && has(0) && has(1) && has(3) && in[1].size() == 2 && in[3].size() == 2) {
        // x · W1 ([T, C] x [C, 2H]) then the gated half · W2 ([T, H] x [H, N]).
        const double rows = product(in[0], 0, in[0].size() - 1);
        return 2 * rows * static_cast<double>(in[1][0]) * static_cast<double>(in[1][1]) +
               2 * rows * static_cast<double>(in[3][0]) * static_cast<double>(in[3][1]);
    }
    return 0;
}

} // namespace

uint64_t op_flops(const std::string &type, const Attributes &attrs, const std::vector<Shape> &inputs,
                  const std::vector<Shape> &outputs) {
    const double f = flops(type, attrs, inputs, outputs);
    return f > 0 && f < 1.8e19 ? static_cast<uint64_t>(f) : 0;
}

} // namespace onnxstream
