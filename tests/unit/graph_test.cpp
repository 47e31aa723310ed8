// Graph construction from parsed model.txt: values, producers/consumers, graph inputs/outputs, weight
// specs, and every structural error (with file:line:column).
#include <string>

#include <gtest/gtest.h>

#include "graph/graph.h"
#include "ops/registry.h"
#include "test_util.h"
#include "weights/weight_files.h"

using namespace onnxstream;
using onnxstream::test::expect_error;

namespace {

std::unique_ptr<Graph> build(const std::string &text) {
    return std::make_unique<Graph>(parse_model_txt(text, "m.txt"), "m.txt");
}

std::string graph_error(Status status, const std::string &text) {
    return expect_error(status, [&] { build(text); });
}

// Structural checks run before the unknown-operator check, so they work with any op type; tests of
// successful construction need real registered ops.
#define REQUIRE_OPS(...)                                                                                      \
    for (const char *op_type : {__VA_ARGS__})                                                                 \
        if (!Registry::builtin().find(op_type)) GTEST_SKIP() << op_type << " is not registered yet";

} // namespace

TEST(Graph, ValuesInputsOutputsAndWeights) {
    REQUIRE_OPS("Add", "Relu");
    auto g = build("a:Add*input:input_2E_1(2);w.bin(float32:2)*output:y(2)\n"
                   "\n"
                   "b:Relu*input:y(2)*output:z(2)\n"
                   "c:Add*input:y(2);z(2)*output:out(2)\n");
    ASSERT_EQ(g->nodes().size(), 3u);
    ASSERT_EQ(g->values().size(), 4u);
    ASSERT_EQ(g->inputs().size(), 1u);
    EXPECT_EQ(g->values()[static_cast<size_t>(g->inputs()[0])].name, "input_2E_1");
    ASSERT_EQ(g->outputs().size(), 1u);
    EXPECT_EQ(g->values()[static_cast<size_t>(g->outputs()[0])].name, "out");

    int y = g->find_value("y");
    ASSERT_GE(y, 0);
    const Value &vy = g->values()[static_cast<size_t>(y)];
    EXPECT_EQ(vy.producer, 0);
    EXPECT_EQ(vy.consumers, (std::vector<int>{1, 2}));
    EXPECT_EQ(vy.declared_shape, (Shape{2}));

    EXPECT_EQ(g->find_value("input.1"), g->inputs()[0]) << "original names are found through escaping";
    EXPECT_EQ(g->find_value("input_2E_1"), g->inputs()[0]);
    EXPECT_EQ(g->find_value("nope"), -1);
    EXPECT_EQ(g->find_value("w.bin"), -1) << "weights are not values";

    const Node &a = g->nodes()[0];
    EXPECT_EQ(a.where, "m.txt:1 (a Add)");
    EXPECT_EQ(g->nodes()[1].where, "m.txt:3 (b Relu)") << "blank lines count in line numbers";
    ASSERT_EQ(a.inputs.size(), 2u);
    EXPECT_EQ(a.inputs[0].kind, NodeInput::Value);
    EXPECT_EQ(a.inputs[1].kind, NodeInput::Weight);
    EXPECT_EQ(a.inputs[1].weight.file, "w.bin");
    EXPECT_EQ(a.inputs[1].weight.dtype, DType::F32);
    EXPECT_EQ(a.inputs[1].weight.shape, (Shape{2}));
    EXPECT_EQ(a.inputs[1].weight.byte_size(), 8u);
    EXPECT_EQ(a.inputs[1].weight.wanted, Layout::Plain);

    g->add_output(y);
    g->add_output(y);
    EXPECT_EQ(g->outputs(), (std::vector<int>{g->find_value("out"), y})) << "added once, after the natural outputs";
}

TEST(Graph, OmittedInputsAndQuantizedWeights) {
    REQUIRE_OPS("Relu");
    auto g = build("a:Relu*input:x(2);;q.bin(uint8[0.5,3]:2,2)*output:y(2)\n");
    const Node &n = g->nodes()[0];
    ASSERT_EQ(n.inputs.size(), 3u);
    EXPECT_EQ(n.inputs[1].kind, NodeInput::None);
    EXPECT_TRUE(n.inputs[2].weight.quant.present);
    EXPECT_EQ(n.inputs[2].weight.quant.zero_point, 3);
    EXPECT_EQ(n.inputs[2].weight.byte_size(), 4u);
}

