// LoRA while streaming (weights/lora.h) through the executor: a MatMul ([in, out] weight), a Gemm with transB
// ([out, in]), a Conv whose kernel is served OIHW and one served OHWI (OnnxStream's _nhwc twin), each run
// whole and in row chunks, with every provider. The reference is computed here in double precision from the
// merged weights W + scale * alpha / rank * up . down.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "exec/model.h"
#include "test_util.h"

namespace onnxstream {
namespace {

using test::TempDir;

const char *kModel =
    "/mm/MatMul:MatMul*input:z(3,8);m.bin(float32:8,6)*output:u(3,6)\n"
    "/gm/Gemm:Gemm*input:z(3,8);g.bin(float32:6,8);gb.bin(float32:6)*output:v(3,6)*transB:1\n"
    "/plain/Conv:Conv*input:x(1,4,5,5);p_nchw.bin(float32:6,4,3,3);cb.bin(float32:6)*output:y(1,6,5,5)*"
    "kernel_shape:3,3;pads:1,1,1,1\n"
    "/twin/Conv:Conv*input:x(1,4,5,5);t_nchw.bin(float32:6,4,3,3);cb.bin(float32:6)*output:w(1,6,5,5)*"
    "kernel_shape:3,3;pads:1,1,1,1\n";

constexpr int kRank = 2;

std::vector<float> values(size_t n, uint32_t seed) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = static_cast<float>(seed >> 8) / 8388608.0f - 1.0f;
    }
    return v;
}

std::string bytes_of(const std::vector<float> &v) { return std::string(reinterpret_cast<const char *>(v.data()), v.size() * 4); }

// A safetensors file of float32 tensors (name, shape, values), in the given order.
struct Named {
    std::string name;
    std::vector<int64_t> shape;
    std::vector<float> data;
};
void write_safetensors(const std::string &path, const std::vector<Named> &tensors) {
    std::string header = "{", data;
    for (const Named &t : tensors) {
        std::string shape;
        for (int64_t d : t.shape) shape += (shape.empty() ? "" : ",") + std::to_string(d);
        header += (header.size() > 1 ? "," : "") + std::string("\"") + t.name + "\":{\"dtype\":\"F32\",\"shape\":[" +
                  shape + "],\"data_offsets\":[" + std::to_string(data.size()) + "," +
                  std::to_string(data.size() + t.data.size() * 4) + "]}";
        data += bytes_of(t.data);
    }
    header += "}";
    uint64_t n = header.size();
    test::write_file(path, std::string(reinterpret_cast<const char *>(&n), 8) + header + data);
}

struct Layer {
    std::vector<float> up, down; // [out, rank], [rank, in]
};

