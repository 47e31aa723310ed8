#include "onnx/quantize_export.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "ops/quant_kernels.h"
#include "tensor/int4_blocks.h"
#include "util/error.h"

namespace onnxstream::importer {

namespace {

// The channel axis a reader quantizes `name` along, or -1 when this reader cannot take an int8 weight.
int reader_axis(const Node &n, size_t input, const ConstantData &c) {
    // GegluFeedForward's W1 is [2H, C] (outputs along rows), its W2 [H, N] (outputs along columns).
    if (n.default_domain() && n.op_type == "GegluFeedForward")
        return c.shape().size() != 2 ? -1 : input == 1 ? 0 : input == 3 ? 1 : -1;
    if (!n.default_domain() || input != 1) return -1;
    const size_t rank = c.shape().size();
    if (n.op_type == "Conv") return rank >= 3 ? 0 : -1;
    if (n.op_type == "Gemm") return rank == 2 ? (n.attr_int("transB", 0) != 0 ? 0 : 1) : -1;
    if (n.op_type == "MatMul") return rank == 2 ? 1 : -1;
    return -1;
}

void write_file(const std::string &path, const void *data, size_t n) {
    FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) fail(ONNXSTREAM_ERR_IO, "cannot create ", path, ": ", std::strerror(errno));
    bool ok = n == 0 || std::fwrite(data, 1, n, f) == n;
    int err = errno;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) fail(ONNXSTREAM_ERR_IO, "cannot write ", path, ": ", std::strerror(err));
}

} // namespace

std::string w8_scales_file(const std::string &base) { return base + "_scales.bin"; }

std::map<std::string, int> plan_w8_weights(const IrGraph &g) {
    std::map<std::string, int> axes;
    std::map<std::string, bool> rejected;
    for (const Node &n : g.nodes)
        for (size_t k = 0; k < n.inputs.size(); ++k) {
            auto it = g.constants.find(n.inputs[k]);
            if (n.inputs[k].empty() || it == g.constants.end()) continue;
            const ConstantData &c = it->second;
            bool &bad = rejected[it->first];
            if (bad) continue;
            const int axis = reader_axis(n, k, c);
            if (c.type() != kOnnxFloat || c.shape().size() < 2 || c.numel() < kMinQuantizedElements || axis < 0) {
                bad = true;
                axes.erase(it->first);
                continue;
            }
            auto seen = axes.emplace(it->first, axis).first;
            if (seen->second != axis) {
                bad = true;
                axes.erase(seen);
            }
        }
    return axes;
}

std::map<std::string, int> plan_w4_weights(const IrGraph &g) {
    std::map<std::string, int> k_axes;
    const std::map<std::string, int> w8 = plan_w8_weights(g);
    std::map<std::string, bool> other_reader;
    auto fc_reader = [](const Node &n, size_t k) {
        if (!n.default_domain()) return false;
        return (k == 1 && (n.op_type == "MatMul" || n.op_type == "Gemm")) ||
               ((k == 1 || k == 3) && n.op_type == "GegluFeedForward");
    };
    for (const Node &n : g.nodes)
        for (size_t k = 0; k < n.inputs.size(); ++k)
            if (w8.count(n.inputs[k]) && !fc_reader(n, k)) other_reader[n.inputs[k]] = true;
    for (const auto &kv : w8) {
        const Shape &shape = g.constants.at(kv.first).shape();
        if (other_reader[kv.first] || shape.size() != 2) continue;
        const int k_axis = 1 - kv.second; // w8's axis is the output channels'
        if (shape[static_cast<size_t>(k_axis)] % int4::kDefaultBlock == 0) k_axes.emplace(kv.first, k_axis);
    }
    // The GEGLU feed-forward takes both weights int4 or neither.
    bool changed = true;
    while (changed) {
        changed = false;
        for (const Node &n : g.nodes) {
            if (!n.default_domain() || n.op_type != "GegluFeedForward" || n.inputs.size() < 4) continue;
            if (k_axes.count(n.inputs[1]) != k_axes.count(n.inputs[3])) {
                k_axes.erase(n.inputs[1]);
                k_axes.erase(n.inputs[3]);
                changed = true;
            }
        }
    }
    return k_axes;
}

