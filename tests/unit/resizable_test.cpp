// A resizable model.txt ('?' dimensions and InputDims, as onnxstream-convert --resizable writes them) run at
// several input sizes by one Model: each new size is planned once and the plans are kept, InputDims gives
// the Reshape its target for the pushed size, and sizes the rules do not divide fail with a message. The
// reference is computed here: Reshape keeps the element order, Sigmoid is 1 / (1 + e^-x).
#include <cmath>
#include <string>
#include <vector>

#include "exec/model.h"
#include "test_util.h"

namespace onnxstream {
namespace {

// x (1, C, W) -> [1, C*W/2, 2] -> Sigmoid.
const char *kResizable =
    "dims:InputDims*input:x(1,?,?)*output:t(3)*dims:1,@0.1@0.2/2,2\n"
    "r:Reshape*input:x(1,?,?);t(3)*output:y(1,?,2)\n"
    "s:Sigmoid*input:y(1,?,2)*output:z(1,?,2)\n";

std::vector<float> ramp(size_t n) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = 0.25f * static_cast<float>(i) - 2.0f;
    return v;
}

void run_at(Model &model, int64_t c, int64_t w) {
    const std::vector<float> x = ramp(static_cast<size_t>(c * w));
    model.push_input("x", DType::F32, {1, c, w}, x.data(), x.size() * 4);
    model.run({});
    const Tensor &z = model.outputs().at(0);
    ASSERT_EQ(z.shape(), (Shape{1, c * w / 2, 2})) << c << "x" << w;
    for (size_t i = 0; i < x.size(); ++i)
        EXPECT_NEAR(z.data<float>()[i], 1.0 / (1.0 + std::exp(-static_cast<double>(x[i]))), 1e-6) << i;
}

TEST(Resizable, EachSizePlannedFromThePushedShapes) {
    Model model(ModelOptions{});
    model.load_string(kResizable, "", "model.txt");
    run_at(model, 3, 4);
    run_at(model, 5, 2);
    run_at(model, 1, 8);
    run_at(model, 3, 4); // back to the first size: its kept plan
}

TEST(Resizable, SizeTheRulesDoNotDivideFails) {
    Model model(ModelOptions{});
    model.load_string(kResizable, "", "model.txt");
    const std::vector<float> x(9, 0.0f);
    model.push_input("x", DType::F32, {1, 3, 3}, x.data(), x.size() * 4);
    const std::string msg = test::expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { model.run({}); });
    EXPECT_NE(msg.find("model.txt:1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("multiple of 2"), std::string::npos) << msg;
}

TEST(Resizable, DeclaredDimensionsStillBind) {
    Model model(ModelOptions{});
    model.load_string(kResizable, "", "model.txt");
    const std::vector<float> x(8, 0.0f);
    const std::string msg = test::expect_error(ONNXSTREAM_ERR_INVALID_ARGUMENT, [&] {
        model.push_input("x", DType::F32, {2, 2, 2}, x.data(), x.size() * 4); // dimension 0 is declared 1
    });
    EXPECT_NE(msg.find("(1,?,?)"), std::string::npos) << msg;
}

TEST(Resizable, FixedModelNamesTheWayToResize) {
    Model model(ModelOptions{});
    model.load_string("s:Sigmoid*input:x(1,4)*output:z(1,4)\n", "", "model.txt");
    const std::vector<float> x(8, 0.0f);
    const std::string msg = test::expect_error(ONNXSTREAM_ERR_INVALID_ARGUMENT, [&] {
        model.push_input("x", DType::F32, {1, 8}, x.data(), x.size() * 4);
    });
    EXPECT_NE(msg.find("--resizable"), std::string::npos) << msg;
}

TEST(Resizable, WeightsMustBeStatic) {
    Model model(ModelOptions{});
    const std::string msg = test::expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] {
        model.load_string("m:MatMul*input:x(1,?);w.bin(float32:?,4)*output:y(1,4)\n", "", "model.txt");
    });
    EXPECT_NE(msg.find("bad dimension '?'"), std::string::npos) << msg;
}

TEST(Resizable, BadDimsRuleIsAnError) {
    Model model(ModelOptions{});
    model.load_string("d:InputDims*input:x(1,?)*output:t(1)*dims:@0.x\n", "", "model.txt");
    const std::vector<float> x(3, 0.0f);
    model.push_input("x", DType::F32, {1, 3}, x.data(), x.size() * 4);
    const std::string msg = test::expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { model.run({}); });
    EXPECT_NE(msg.find("bad term"), std::string::npos) << msg;
}

} // namespace
} // namespace onnxstream