struct Fixture {
    TempDir dir;
    std::vector<float> z = values(3 * 8, 1), m = values(8 * 6, 2), g = values(6 * 8, 3), gb = values(6, 4);
    std::vector<float> x = values(4 * 25, 5), p = values(6 * 36, 6), t = values(6 * 36, 7), cb = values(6, 8);
    Layer lm{values(6 * kRank, 9), values(kRank * 8, 10)}, lg{values(6 * kRank, 11), values(kRank * 8, 12)};
    Layer lp{values(6 * kRank, 13), values(kRank * 36, 14)}, lt{values(6 * kRank, 15), values(kRank * 36, 16)};
    const float alpha = 1.5f, scale = 0.8f;
    Fixture() {
        test::write_file(dir.file("m.bin"), bytes_of(m));
        test::write_file(dir.file("g.bin"), bytes_of(g));
        test::write_file(dir.file("gb.bin"), bytes_of(gb));
        test::write_file(dir.file("p_nchw.bin"), bytes_of(p));
        test::write_file(dir.file("cb.bin"), bytes_of(cb));
        // Only the OHWI twin of t: the provider serves it in that layout.
        std::vector<float> ohwi(t.size());
        for (int o = 0; o < 6; ++o)
            for (int c = 0; c < 4; ++c)
                for (int k = 0; k < 9; ++k) ohwi[(o * 9 + k) * 4 + c] = t[(o * 4 + c) * 9 + k];
        test::write_file(dir.file("t_nhwc.bin"), bytes_of(ohwi));
        std::vector<Named> lora;
        auto add = [&](const std::string &key, const Layer &l, std::vector<int64_t> up_shape,
                       std::vector<int64_t> down_shape) {
            lora.push_back({key + ".lora_up.weight", up_shape, l.up});
            lora.push_back({key + ".lora_down.weight", down_shape, l.down});
            lora.push_back({key + ".alpha", {}, {alpha}});
        };
        add("lora_unet_mm", lm, {6, kRank}, {kRank, 8});
        add("lora_unet_gm", lg, {6, kRank}, {kRank, 8});
        add("lora_unet_plain", lp, {6, kRank, 1, 1}, {kRank, 4, 3, 3});
        add("lora_unet_twin", lt, {6, kRank, 1, 1}, {kRank, 4, 3, 3});
        write_safetensors(dir.file("lora.safetensors"), lora);
    }
    // delta[o][i] of a layer.
    double delta(const Layer &l, size_t in, size_t o, size_t i) const {
        double s = 0;
        for (int j = 0; j < kRank; ++j) s += double(l.up[o * kRank + j]) * l.down[j * in + i];
        return double(scale) * alpha / kRank * s;
    }
    std::vector<double> matmul_ref() const { // u = z . (m + delta^T)
        std::vector<double> u(18);
        for (int r = 0; r < 3; ++r)
            for (int o = 0; o < 6; ++o) {
                double s = 0;
                for (int i = 0; i < 8; ++i) s += double(z[r * 8 + i]) * (m[i * 6 + o] + delta(lm, 8, o, i));
                u[r * 6 + o] = s;
            }
        return u;
    }
    std::vector<double> gemm_ref() const { // v = z . (g + delta)^T + gb
        std::vector<double> v(18);
        for (int r = 0; r < 3; ++r)
            for (int o = 0; o < 6; ++o) {
                double s = gb[o];
                for (int i = 0; i < 8; ++i) s += double(z[r * 8 + i]) * (g[o * 8 + i] + delta(lg, 8, o, i));
                v[r * 6 + o] = s;
            }
        return v;
    }
    std::vector<double> conv_ref(const std::vector<float> &w, const Layer &l) const {
        std::vector<double> y(6 * 25);
        for (int o = 0; o < 6; ++o)
            for (int i = 0; i < 5; ++i)
                for (int j = 0; j < 5; ++j) {
                    double s = cb[o];
                    for (int c = 0; c < 4; ++c)
                        for (int ki = 0; ki < 3; ++ki)
                            for (int kj = 0; kj < 3; ++kj) {
                                int r = i + ki - 1, q = j + kj - 1;
                                if (r < 0 || r >= 5 || q < 0 || q >= 5) continue;
                                const size_t k = static_cast<size_t>((c * 3 + ki) * 3 + kj);
                                s += double(x[(c * 5 + r) * 5 + q]) * (w[static_cast<size_t>(o) * 36 + k] + delta(l, 36, o, k));
                            }
                    y[(o * 5 + i) * 5 + j] = s;
                }
        return y;
    }
};

std::unique_ptr<Model> load(const Fixture &f, onnxstream_provider_kind_t provider, size_t chunk_bytes) {
    ModelOptions mo;
    mo.threads = 2;
    mo.provider = provider;
    mo.run.weight_chunk_bytes = chunk_bytes;
    auto model = std::make_unique<Model>(mo);
    model->load_string(kModel, f.dir.path(), "model.txt");
    model->push_input("z", DType::F32, {3, 8}, f.z.data(), f.z.size() * 4);
    model->push_input("x", DType::F32, {1, 4, 5, 5}, f.x.data(), f.x.size() * 4);
    return model;
}

void expect_close(const Model &model, const char *name, const std::vector<double> &ref, const std::string &what) {
    const int k = model.find_output(name);
    ASSERT_GE(k, 0) << name;
    const Tensor &t = model.outputs()[static_cast<size_t>(k)];
    ASSERT_EQ(static_cast<size_t>(t.numel()), ref.size());
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
        const double d = t.data<float>()[i] - ref[i];
        err += d * d;
        norm += ref[i] * ref[i];
    }
    EXPECT_LE(std::sqrt(err / norm), 1e-6) << what << " output " << name;
}