void write_w4_weight(const ConstantData &c, int k_axis, int64_t block, const std::string &path) {
    int4::RowLayout l;
    const std::string why = int4::layout_of(c.shape(), k_axis, block, l);
    if (!why.empty()) fail(ONNXSTREAM_ERR_INTERNAL, why);
    std::vector<float> src(static_cast<size_t>(c.numel()));
    {
        auto bytes = c.bytes();
        std::memcpy(src.data(), bytes->data(), src.size() * sizeof(float));
    }
    std::vector<uint8_t> rows(static_cast<size_t>(l.n * l.row_bytes()));
    for (int64_t r = 0; r < l.n; ++r) {
        // [K, N]: channel r is column r; [N, K]: row r.
        const float *first = k_axis == 0 ? src.data() + r : src.data() + r * l.k;
        int4::quantize_row(first, k_axis == 0 ? l.n : 1, l, rows.data() + r * l.row_bytes());
    }
    write_file(path, rows.data(), rows.size());
}

void write_w8_weight(const ConstantData &c, int axis, const std::string &plain_path, const std::string &ohwi_path,
                     const std::string &scales_path) {
    const Shape &shape = c.shape();
    const size_t n = static_cast<size_t>(c.numel());
    auto bytes = c.bytes();
    std::vector<float> src(n);
    std::memcpy(src.data(), bytes->data(), n * sizeof(float));
    bytes.reset();
    std::vector<int8_t> q(n);
    std::vector<float> scales(static_cast<size_t>(shape[static_cast<size_t>(axis)]));
    quantize_per_channel_s8(src.data(), shape, axis, q.data(), scales.data());
    src = std::vector<float>();
    if (!plain_path.empty()) write_file(plain_path, q.data(), q.size());
    if (!ohwi_path.empty()) {
        // Conv's OHWI twin: the same int8 values in [O][H][W][I] order (scales stay per output channel).
        const size_t O = static_cast<size_t>(shape[0]), I = static_cast<size_t>(shape[1]);
        const size_t H = static_cast<size_t>(shape[2]), W = static_cast<size_t>(shape[3]);
        std::vector<int8_t> ohwi(n);
        for (size_t o = 0; o < O; ++o)
            for (size_t i = 0; i < I; ++i)
                for (size_t h = 0; h < H; ++h)
                    for (size_t w = 0; w < W; ++w) ohwi[((o * H + h) * W + w) * I + i] = q[((o * I + i) * H + h) * W + w];
        write_file(ohwi_path, ohwi.data(), ohwi.size());
    }
    write_file(scales_path, scales.data(), scales.size() * sizeof(float));
}

namespace {
std::vector<float> float_values(const ConstantData &c) {
    const size_t n = static_cast<size_t>(c.numel());
    auto bytes = c.bytes();
    std::vector<float> src(n);
    std::memcpy(src.data(), bytes->data(), n * sizeof(float));
    return src;
}

template <typename T> void write_plain_and_ohwi(const std::vector<T> &q, const Shape &shape, const std::string &plain_path,
                                                const std::string &ohwi_path) {
    if (!plain_path.empty()) write_file(plain_path, q.data(), q.size());
    if (ohwi_path.empty()) return;
    const size_t O = static_cast<size_t>(shape[0]), I = static_cast<size_t>(shape[1]);
    const size_t H = static_cast<size_t>(shape[2]), W = static_cast<size_t>(shape[3]);
    std::vector<T> ohwi(q.size());
    for (size_t o = 0; o < O; ++o)
        for (size_t i = 0; i < I; ++i)
            for (size_t h = 0; h < H; ++h)
                for (size_t w = 0; w < W; ++w) ohwi[((o * H + h) * W + w) * I + i] = q[((o * I + i) * H + h) * W + w];
    write_file(ohwi_path, ohwi.data(), ohwi.size());
}
} // namespace

void u8_weight_params(const ConstantData &c, float &scale, int64_t &zero_point) {
    std::vector<float> v = float_values(c);
    float lo = 0, hi = 0;
    for (float x : v)
        if (std::isfinite(x)) {
            lo = std::min(lo, x);
            hi = std::max(hi, x);
        }
    scale = hi > lo ? (hi - lo) / 255.0f : 1.0f;
    zero_point = static_cast<int64_t>(std::min(255.0f, std::max(0.0f, std::nearbyint(-lo / scale))));
}

void write_u8_weight(const ConstantData &c, float scale, int64_t zero_point, const std::string &plain_path,
                     const std::string &ohwi_path) {
    std::vector<float> v = float_values(c);
    std::vector<uint8_t> q(v.size());
    const float zp = static_cast<float>(zero_point);
    for (size_t i = 0; i < v.size(); ++i) {
        float r = std::nearbyint(v[i] / scale) + zp;
        q[i] = static_cast<uint8_t>(std::min(255.0f, std::max(0.0f, std::isfinite(r) ? r : 0.0f)));
    }
    v = std::vector<float>();
    write_plain_and_ohwi(q, c.shape(), plain_path, ohwi_path);
}

} // namespace onnxstream::importer
