// onnxstream-convert end to end, through the public C API only: convert the models gen_models.py built
// (and the shared YOLOv8n), check the structure of the model.txt written (BatchNorm fused, shape chains
// folded, no-ops gone), run the result and compare with ONNX Runtime's outputs on the same ONNX file.
// Bad inputs must fail with a clear message and leave no output folder (nor temporary folder) behind.
//
// Environment: ONNXSTREAM_CONVERT_CASES (gen_models.py's --out), ONNXSTREAM_SHARED_DIR, and
// ONNXSTREAM_CONVERT_EXE (the CLI, for the command-line tests).
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxstream.h"
#include "common/conversion_util.h"
#include "util/npy.h"

namespace {

using onnxstream::tools::NpyArray;
using onnxstream::tools::read_npy;
using namespace onnxstream::testing;

std::string env_dir(const char *name) {
    const char *v = std::getenv(name);
    return v ? v : "";
}
std::string cases_dir() { return env_dir("ONNXSTREAM_CONVERT_CASES"); }
std::string model_case(const std::string &name) { return cases_dir() + "/models/" + name; }
std::string bad_case(const std::string &name) { return cases_dir() + "/bad/" + name + "/model.onnx"; }

// Every conversion failure must leave the scratch folder empty: no output, no temporary sibling.
void expect_nothing_written(const Scratch &s) {
    EXPECT_FALSE(exists(s.out()));
    EXPECT_TRUE(s.entries().empty()) << "left behind: " << (s.entries().empty() ? "" : s.entries()[0]);
}

class Convert : public ::testing::Test {
protected:
    void SetUp() override {
        if (cases_dir().empty() || !exists(cases_dir() + "/models"))
            GTEST_FAIL() << "ONNXSTREAM_CONVERT_CASES does not point at gen_models.py's output";
    }
    Scratch scratch;
};

// ---------------------------------------------------------------------------------------------------------
// Models that must convert and match ONNX Runtime

// Run a converted YOLOv8n on the shared input and compare with ONNX Runtime's output0.
Compare run_yolov8n(const std::string &model_dir) {
    std::string data = env_dir("ONNXSTREAM_SHARED_DIR") + "/data/yolov8n";
    Compare r{1e9, 1e9};
    onnxstream_model_t *m = nullptr;
    EXPECT_EQ(onnxstream_model_create(nullptr, &m), ONNXSTREAM_OK);
    if (!m) return r;
    std::string input = read_text(data + "/input_images_1x3x640x640_f32.bin");
    std::string expected = read_text(data + "/expected_output0_1x84x8400_f32.bin");
    const int64_t shape[] = {1, 3, 640, 640};
    onnxstream_tensor_view_t v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = sizeof(v);
    if (input.size() != 3u * 640 * 640 * 4 || expected.size() != 84u * 8400 * 4) {
        ADD_FAILURE() << "YOLOv8n reference data missing under " << data;
    } else if (onnxstream_model_load(m, model_dir.c_str()) != ONNXSTREAM_OK ||
               onnxstream_model_push_tensor(m, "images", ONNXSTREAM_DTYPE_FLOAT32, 4, shape, input.data(),
                                            input.size()) != ONNXSTREAM_OK ||
               onnxstream_model_run(m) != ONNXSTREAM_OK ||
               onnxstream_model_get_output_by_name(m, "output0", &v) != ONNXSTREAM_OK) {
        ADD_FAILURE() << onnxstream_model_last_error(m);
    } else if (v.byte_size != expected.size()) {
        ADD_FAILURE() << "output0 has " << v.byte_size << " bytes";
    } else {
        r = compare(static_cast<const float *>(v.data), reinterpret_cast<const float *>(expected.data()),
                    expected.size() / 4);
    }
    onnxstream_model_destroy(m);
    return r;
}

TEST_F(Convert, Yolov8nMatchesReference) {
    std::string data = env_dir("ONNXSTREAM_SHARED_DIR") + "/data/yolov8n";
    Conversion c = convert(data + "/yolov8n.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(lines_of(txt).size(), 176u); // the ONNX file's 233 nodes, each SiLU's Sigmoid + Mul one Swish
    EXPECT_EQ(count_ops(txt, "Conv"), 64u);
    EXPECT_EQ(count_ops(txt, "Swish"), 57u);
    // OnnxStream's conv weight convention: the line names "_nchw.bin", the folder holds the OHWI "_nhwc.bin".
    EXPECT_NE(txt.find("_nchw.bin(float32:16,3,3,3)"), std::string::npos);
    Compare r = run_yolov8n(scratch.out());
    std::printf("yolov8n: rel L2 %.3g, max abs %.3g\n", r.rel_l2, r.max_abs);
    EXPECT_LE(r.rel_l2, 1e-4);
    EXPECT_LE(r.max_abs, 1e-2);
}

TEST_F(Convert, Yolov8nFp16) {
    std::string data = env_dir("ONNXSTREAM_SHARED_DIR") + "/data/yolov8n";
    Conversion c = convert(data + "/yolov8n.onnx", scratch.out(), true);
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_NE(txt.find("_nchw.bin(float16:16,3,3,3)"), std::string::npos);
    Compare r = run_yolov8n(scratch.out());
    std::printf("yolov8n fp16 weights: rel L2 %.3g, max abs %.3g\n", r.rel_l2, r.max_abs);
    EXPECT_LE(r.rel_l2, 1e-2);
}

TEST_F(Convert, Yolov8nWritesOhwiConvWeights) {
    std::string data = env_dir("ONNXSTREAM_SHARED_DIR") + "/data/yolov8n";
    Conversion c = convert(data + "/yolov8n.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    size_t nhwc = 0, nchw = 0;
    if (DIR *d = ::opendir(scratch.out().c_str())) {
        while (dirent *e = ::readdir(d)) {
            std::string n = e->d_name;
            nhwc += n.size() > 9 && n.compare(n.size() - 9, 9, "_nhwc.bin") == 0;
            nchw += n.size() > 9 && n.compare(n.size() - 9, 9, "_nchw.bin") == 0;
        }
        ::closedir(d);
    }
    EXPECT_EQ(nhwc, 64u);
    EXPECT_EQ(nchw, 0u);
}

TEST_F(Convert, CnnWithBatchNormFusesIt) {
    Conversion c = convert(model_case("cnn_bn") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(count_ops(txt, "BatchNormalization"), 0u) << txt;
    EXPECT_EQ(count_ops(txt, "Conv"), 3u);
    EXPECT_NE(c.report.find("BatchNormalization"), std::string::npos) << c.report;
    run_and_compare(scratch.out(), model_case("cnn_bn"), 1e-4, 1e-3);
}

// A declared output that the graph also reads comes out of the converted folder with its ONNX name, in the
// ONNX order, without onnxstream_model_add_output (outputs.txt beside model.txt).
TEST_F(Convert, DeclaredOutputReadInsideTheGraph) {
    Conversion c = convert(model_case("shared_output") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    EXPECT_EQ(read_text(scratch.out() + "/outputs.txt"), "out0\nout1\n");
    run_and_compare(scratch.out(), model_case("shared_output"), 1e-5, 1e-5);
    onnxstream_model_t *m = nullptr;
    ASSERT_EQ(onnxstream_model_create(nullptr, &m), ONNXSTREAM_OK);
    ASSERT_EQ(onnxstream_model_load(m, scratch.out().c_str()), ONNXSTREAM_OK) << onnxstream_model_last_error(m);
    NpyArray x = read_npy(model_case("shared_output") + "/input_0.npy");
    ASSERT_EQ(onnxstream_model_push_tensor(m, "x", x.dtype, x.shape.size(), x.shape.data(), x.data.data(), x.data.size()),
              ONNXSTREAM_OK);
    ASSERT_EQ(onnxstream_model_run(m), ONNXSTREAM_OK) << onnxstream_model_last_error(m);
    ASSERT_EQ(onnxstream_model_output_count(m), 2u);
    onnxstream_tensor_view_t v;
    std::memset(&v, 0, sizeof(v));
    v.struct_size = sizeof(v);
    ASSERT_EQ(onnxstream_model_get_output(m, 0, &v), ONNXSTREAM_OK);
    EXPECT_STREQ(v.name, "out0") << "the ONNX order: out0 first";
    onnxstream_model_destroy(m);
    // A wrong declaration stops the load naming the file and line, and leaves the handle usable.
    ASSERT_EQ(onnxstream_model_create(nullptr, &m), ONNXSTREAM_OK);
    auto expect_refused = [&](const char *declaration, const char *message) {
        std::ofstream(scratch.out() + "/outputs.txt") << declaration;
        EXPECT_EQ(onnxstream_model_load(m, scratch.out().c_str()), ONNXSTREAM_ERR_INVALID_MODEL) << declaration;
        EXPECT_NE(std::string(onnxstream_model_last_error(m)).find(message), std::string::npos)
            << onnxstream_model_last_error(m);
    };
    expect_refused("out0\nnot_a_tensor\n", "outputs.txt:2: 'not_a_tensor'");
    expect_refused("out0\n\nx\n", "outputs.txt:3: 'x' is a graph input"); // not an output an op computes
    std::ofstream(scratch.out() + "/outputs.txt") << "out0\nout1\n";
    EXPECT_EQ(onnxstream_model_load(m, scratch.out().c_str()), ONNXSTREAM_OK) << onnxstream_model_last_error(m);
    onnxstream_model_destroy(m);
}

TEST_F(Convert, ExternalDataLoads) {
    Conversion c = convert(model_case("cnn_bn_external") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    run_and_compare(scratch.out(), model_case("cnn_bn_external"), 1e-4, 1e-3);
}

TEST_F(Convert, MobileNetBlock) {
    Conversion c = convert(model_case("mobilenet_block") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(count_ops(txt, "BatchNormalization"), 0u) << txt;
    EXPECT_NE(txt.find("group:64"), std::string::npos) << txt;
    run_and_compare(scratch.out(), model_case("mobilenet_block"), 1e-4, 1e-3);
}

void expect_shape_chains_folded(const std::string &txt) {
    for (const char *op : {"Shape", "Gather", "Unsqueeze", "Concat", "ConstantOfShape", "Constant", "Slice", "Cast"})
        EXPECT_EQ(count_ops(txt, op), 0u) << op << " left in\n" << txt;
}

TEST_F(Convert, TransformerBlock) {
    Conversion c = convert(model_case("transformer_block") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    expect_shape_chains_folded(txt);
    // The attention pass (when present) turns the softmax attention into one op.
    EXPECT_EQ(count_ops(txt, "Softmax") + count_ops(txt, "ScaledDotProductAttention"), 1u) << txt;
    EXPECT_EQ(count_ops(txt, "LayerNormalization"), 2u);
    run_and_compare(scratch.out(), model_case("transformer_block"), 1e-4, 1e-3);
}

// --fp16 on a transformer: MatMul/Gemm weights are stored as float16 and widened to float32 when they run,
// beside float32 activations; the result stays close to ONNX Runtime's float32 output.
TEST_F(Convert, TransformerBlockFp16Weights) {
    Conversion c = convert(model_case("transformer_block") + "/model.onnx", scratch.out(), true);
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    size_t matmul_f16 = 0;
    for (const std::string &line : lines_of(txt))
        if ((line.find(":MatMul*") != std::string::npos || line.find(":Gemm*") != std::string::npos) &&
            line.find("(float16:") != std::string::npos)
            ++matmul_f16;
    EXPECT_GE(matmul_f16, 2u) << "no MatMul/Gemm kept a float16 weight\n" << txt;
    run_and_compare(scratch.out(), model_case("transformer_block"), 1e-2, 5e-2);
}

TEST_F(Convert, TransformerBlockOpset14) {
    Conversion c = convert(model_case("transformer_block_opset14") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    expect_shape_chains_folded(read_text(scratch.out() + "/model.txt"));
    run_and_compare(scratch.out(), model_case("transformer_block_opset14"), 1e-4, 1e-3);
}

TEST_F(Convert, SymbolicInputNeedsInputShape) {
    std::string onnx = model_case("transformer_block_dynamic") + "/model.onnx";
    Conversion bad = convert(onnx, scratch.out());
    EXPECT_EQ(bad.status, ONNXSTREAM_ERR_INVALID_ARGUMENT) << bad.message;
    EXPECT_NE(bad.message.find("--input-shape x="), std::string::npos) << bad.message;
    expect_nothing_written(scratch);

    Conversion wrong = convert(onnx, scratch.out(), false, {}, {"x=1,16,65"});
    EXPECT_EQ(wrong.status, ONNXSTREAM_ERR_INVALID_ARGUMENT) << wrong.message;
    Conversion unknown = convert(onnx, scratch.out(), false, {}, {"y=1,16,64"});
    EXPECT_EQ(unknown.status, ONNXSTREAM_ERR_INVALID_ARGUMENT) << unknown.message;
    EXPECT_NE(unknown.message.find("'x'"), std::string::npos) << unknown.message;
    expect_nothing_written(scratch);

    Conversion c = convert(onnx, scratch.out(), false, {}, {"x=1,16,64"});
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    expect_shape_chains_folded(read_text(scratch.out() + "/model.txt"));
    run_and_compare(scratch.out(), model_case("transformer_block_dynamic"), 1e-4, 1e-3);
}

TEST_F(Convert, NoOpsAreRemoved) {
    Conversion c = convert(model_case("noop_ops") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(lines_of(txt).size(), 2u) << txt;
    EXPECT_EQ(count_ops(txt, "Add"), 2u) << txt;
    // The last Identity wrote the graph output: its producer now writes "y" itself.
    EXPECT_NE(txt.find("*output:y(2,3,4)"), std::string::npos) << txt;
    run_and_compare(scratch.out(), model_case("noop_ops"), 1e-6, 1e-6);
}

std::vector<std::string> folder_entries(const std::string &dir) {
    std::vector<std::string> names;
    if (DIR *d = ::opendir(dir.c_str())) {
        while (dirent *e = ::readdir(d))
            if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) names.push_back(e->d_name);
        ::closedir(d);
    }
    std::sort(names.begin(), names.end());
    return names;
}

TEST_F(Convert, DeadCodeAndUnusedWeightsAreDropped) {
    Conversion c = convert(model_case("dead_code") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(lines_of(txt).size(), 1u) << txt;
    EXPECT_EQ(folder_entries(scratch.out()), (std::vector<std::string>{"model.txt", "w_5F_used.bin"}));
    run_and_compare(scratch.out(), model_case("dead_code"), 1e-6, 1e-6);
}

TEST_F(Convert, FoldingDoesNotInflateTheModel) {
    Conversion c = convert(model_case("fold_limit") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(count_ops(txt, "Expand"), 1u) << txt;
    EXPECT_NE(txt.find("expand_big:Expand"), std::string::npos) << txt;
    EXPECT_NE(txt.find("small_5F_fill.bin(float32:16,16)"), std::string::npos) << txt;
    run_and_compare(scratch.out(), model_case("fold_limit"), 1e-6, 1e-6);
}

TEST_F(Convert, OldOpsetIsUpgraded) {
    Conversion c = convert(model_case("old_opset") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    run_and_compare(scratch.out(), model_case("old_opset"), 1e-6, 1e-6);
}

TEST_F(Convert, ExternalDataBeyond4GB) {
    Conversion c = convert(model_case("big_offset") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    run_and_compare(scratch.out(), model_case("big_offset"), 1e-6, 1e-5);
}

TEST_F(Convert, LocalFunctionsAreInlined) {
    Conversion c = convert(model_case("local_function") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(count_ops(txt, "Mul"), 2u) << txt;
    EXPECT_EQ(count_ops(txt, "Add"), 2u) << txt;
    run_and_compare(scratch.out(), model_case("local_function"), 1e-6, 1e-5);
}

TEST_F(Convert, Fp16WeightsWithKeepPatterns) {
    Conversion c = convert(model_case("cnn_bn") + "/model.onnx", scratch.out(), true, {"conv1.*"});
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_NE(txt.find("conv1_2E_weight_nchw.bin(float32:8,3,3,3)"), std::string::npos) << txt; // kept by the pattern
    EXPECT_NE(txt.find("conv2_2E_weight_nchw.bin(float16:16,8,3,3)"), std::string::npos) << txt;
    EXPECT_NE(c.report.find("stored as float16"), std::string::npos) << c.report;
    // The file really holds float16: half the bytes of the float32 weight.
    struct stat st;
    ASSERT_EQ(::stat((scratch.out() + "/conv2_2E_weight_nhwc.bin").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 16 * 8 * 3 * 3 * 2);
    run_and_compare(scratch.out(), model_case("cnn_bn"), 1e-2, 5e-2);
}

TEST_F(Convert, ReportCountsOps) {
    Conversion c = convert(model_case("transformer_block") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    EXPECT_NE(c.report.find("op type"), std::string::npos) << c.report;
    EXPECT_NE(c.report.find("Unsqueeze"), std::string::npos) << c.report; // folded away, still counted
    EXPECT_NE(c.report.find("2 rounds"), std::string::npos) << c.report;
    EXPECT_NE(c.report.find("largest weight:"), std::string::npos) << c.report;
    EXPECT_NE(c.report.find("nodes before simplification"), std::string::npos) << c.report;
}

// ---------------------------------------------------------------------------------------------------------
// Simplification passes: the rewritten structure, the copies each pass must leave alone, and the outputs

std::vector<std::string> bin_files(const std::string &dir) {
    std::vector<std::string> out;
    for (const std::string &n : folder_entries(dir))
        if (n.size() > 4 && n.compare(n.size() - 4, 4, ".bin") == 0) out.push_back(n);
    return out;
}

// The model.txt line of the node named `name` ("" when there is none).
std::string line_of(const std::string &txt, const std::string &name) {
    for (const std::string &line : lines_of(txt))
        if (line.rfind(name + ":", 0) == 0) return line;
    return "";
}

void expect_dedup(const std::string &case_name, Scratch &scratch) {
    Conversion c = convert(model_case(case_name) + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    // w_c holds w_a's bytes: one file for both. w_b (other values) and w_d (other shape) stay.
    EXPECT_EQ(bin_files(scratch.out()), (std::vector<std::string>{"w_5F_a.bin", "w_5F_b.bin", "w_5F_d.bin"})) << txt;
    EXPECT_NE(line_of(txt, "sub_c").find("w_5F_a.bin(float32:3,4)"), std::string::npos) << txt;
    run_and_compare(scratch.out(), model_case(case_name), 1e-6, 1e-6);
}

TEST_F(Convert, DedupConstantsMergesIdenticalWeights) { expect_dedup("dedup_constants", scratch); }

// The same with every weight in an external data file, compared in chunks straight from it.
TEST_F(Convert, DedupConstantsExternalData) { expect_dedup("dedup_constants_external", scratch); }

TEST_F(Convert, FuseChains) {
    Conversion c = convert(model_case("fuse_chains") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    // Identity pair gone, composed pair is one Transpose, the pair with a shared middle value keeps both.
    EXPECT_EQ(count_ops(txt, "Transpose"), 3u) << txt;
    EXPECT_EQ(line_of(txt, "t_pair_1"), "") << txt;
    EXPECT_NE(line_of(txt, "t_pair_2").find("perm:1,0,3,2"), std::string::npos) << txt;
    EXPECT_NE(line_of(txt, "t_shared_1"), "") << txt;
    EXPECT_NE(line_of(txt, "t_shared_2"), "") << txt;
    EXPECT_EQ(line_of(txt, "t_id_2"), "") << txt;
    // Reshape -> Unsqueeze -> Flatten -> Reshape is one Reshape; the Unsqueeze read twice stays.
    EXPECT_EQ(count_ops(txt, "Reshape"), 1u) << txt;
    EXPECT_EQ(count_ops(txt, "Flatten"), 0u) << txt;
    EXPECT_EQ(count_ops(txt, "Unsqueeze"), 1u) << txt;
    EXPECT_EQ(count_ops(txt, "Squeeze"), 1u) << txt;
    EXPECT_NE(line_of(txt, "unsqueeze_shared"), "") << txt;
    // Slices on axes 1 and 3 merge; two Slices of axis 2 do not.
    EXPECT_EQ(count_ops(txt, "Slice"), 3u) << txt;
    EXPECT_EQ(line_of(txt, "slice_1"), "") << txt;
    EXPECT_NE(line_of(txt, "slice_same_1"), "") << txt;
    run_and_compare(scratch.out(), model_case("fuse_chains"), 1e-6, 1e-6);
}

TEST_F(Convert, FusePadIntoConvAndPools) {
    Conversion c = convert(model_case("fuse_pad") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    // Left: zero padding before a MaxPool, -inf padding as wide as its window, the Pad read twice, the
    // channel Pad and the reflect Pad.
    EXPECT_EQ(count_ops(txt, "Pad"), 5u) << txt;
    for (const char *gone : {"pad_conv", "pad_avg", "pad_max_inf"}) EXPECT_EQ(line_of(txt, gone), "") << gone;
    for (const char *kept : {"pad_max_inf_wide", "pad_max_zero", "pad_shared", "pad_channels", "pad_reflect"})
        EXPECT_NE(line_of(txt, kept), "") << kept;
    // Pad (1,2 | 2,1) on H,W plus the Conv's own 1,1,1,1.
    EXPECT_NE(line_of(txt, "conv").find("pads:2,3,3,2"), std::string::npos) << txt;
    EXPECT_NE(line_of(txt, "avg").find("pads:1,2,2,1"), std::string::npos) << txt;
    EXPECT_NE(line_of(txt, "avg").find("count_include_pad:1"), std::string::npos) << txt;
    EXPECT_NE(line_of(txt, "max_inf").find("pads:1,1,1,1"), std::string::npos) << txt;
    run_and_compare(scratch.out(), model_case("fuse_pad"), 1e-5, 1e-5);
}

TEST_F(Convert, MatMulAddBecomesGemm) {
    Conversion c = convert(model_case("matmul_add") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(count_ops(txt, "Gemm"), 2u) << txt;
    // The 3-D MatMul takes the bias as its third input; the MatMul whose product a Relu also reads keeps
    // its Add.
    EXPECT_EQ(count_ops(txt, "MatMul"), 2u) << txt;
    EXPECT_EQ(count_ops(txt, "Add"), 1u) << txt;
    EXPECT_NE(line_of(txt, "add_1").find(":Gemm*"), std::string::npos) << txt;
    EXPECT_NE(line_of(txt, "matmul_3d").find(";bias_5F_n.bin(float32:8)*output:out_5F_3d"), std::string::npos) << txt;
    EXPECT_NE(line_of(txt, "add_2").find("bias_5F_mn.bin(float32:4,8)"), std::string::npos) << txt;
    run_and_compare(scratch.out(), model_case("matmul_add"), 1e-5, 1e-5);
}

void expect_conv1d(const std::string &case_name, Scratch &scratch) {
    Conversion c = convert(model_case(case_name) + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(count_ops(txt, "Conv"), 3u) << txt;
    // Before conv_a and conv_b (a Relu comes between); the pair between conv_b and conv_c cancels.
    EXPECT_EQ(count_ops(txt, "Unsqueeze"), 2u) << txt;
    EXPECT_EQ(count_ops(txt, "Squeeze"), 2u) << txt;
    std::string a = line_of(txt, "conv_a"), b = line_of(txt, "conv_b");
    EXPECT_NE(a.find("w_5F_a_nchw.bin(float32:8,4,1,3)"), std::string::npos) << txt;
    EXPECT_NE(a.find("pads:0,1,0,1"), std::string::npos) << a;
    EXPECT_NE(b.find("dilations:1,2"), std::string::npos) << b;
    EXPECT_NE(b.find("strides:1,2"), std::string::npos) << b;
    EXPECT_NE(b.find("pads:0,2,0,3"), std::string::npos) << b;
    EXPECT_NE(b.find("group:4"), std::string::npos) << b;
    run_and_compare(scratch.out(), model_case(case_name), 1e-5, 1e-5);
}

TEST_F(Convert, Conv1dRunsAsConv2d) { expect_conv1d("conv1d", scratch); }

// Squeeze/Unsqueeze-11 take their axes as attributes.
TEST_F(Convert, Conv1dRunsAsConv2dOpset11) { expect_conv1d("conv1d_opset11", scratch); }

// TopK, OneHot (its depth dimension resolved from the constant), CumSum, GatherND and ScatterElements.
TEST_F(Convert, IndexOpsConvertAndRun) {
    Conversion c = convert(model_case("index_ops") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_NE(line_of(txt, "one_hot").find("(2,3,6)"), std::string::npos) << txt;
    run_and_compare(scratch.out(), model_case("index_ops"), 1e-6, 1e-6);
}

// PyTorch's recurrent layers run as the engine's LSTM/GRU/RNN ops, within float32 rounding of ONNX Runtime.
void expect_recurrent(const std::string &case_name, const char *op, size_t count, const Scratch &scratch,
                      bool fp16 = false) {
    Conversion c = convert(model_case(case_name) + "/model.onnx", scratch.out(), fp16);
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string txt = read_text(scratch.out() + "/model.txt");
    EXPECT_EQ(count_ops(txt, op), count) << txt;
    if (fp16) {
        size_t with_f16 = 0;
        for (const std::string &line : lines_of(txt))
            with_f16 += line.find(std::string(":") + op + "*") != std::string::npos &&
                        line.find("(float16:") != std::string::npos;
        EXPECT_EQ(with_f16, count) << "an " << op << " kept no float16 weight\n" << txt;
    }
    run_and_compare(scratch.out(), model_case(case_name), fp16 ? 1e-2 : 1e-5, fp16 ? 1e-2 : 1e-5);
}

// nn.LSTM(num_layers=2, bidirectional=True, batch_first=True): two LSTM nodes between Transposes, with Y, Y_h
// and Y_c all read.
TEST_F(Convert, TorchLstmStack) { expect_recurrent("lstm_stack", "LSTM", 2, scratch); }

// The same with float16 weights (--fp16), widened when the op runs.
TEST_F(Convert, TorchLstmStackFp16Weights) { expect_recurrent("lstm_stack", "LSTM", 2, scratch, true); }

// nn.GRU from an initial state that is a graph input (linear_before_reset 1, as PyTorch exports it).
TEST_F(Convert, TorchGruWithState) { expect_recurrent("gru_with_state", "GRU", 1, scratch); }

// nn.RNN(nonlinearity="relu", bidirectional=True) of which only h_n is used: the activations list must survive.
TEST_F(Convert, TorchRnnLastState) {
    expect_recurrent("rnn_last_state", "RNN", 1, scratch);
    EXPECT_NE(read_text(scratch.out() + "/model.txt").find("activations:Relu,Relu"), std::string::npos);
}

// String and float list attributes of an LSTM reach model.txt as written, and the op reads them as ONNX Runtime.
TEST_F(Convert, LstmListAttributes) {
    Conversion c = convert(model_case("lstm_attributes") + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    std::string line = line_of(read_text(scratch.out() + "/model.txt"), "lstm");
    for (const char *attr : {"activations:HardSigmoid,Tanh,ScaledTanh", "activation_alpha:0.25,0.8",
                             "activation_beta:0.55,1.25", "clip:2.5"})
        EXPECT_NE(line.find(attr), std::string::npos) << attr << " missing in " << line;
    run_and_compare(scratch.out(), model_case("lstm_attributes"), 1e-5, 1e-5);
}

// ---------------------------------------------------------------------------------------------------------
// Bad input: a clear error and nothing written

TEST_F(Convert, TruncatedFile) {
    Conversion c = convert(bad_case("truncated"), scratch.out());
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_INVALID_MODEL) << c.message;
    EXPECT_NE(c.message.find("truncated"), std::string::npos) << c.message;
    expect_nothing_written(scratch);
}

TEST_F(Convert, MissingExternalData) {
    Conversion c = convert(bad_case("missing_external"), scratch.out());
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_IO) << c.message;
    EXPECT_NE(c.message.find("weights.bin"), std::string::npos) << c.message;
    EXPECT_NE(c.message.find("not found"), std::string::npos) << c.message;
    expect_nothing_written(scratch);
}

// An ONNX file from the internet must not read a file outside its folder through a symbolic link.
TEST_F(Convert, ExternalDataLinkOutsideTheFolder) {
    Conversion c = convert(bad_case("external_link_outside"), scratch.out());
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_IO) << c.message;
    EXPECT_NE(c.message.find("external_link_outside/weights.bin is a symbolic link to"), std::string::npos)
        << c.message;
    EXPECT_NE(c.message.find("models/cnn_bn_external/weights.bin, outside the model folder"), std::string::npos)
        << c.message;
    expect_nothing_written(scratch);
}

TEST_F(Convert, UnsupportedOpsAreAllListed) {
    Conversion c = convert(bad_case("unsupported"), scratch.out());
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_UNSUPPORTED) << c.message;
    EXPECT_NE(c.message.find("com.example:Frobnicate x2 (first: 'frob_first')"), std::string::npos) << c.message;
    EXPECT_NE(c.message.find("Det x1 (first: 'det')"), std::string::npos) << c.message;
    expect_nothing_written(scratch);
}

TEST_F(Convert, CycleIsReported) {
    Conversion c = convert(bad_case("cycle"), scratch.out());
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_INVALID_MODEL) << c.message;
    EXPECT_NE(c.message.find("cycle"), std::string::npos) << c.message;
    EXPECT_NE(c.message.find("add_in_cycle"), std::string::npos) << c.message;
    EXPECT_NE(c.message.find("relu_in_cycle"), std::string::npos) << c.message;
    EXPECT_EQ(c.message.find("after_cycle"), std::string::npos) << c.message; // downstream, not on the cycle
    expect_nothing_written(scratch);
}

// Every class of malformed graph the importer validates before ONNX's own passes read it (gen_models.py's
// malformed_models()): INVALID_MODEL, a message naming the node or tensor and what is wrong, nothing written.
TEST_F(Convert, MalformedGraphs) {
    const struct {
        const char *name;
        std::vector<const char *> message;
    } cases[] = {
        {"arity_missing_input", {"node 'add_one' (Add) has 1 input but Add-14 takes 2"}},
        {"arity_extra_output", {"node 'relu_two' (Relu) has 2 outputs but Relu-14 produces 1"}},
        {"required_input_empty", {"node 'conv_no_w' (Conv) leaves input 1 ('W') empty, but Conv-11 requires it"}},
        {"attr_wrong_type", {"node 'transpose_float_perm' (Transpose) attribute 'perm' is FLOATS but Transpose-13 wants INTS"}},
        {"attr_unknown", {"node 'relu_alpha' (Relu) has the attribute 'alpha', which Relu-14 does not define"}},
        {"attr_required_missing", {"node 'cast_no_to' (Cast) lacks the attribute 'to', which Cast-13 requires"}},
        {"dangling_name", {"node 'add_ghost' (Add) reads 'ghost', which no node, graph input or initializer defines"}},
        {"output_written_twice", {"node 'second' (Neg) writes 'y', which node 'first' (Relu) also writes"}},
        {"initializer_raw_size", {"initializer 'w_short' holds 28 bytes of data but float (2,4) needs 32"}},
        {"initializer_typed_count", {"initializer 'w_typed' holds 7 values but float (2,4) needs 8"}},
        {"initializer_count_overflow",
         {"initializer 'w_huge' has shape (4294967296,4294967296,4), whose element count does not fit in 64 bits"}},
        {"conv_weight_rank", {"node 'conv_rank' (Conv): the input has rank 4 but the weight has rank 3"}},
        {"conv_zero_stride", {"node 'conv_stride' (Conv): strides holds 0; each value must be >= 1"}},
        {"convtranspose_weight_rank1", {"node 'deconv' (ConvTranspose): the weight has rank 1"}},
        {"subgraph_dangling_name", {"node 'branch' (If) attribute 'then_branch': node 'then_add' (Add) reads 'ghost'"}},
        {"upsample9_no_scales", {"node 'upsample' (Upsample) has 1 input but Upsample-9 takes 2"}},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.name);
        Conversion r = convert(bad_case(c.name), scratch.out());
        EXPECT_EQ(r.status, ONNXSTREAM_ERR_INVALID_MODEL) << r.message;
        for (const char *part : c.message) EXPECT_NE(r.message.find(part), std::string::npos) << r.message;
        EXPECT_NE(r.message.find(std::string(c.name) + "/model.onnx: "), std::string::npos) << r.message;
        expect_nothing_written(scratch);
    }
}

// The inputs that crashed the converter inside the ONNX library (../shared/data/crashers): now a status
// and a message through the C API.
TEST_F(Convert, SharedCrashersFailCleanly) {
    const std::string dir = env_dir("ONNXSTREAM_SHARED_DIR") + "/data/crashers";
    const struct {
        const char *file;
        const char *message;
    } cases[] = {
        {"onnx_import-upsample9-missing-input.onnx", "node 'upsample9_linear' (Upsample) has 1 input but Upsample-9 takes 2"},
        {"onnx_import-conv-shape-inference.onnx", "node 'conv_a' (Conv) has the attribute 'ker.el_shape', which Conv-11 does not define"},
        {"onnx_import-element-count-overflow.onnx", "initializer 'norm.weight' has shape (16,5017,"},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.file);
        if (!exists(dir + "/" + c.file)) GTEST_SKIP() << dir << "/" << c.file << " not found";
        Conversion r = convert(dir + "/" + c.file, scratch.out());
        EXPECT_EQ(r.status, ONNXSTREAM_ERR_INVALID_MODEL) << r.message;
        EXPECT_NE(r.message.find(c.message), std::string::npos) << r.message;
        expect_nothing_written(scratch);
    }
}

TEST_F(Convert, OpsetNewerThanOnnxLibrary) {
    Conversion c = convert(bad_case("opset_too_new"), scratch.out());
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_UNSUPPORTED) << c.message;
    EXPECT_NE(c.message.find("opset 99"), std::string::npos) << c.message;
    expect_nothing_written(scratch);
}

TEST_F(Convert, MissingModelFile) {
    Conversion c = convert(scratch.path() + "/nope.onnx", scratch.out());
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_IO) << c.message;
    expect_nothing_written(scratch);
}

TEST_F(Convert, ExistingOutputFolderIsLeftAlone) {
    ASSERT_EQ(::mkdir(scratch.out().c_str(), 0755), 0);
    std::ofstream(scratch.out() + "/keep.txt") << "mine";
    Conversion c = convert(model_case("noop_ops") + "/model.onnx", scratch.out());
    EXPECT_EQ(c.status, ONNXSTREAM_ERR_INVALID_ARGUMENT) << c.message;
    EXPECT_EQ(read_text(scratch.out() + "/keep.txt"), "mine");
    EXPECT_FALSE(exists(scratch.out() + "/model.txt"));
}

TEST_F(Convert, NullArguments) {
    EXPECT_EQ(onnxstream_convert_onnx(nullptr, "x", nullptr), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(onnxstream_convert_onnx("x", nullptr, nullptr), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    onnxstream_convert_options_t o;
    std::memset(&o, 0, sizeof(o));
    EXPECT_EQ(onnxstream_convert_onnx("x", "y", &o), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(onnxstream_last_error()).find("struct_size"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------
// The command-line tool

struct Cli {
    int status = -1;
    std::string out, err;
};

Cli run_cli(const std::string &args, const Scratch &s) {
    Cli r;
    std::string exe = env_dir("ONNXSTREAM_CONVERT_EXE");
    // Beside the scratch folder, not in it: the tests check what the tool leaves inside.
    std::string out = s.path() + ".stdout", err = s.path() + ".stderr";
    int rc = std::system((exe + " " + args + " >'" + out + "' 2>'" + err + "'").c_str());
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = read_text(out);
    r.err = read_text(err);
    std::remove(out.c_str());
    std::remove(err.c_str());
    return r;
}

TEST_F(Convert, CliReportsAndFails) {
    if (env_dir("ONNXSTREAM_CONVERT_EXE").empty()) GTEST_SKIP() << "ONNXSTREAM_CONVERT_EXE not set";
    Cli ok = run_cli("'" + model_case("noop_ops") + "/model.onnx' '" + scratch.out() + "' --report", scratch);
    EXPECT_EQ(ok.status, 0) << ok.err;
    EXPECT_NE(ok.out.find("op type"), std::string::npos) << ok.out;
    EXPECT_NE(ok.out.find("Identity"), std::string::npos) << ok.out;
    EXPECT_TRUE(exists(scratch.out() + "/model.txt"));

    Scratch s2;
    Cli bad = run_cli("'" + bad_case("unsupported") + "' '" + s2.out() + "'", s2);
    EXPECT_NE(bad.status, 0);
    EXPECT_EQ(bad.err.rfind("onnxstream-convert: ", 0), 0u) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
    EXPECT_NE(bad.err.find("Frobnicate"), std::string::npos) << bad.err;
    expect_nothing_written(s2);

    Cli usage = run_cli("--bogus", s2);
    EXPECT_NE(usage.status, 0);
    EXPECT_NE(usage.err.find("unknown option --bogus"), std::string::npos) << usage.err;
}

} // namespace