TEST(Lora, EveryLayerKindWholeAndInChunksWithEveryProvider) {
    Fixture f;
    for (onnxstream_provider_kind_t provider : {ONNXSTREAM_PROVIDER_NOCACHE, ONNXSTREAM_PROVIDER_PREFETCH,
                                                ONNXSTREAM_PROVIDER_MMAP, ONNXSTREAM_PROVIDER_RAM}) {
        for (size_t chunk : {size_t(0), size_t(100)}) { // 100 bytes: every weight in chunks of a row or two
            const std::string what = "provider " + std::to_string(provider) + ", chunk " + std::to_string(chunk);
            auto model = load(f, provider, chunk);
            EXPECT_EQ(model->add_lora(f.dir.file("lora.safetensors"), f.scale, "lora_unet_"), 4u);
            for (int run = 0; run < 2; ++run) { // the RAM provider keeps weights: the deltas must not pile up
                model->run({});
                expect_close(*model, "u", f.matmul_ref(), what);
                expect_close(*model, "v", f.gemm_ref(), what);
                expect_close(*model, "y", f.conv_ref(f.p, f.lp), what);
                expect_close(*model, "w", f.conv_ref(f.t, f.lt), what);
            }
        }
    }
}

TEST(Lora, TwoLorasAddUpAndNothingIsAddedOnError) {
    Fixture f;
    auto model = load(f, ONNXSTREAM_PROVIDER_NOCACHE, 0);
    // Half the scale twice is the whole scale once.
    EXPECT_EQ(model->add_lora(f.dir.file("lora.safetensors"), f.scale / 2, ""), 4u);
    // A file with a module this model lacks is refused whole, and adds nothing.
    write_safetensors(f.dir.file("other.safetensors"),
                      {{"lora_unet_mm.lora_up.weight", {6, 1}, values(6, 20)},
                       {"lora_unet_mm.lora_down.weight", {1, 8}, values(8, 21)},
                       {"lora_unet_nowhere.lora_up.weight", {6, 1}, values(6, 22)},
                       {"lora_unet_nowhere.lora_down.weight", {1, 8}, values(8, 23)}});
    std::string msg = test::expect_error(ONNXSTREAM_ERR_INVALID_ARGUMENT,
                                         [&] { model->add_lora(f.dir.file("other.safetensors"), 1.0f, ""); });
    EXPECT_CONTAINS(msg, "lora_unet_nowhere");
    EXPECT_EQ(model->add_lora(f.dir.file("lora.safetensors"), f.scale / 2, ""), 4u);
    model->run({});
    expect_close(*model, "u", f.matmul_ref(), "two halves");
    expect_close(*model, "w", f.conv_ref(f.t, f.lt), "two halves");
}

TEST(Lora, MalformedFilesAreClearErrors) {
    Fixture f;
    auto model = load(f, ONNXSTREAM_PROVIDER_NOCACHE, 0);
    test::write_file(f.dir.file("short.safetensors"), std::string("\x10\0\0\0\0\0\0\0{", 9));
    test::expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { model->add_lora(f.dir.file("short.safetensors"), 1.0f, ""); });
    write_safetensors(f.dir.file("alpha.safetensors"),
                      {{"lora_unet_mm.lora_up.weight", {6, 1}, values(6, 20)},
                       {"lora_unet_mm.lora_down.weight", {1, 8}, values(8, 21)},
                       {"lora_unet_mm.alpha", {2}, values(2, 22)}});
    EXPECT_CONTAINS(test::expect_error(ONNXSTREAM_ERR_INVALID_ARGUMENT,
                                       [&] { model->add_lora(f.dir.file("alpha.safetensors"), 1.0f, ""); }),
                    "alpha one value");
    test::expect_error(ONNXSTREAM_ERR_IO, [&] { model->add_lora(f.dir.file("absent.safetensors"), 1.0f, ""); });
    // Still usable, and unchanged.
    model->run({});
}

} // namespace
} // namespace onnxstream
