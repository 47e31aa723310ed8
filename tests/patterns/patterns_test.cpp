// The importer's recognition passes end to end through the public C API: convert the PyTorch exports
// gen_patterns.py wrote, check the op counts its expect.txt lists (the decompositions are gone, the fused op
// is there, near-misses are left alone) and that the converted model still matches ONNX Runtime.
//
// Environment: ONNXSTREAM_PATTERNS_CASES (gen_patterns.py's --out).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "common/conversion_util.h"
#include "onnxstream.h"
#include "xnnpack/weights_cache.h"

namespace {

using namespace onnxstream::testing;

std::string cases_dir() {
    const char *v = std::getenv("ONNXSTREAM_PATTERNS_CASES");
    return v ? v : "";
}

// Whether this build's engine has ScaledDotProductAttention (the attention pass only fuses when it does):
// load a one-op model.txt that uses it.
bool engine_has_attention() {
    Scratch s("onnxstream-patterns-probe");
    {
        std::ofstream f(s.path() + "/model.txt");
        f << "probe:ScaledDotProductAttention*input:q(1,2,4);k(1,3,4);v(1,3,4)*output:o(1,2,4)*scale:0.5;"
             "transpose_k:0\n";
    }
    onnxstream_model_t *m = nullptr;
    if (onnxstream_model_create(nullptr, &m) != ONNXSTREAM_OK) return false;
    bool ok = onnxstream_model_load(m, s.path().c_str()) == ONNXSTREAM_OK;
    onnxstream_model_destroy(m);
    return ok;
}

class Patterns : public ::testing::Test {
protected:
    void SetUp() override {
        if (cases_dir().empty() || !exists(cases_dir() + "/models"))
            GTEST_FAIL() << "ONNXSTREAM_PATTERNS_CASES does not point at gen_patterns.py's output";
    }

    void check(const std::string &name) {
        const std::string dir = cases_dir() + "/models/" + name;
        Conversion c = convert(dir + "/model.onnx", scratch.out());
        ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
        std::printf("%s\n", c.report.c_str());
        const std::string txt = read_text(scratch.out() + "/model.txt");
        for (const auto &line : lines_of(read_text(dir + "/expect.txt"))) {
            std::istringstream in(line);
            std::string op;
            size_t want = 0;
            in >> op >> want;
            EXPECT_EQ(count_ops(txt, op), want) << name << ": number of " << op << " ops";
        }
        run_and_compare(scratch.out(), dir, 1e-5, 1e-4);
    }

    void check_attention(const std::string &name) {
        if (!engine_has_attention())
            GTEST_SKIP() << "the engine has no ScaledDotProductAttention op yet, so attention is not fused";
        check(name);
    }

    Scratch scratch;
};

TEST_F(Patterns, GroupNormOpset14) { check("groupnorm_opset14"); }
TEST_F(Patterns, GroupNormVaeStyleOpset13) { check("groupnorm_vae_opset13"); }
TEST_F(Patterns, GroupNormOnMergedViews) { check("groupnorm_vae_view_opset14"); }
TEST_F(Patterns, LayerNormOpset14) { check("layernorm_opset14"); }
TEST_F(Patterns, LayerNormOverTwoAxes) { check("layernorm_two_axes_opset13"); }
TEST_F(Patterns, NormOverMiddleAxisIsNotLayerNorm) { check("norm_middle_axis"); }
TEST_F(Patterns, NormOverMixedAxesIsNotLayerNorm) { check("norm_mixed_axes"); }
TEST_F(Patterns, GeluFormsOpset14) { check("gelu_opset14"); }
TEST_F(Patterns, GeluFormsOpset13) { check("gelu_opset13"); }
TEST_F(Patterns, GeluWithoutHalfIsNotGelu) { check("gelu_not_quite"); }
TEST_F(Patterns, GegluFeedForward) { check("geglu_ffn_opset14"); }
TEST_F(Patterns, GegluSplitGemmTanh) { check("geglu_split_2d_opset13"); }
TEST_F(Patterns, GegluGatingTheFirstHalfIsLeftAlone) { check("geglu_first_half_gated"); }
// Weights of 3.3 and 1.6 MB: hidden blocks whose weights fit half of a thread's level-2 cache.
TEST_F(Patterns, GegluFeedForwardInL2Blocks) { check("geglu_ffn_l2_blocks"); }
TEST_F(Patterns, SiluFormsBecomeSwish) { check("silu_opset14"); }
TEST_F(Patterns, QuickGeluBecomesSwishWithAlpha) { check("quick_gelu_opset14"); }
TEST_F(Patterns, SigmoidOfAnotherValueIsNotSiLU) { check("silu_not_quite"); }
TEST_F(Patterns, LinearBiasJoinsTheMatMul) { check("linear_3d_4d"); }
TEST_F(Patterns, BiasOfAProductReadTwiceStaysAnAdd) { check("linear_product_read_twice"); }

// The fused feed-forward in hidden-column blocks with both weights streamed in row chunks (a 1 KiB budget:
// blocks of 4 columns out of 128), and in one block (max-speed): same result as ONNX Runtime's.
TEST_F(Patterns, GegluFeedForwardChunked) {
    const std::string dir = cases_dir() + "/models/geglu_ffn_opset14";
    Conversion c = convert(dir + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    ASSERT_EQ(count_ops(read_text(scratch.out() + "/model.txt"), "GegluFeedForward"), 1u);
    onnxstream_model_options_t o;
    onnxstream_model_options_init(&o);
    o.memory_mode = ONNXSTREAM_MEMORY_MIN;
    o.weight_chunk_bytes = 1024;
    run_and_compare(scratch.out(), dir, 1e-5, 1e-4, &o);
    onnxstream_model_options_init(&o);
    o.memory_mode = ONNXSTREAM_MEMORY_MAX_SPEED;
    run_and_compare(scratch.out(), dir, 1e-5, 1e-4, &o);

    // With a persistent weights cache, a second model maps every block's packed weights that the first
    // one stored (XNNPACK 2024 builds; the 2022 ones keep none).
    const std::string cache = scratch.path() + "/geglu.oswc";
    onnxstream_model_options_init(&o);
    o.memory_mode = ONNXSTREAM_MEMORY_MIN;
    o.weight_chunk_bytes = 1024;
    o.cache_path = cache.c_str();
    onnxstream_run_stats_t first{}, second{};
    run_and_compare(scratch.out(), dir, 1e-5, 1e-4, &o, nullptr, &first);
    run_and_compare(scratch.out(), dir, 1e-5, 1e-4, &o, nullptr, &second);
    if (onnxstream::xnn::has_weights_cache()) {
        EXPECT_GT(first.packed_weights_stored, 2u); // W1's halves and W2, block by block
        EXPECT_EQ(second.packed_weights_mapped, first.packed_weights_stored);
        EXPECT_EQ(second.packed_weights_stored, 0u);
    } else {
        EXPECT_EQ(first.packed_weights_stored + second.packed_weights_mapped, 0u);
    }
}

TEST_F(Patterns, SoftmaxOnOtherAxisIsNotAttention) { check("softmax_other_axis"); }
TEST_F(Patterns, DiffusersCrossAttention) { check_attention("attention_cross_opset14"); }
TEST_F(Patterns, ClipCausalAttention) { check_attention("attention_clip_opset14"); }
TEST_F(Patterns, GptAttentionOpset13) { check_attention("attention_gpt_opset13"); }

} // namespace