TEST(Graph, PerChannelScalesAreLoadedOncePerFile) {
    REQUIRE_OPS("MatMul");
    onnxstream::test::TempDir dir;
    onnxstream::test::write_floats(dir.file("s.bin"), {0.5f, 0.25f, 2.0f});
    auto g = build("a:MatMul*input:x(1,2);w.bin(int8[@s.bin,1]:2,3)*output:y(1,3)\n"
                   "b:MatMul*input:x(1,2);w.bin(int8[@s.bin,1]:2,3)*output:z(1,3)\n");
    const QuantParams &q = g->nodes()[0].inputs[1].weight.quant;
    EXPECT_TRUE(q.per_channel());
    EXPECT_EQ(q.axis, 1);
    EXPECT_FALSE(q.channel_scales);
    load_quant_scales(*g, dir.path());
    const QuantParams &a = g->nodes()[0].inputs[1].weight.quant, &b = g->nodes()[1].inputs[1].weight.quant;
    ASSERT_TRUE(a.channel_scales);
    EXPECT_EQ(*a.channel_scales, (std::vector<float>{0.5f, 0.25f, 2.0f}));
    EXPECT_EQ(a.channel_scales, b.channel_scales) << "one file, one shared vector";
}

TEST(Graph, PerChannelScalesErrors) {
    REQUIRE_OPS("MatMul");
    onnxstream::test::TempDir dir;
    onnxstream::test::write_floats(dir.file("s.bin"), {0.5f, 0.25f});
    auto g = build("a:MatMul*input:x(1,2);w.bin(int8[@s.bin,1]:2,3)*output:y(1,3)\n");
    std::string msg = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { load_quant_scales(*g, dir.path()); });
    EXPECT_CONTAINS(msg, "m.txt:1 (a MatMul): scales file ");
    EXPECT_CONTAINS(msg, "s.bin has 8 bytes but weight w.bin (2,3) needs 3 float32 scales along axis 1 (12 bytes)");
    g = build("a:MatMul*input:x(1,2);w.bin(int8[@missing.bin,0]:2,3)*output:y(1,3)\n");
    msg = expect_error(ONNXSTREAM_ERR_IO, [&] { load_quant_scales(*g, dir.path()); });
    EXPECT_CONTAINS(msg, "cannot open scales file " + dir.file("missing.bin"));
    onnxstream::test::write_floats(dir.file("z.bin"), {0.5f, 0.0f});
    g = build("a:MatMul*input:x(1,2);w.bin(int8[@z.bin,0]:2,3)*output:y(1,3)\n");
    msg = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { load_quant_scales(*g, dir.path()); });
    EXPECT_CONTAINS(msg, "scale 1 is 0 (expected positive and finite)");
    graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:x(2);w.bin(int8[@../s.bin,0]:2,2)*output:y(2)\n");
}

TEST(Graph, PerChannelOhwiWeightsUseAxisZero) {
    REQUIRE_OPS("Conv");
    if (Registry::builtin().find("Conv")->ohwi_weight_input != 1) GTEST_SKIP() << "Conv does not ask for OHWI";
    std::string msg = graph_error(ONNXSTREAM_ERR_UNSUPPORTED,
                                  "c:Conv*input:x(1,2,3,3);w_nchw.bin(int8[@s.bin,1]:4,2,1,1)*output:y(1,4,3,3)\n");
    EXPECT_CONTAINS(msg, "per-channel Conv weights must use axis 0");
    build("c:Conv*input:x(1,2,3,3);w_nchw.bin(int8[@s.bin,0]:4,2,1,1)*output:y(1,4,3,3)\n");
}

TEST(Graph, ConvWeightsAskForOhwi) {
    REQUIRE_OPS("Conv");
    const OpDef *conv = Registry::builtin().find("Conv");
    if (conv->ohwi_weight_input != 1) GTEST_SKIP() << "Conv does not ask for OHWI weights";
    auto g = build("c:Conv*input:x(1,2,3,3);w_nchw.bin(float32:4,2,1,1);b.bin(float32:4)*output:y(1,4,3,3)\n");
    EXPECT_EQ(g->nodes()[0].inputs[1].weight.wanted, Layout::OHWI);
    EXPECT_EQ(g->nodes()[0].inputs[2].weight.wanted, Layout::Plain) << "only the 4-D weight input";
}

TEST(Graph, DuplicateProducer) {
    std::string msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:x(1)*output:y(1)\n"
                                                                "b:Foo*input:x(1)*output:z(1);y(1)\n");
    EXPECT_CONTAINS(msg, "m.txt:2:30: tensor 'y' is already produced by line 1");
}

TEST(Graph, DuplicateOutputInOneLine) {
    std::string msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:x(1)*output:y(1);y(1)\n");
    EXPECT_CONTAINS(msg, "m.txt:1:30: tensor 'y' is already produced by line 1");
}

TEST(Graph, UseBeforeProduce) {
    std::string msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:y(1)*output:z(1)\n"
                                                                "b:Foo*input:x(1)*output:y(1)\n");
    EXPECT_CONTAINS(msg, "m.txt:2:25: tensor 'y' is used by line 1 before this line produces it");
}

