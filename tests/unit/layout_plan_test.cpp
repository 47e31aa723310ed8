// The layout plan's decisions on small graphs (planning only, no weights are read): which tensors go NHWC,
// which ops run on channels-last views, that graph outputs and float16 stay NCHW, and axis remapping.
#include <string>

#include <gtest/gtest.h>

#include "graph/layout_plan.h"
#include "ops/registry.h"

using namespace onnxstream;

namespace {

struct Planned {
    std::unique_ptr<Graph> graph;
    Plan plan;
    const NodeLayout &at(const std::string &name) const {
        for (const Node &n : graph->nodes())
            if (n.line->name == name) return plan.layouts.at(static_cast<size_t>(n.index));
        throw std::runtime_error("no node " + name);
    }
};

Planned planned(const std::string &text, DType input = DType::F32) {
    Planned p;
    p.graph = std::make_unique<Graph>(parse_model_txt(text, "m.txt"), "m.txt");
    std::vector<TensorInfo> inputs;
    for (int v : p.graph->inputs())
        inputs.push_back({input, p.graph->values()[static_cast<size_t>(v)].declared_shape, {}});
    p.plan = make_plan(*p.graph, inputs, [](const WeightSpec &) { return Tensor(); });
    plan_layouts(*p.graph, p.plan);
    return p;
}

const std::string kConv1 = "c1:Conv*input:x(1,3,8,8);w1.bin(float32:8,3,3,3)*output:y(1,8,8,8)*pads:1,1,1,1\n";
const std::string kConv2 = "c2:Conv*input:r(1,8,8,8);w2.bin(float32:4,8,3,3)*output:out(1,4,8,8)*pads:1,1,1,1\n";

} // namespace

TEST(LayoutPlan, ActivationBetweenConvsStaysNhwc) {
    Planned p = planned(kConv1 + "a:Relu*input:y(1,8,8,8)*output:r(1,8,8,8)\n" + kConv2);
    EXPECT_TRUE(p.at("c1").out_nhwc[0]);
    EXPECT_TRUE(p.at("a").follow);
    EXPECT_TRUE(p.at("a").in_nhwc[0]);
    EXPECT_EQ(p.at("a").out_infos.at(0).shape, (Shape{1, 8, 8, 8}));
    EXPECT_TRUE(p.at("c2").in_nhwc[0]);
    EXPECT_FALSE(p.at("c2").out_nhwc[0]) << "graph outputs are always NCHW";
}

TEST(LayoutPlan, GraphOutputKeepsItsGroupNchw) {
    Planned p = planned(kConv1 + "a:Relu*input:y(1,8,8,8)*output:r(1,8,8,8)\n" + kConv2 +
                        "b:Sigmoid*input:y(1,8,8,8)*output:s(1,8,8,8)\n");
    // s is a graph output in y's group (Sigmoid and Relu both read y), so the whole group stays NCHW.
    EXPECT_FALSE(p.at("c1").out_nhwc[0]);
    EXPECT_FALSE(p.at("a").follow);
    EXPECT_FALSE(p.at("b").follow);
}

TEST(LayoutPlan, FullSizeNchwWeightIsNotBroadcastOnViews) {
    Planned p = planned(kConv1 + "a:Add*input:y(1,8,8,8);full.bin(float32:1,8,8,8)*output:r(1,8,8,8)\n" + kConv2);
    EXPECT_FALSE(p.at("a").follow);
    // y alone: one conv output saved, one conversion for Add: not worth it.
    EXPECT_FALSE(p.at("c1").out_nhwc[0]);
}

TEST(LayoutPlan, PerChannelWeightIsReshapedChannelsLast) {
    Planned p = planned(kConv1 + "a:Mul*input:y(1,8,8,8);s.bin(float32:8,1,1)*output:r(1,8,8,8)\n" + kConv2);
    ASSERT_TRUE(p.at("a").follow);
    EXPECT_EQ(p.at("a").in_shape.at(1), (Shape{1, 1, 1, 8}));
}

TEST(LayoutPlan, ConcatAxisIsRemapped) {
    Planned p = planned(kConv1 + "k:Concat*input:y(1,8,8,8);y(1,8,8,8)*output:r0(1,16,8,8)*axis:-3\n" +
                        "c2:Conv*input:r0(1,16,8,8);w2.bin(float32:4,16,3,3)*output:out(1,4,8,8)*pads:1,1,1,1\n");
    const NodeLayout &k = p.at("k");
    ASSERT_TRUE(k.follow);
    ASSERT_TRUE(k.attrs);
    EXPECT_EQ(Attributes(k.attrs.get(), "m.txt").get_int("axis", 0), 3);
    EXPECT_EQ(k.out_infos.at(0).shape, (Shape{1, 8, 8, 16}));
}

TEST(LayoutPlan, Float16ActivationsStayNchw) {
    Planned p = planned("c1:Conv*input:x(1,3,8,8);w1.bin(float16:8,3,3,3)*output:y(1,8,8,8)*pads:1,1,1,1\n"
                        "a:Relu*input:y(1,8,8,8)*output:r(1,8,8,8)\n"
                        "c2:Conv*input:r(1,8,8,8);w2.bin(float16:4,8,3,3)*output:out(1,4,8,8)*pads:1,1,1,1\n",
                        DType::F16);
    EXPECT_FALSE(p.at("c1").out_nhwc[0]);
    EXPECT_FALSE(p.at("a").follow);
}
