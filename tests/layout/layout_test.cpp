// The layout plan end to end through the public C API: convert gen_layout.py's PyTorch conv chains, run each
// with the plan on and with ONNXSTREAM_FLAG_NCHW_ONLY, compare both with ONNX Runtime, and check that the
// plan leaves only the boundary transposes its expect.txt counts (fewer than without it).
//
// Environment: ONNXSTREAM_LAYOUT_CASES (gen_layout.py's --out).
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "common/conversion_util.h"
#include "onnxstream.h"

namespace {

using namespace onnxstream::testing;

std::string cases_dir() {
    const char *v = std::getenv("ONNXSTREAM_LAYOUT_CASES");
    return v ? v : "";
}

class Layout : public ::testing::Test {
protected:
    void SetUp() override {
        if (cases_dir().empty() || !exists(cases_dir() + "/models"))
            GTEST_FAIL() << "ONNXSTREAM_LAYOUT_CASES does not point at gen_layout.py's output";
    }

    void check(const std::string &name) {
        const std::string dir = cases_dir() + "/models/" + name;
        Conversion c = convert(dir + "/model.onnx", scratch.out());
        ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
        uint64_t expected = 0;
        for (const auto &line : lines_of(read_text(dir + "/expect.txt"))) {
            std::istringstream in(line);
            std::string key;
            in >> key;
            if (key == "transposes") in >> expected;
        }
        uint64_t with_plan = 0, without = 0;
        onnxstream_model_options_t planned, nchw_only;
        onnxstream_model_options_init(&planned);
        onnxstream_model_options_init(&nchw_only);
        nchw_only.flags = ONNXSTREAM_FLAG_NCHW_ONLY;
        run_and_compare(scratch.out(), dir, 1e-5, 1e-4, &planned, &with_plan);
        run_and_compare(scratch.out(), dir, 1e-5, 1e-4, &nchw_only, &without);
        std::printf("%s: %llu transposes per run with the layout plan, %llu without\n", name.c_str(),
                    static_cast<unsigned long long>(with_plan), static_cast<unsigned long long>(without));
        EXPECT_EQ(with_plan, expected) << name << ": transposes with the plan (boundary conversions only)";
        EXPECT_LT(with_plan, without) << name;
    }

    Scratch scratch;
};

TEST_F(Layout, ConvChain) { check("conv_chain"); }
TEST_F(Layout, YoloBlock) { check("yolo_block"); }
TEST_F(Layout, DeconvChain) { check("deconv_chain"); }
TEST_F(Layout, MixedConsumers) { check("mixed_consumers"); }
TEST_F(Layout, SqueezeExcite) { check("squeeze_excite"); }

} // namespace