TEST(Graph, OwnOutputAsInput) {
    std::string msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:y(1)*output:y(1)\n");
    EXPECT_CONTAINS(msg, "m.txt:1:25: tensor 'y' is both an input and an output of this line (a cycle)");
}

TEST(Graph, InconsistentDeclaredShapes) {
    std::string msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:x(1,2)*output:y(2)\n"
                                                                "b:Foo*input:y(3)*output:z(1)\n");
    EXPECT_CONTAINS(msg, "m.txt:2:13: tensor 'y' is declared (3) here but (2) before");
    msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:x(1,2)*output:y(2)\n"
                                                    "b:Foo*input:x(2,1)*output:z(1)\n");
    EXPECT_CONTAINS(msg, "m.txt:2:13: tensor 'x' is declared (2,1) here but (1,2) before");
}

TEST(Graph, UnsafeWeightFileNames) {
    for (const char *name : {"../x.bin", "/etc/passwd.bin", "a/b.bin", "a\\b.bin", "..", ".", "c:x.bin"}) {
        std::string text = std::string("a:Foo*input:x(1);") + name + "(float32:1)*output:y(1)\n";
        std::string msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, text);
        EXPECT_CONTAINS(msg, "m.txt:1:18: weight file name '" + std::string(name) + "' is not a plain file name");
    }
    EXPECT_TRUE(is_safe_weight_file_name("model_2E_0_2E_conv_2E_weight_nchw.bin"));
    EXPECT_TRUE(is_safe_weight_file_name("..bin"));
    EXPECT_TRUE(is_safe_weight_file_name("x"));
    EXPECT_FALSE(is_safe_weight_file_name(""));
    EXPECT_FALSE(is_safe_weight_file_name(std::string("a\0b", 3)));
}

TEST(Graph, OneWeightFileHasOneDeclaration) {
    // Providers and the planner cache weights by file name: a second, different declaration would be
    // served the first one's tensor.
    std::string msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:x(2);s.bin(int64:2)*output:y(2)\n"
                                                                "b:Foo*input:y(2);s.bin(float32:4)*output:z(2)\n");
    EXPECT_CONTAINS(msg, "m.txt:2:18: weight file 's.bin' is declared float32 (4) here but int64 (2) on line 1");
    msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:x(2);w.bin(float32:4)*output:y(2)\n"
                                                    "b:Foo*input:y(2);w.bin(float32:2,2)*output:z(2)\n");
    EXPECT_CONTAINS(msg, "is declared float32 (2,2) here but float32 (4) on line 1");
    msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:Foo*input:x(2);q.bin(uint8[0.5,3]:4)*output:y(2)\n"
                                                    "b:Foo*input:y(2);q.bin(uint8[0.5,4]:4)*output:z(2)\n");
    EXPECT_CONTAINS(msg, "is declared uint8[0.5,4] (4) here but uint8[0.5,3] (4) on line 1");
    // The same declaration twice is fine (only the unknown op type fails).
    graph_error(ONNXSTREAM_ERR_UNSUPPORTED, "a:Foo*input:x(2);w.bin(float32:4)*output:y(2)\n"
                                            "b:Foo*input:y(2);w.bin(float32:4)*output:z(2)\n");
}

TEST(Graph, UnknownOperatorsAreAllListed) {
    std::string msg = graph_error(ONNXSTREAM_ERR_UNSUPPORTED, "a:NoSuchOpA*input:x(1)*output:y(1)\n"
                                                              "b:NoSuchOpB*input:y(1)*output:z(1)\n"
                                                              "c:NoSuchOpA*input:z(1)*output:w(1)\n");
    EXPECT_CONTAINS(msg, "m.txt: unsupported operator types: ");
    EXPECT_CONTAINS(msg, "NoSuchOpA x2 (first: a at line 1)");
    EXPECT_CONTAINS(msg, "NoSuchOpB x1 (first: b at line 2)");
}

TEST(Graph, EmptyModels) {
    EXPECT_CONTAINS(graph_error(ONNXSTREAM_ERR_INVALID_MODEL, ""), "m.txt: the model has no operations");
    EXPECT_CONTAINS(graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "\n\n\r\n"), "mixed line endings");
    EXPECT_CONTAINS(graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "\n\n"), "the model has no operations");
}

TEST(Graph, StructuralErrorsComeBeforeUnknownOperators) {
    // An unknown op type does not hide a broken graph (the message points at the broken line).
    std::string msg = graph_error(ONNXSTREAM_ERR_INVALID_MODEL, "a:NoSuchOp*input:x(1)*output:y(1)\n"
                                                                "b:NoSuchOp*input:x(1)*output:y(1)\n");
    EXPECT_CONTAINS(msg, "already produced");
}
