// model.txt parser and writer: every grammar feature, byte-identical round trips (including the real
// yolov8n model.txt in LF and CRLF form) and file:line:column error positions.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/attributes.h"
#include "graph/model_txt.h"
#include "test_util.h"
#include "util/strings.h"

using namespace onnxstream;
using onnxstream::test::expect_error;

namespace {

ModelText parse(const std::string &text) { return parse_model_txt(text, "m.txt"); }

void expect_same_ref(const TensorRef &a, const TensorRef &b) {
    EXPECT_EQ(a.present, b.present);
    EXPECT_EQ(a.is_weight, b.is_weight);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.shape, b.shape);
    if (a.is_weight) {
        EXPECT_EQ(a.dtype, b.dtype);
        EXPECT_EQ(a.quant.present, b.quant.present);
        EXPECT_EQ(a.quant_text, b.quant_text);
        EXPECT_EQ(a.quant.scale, b.quant.scale);
        EXPECT_EQ(a.quant.zero_point, b.quant.zero_point);
        EXPECT_EQ(a.quant.axis, b.quant.axis);
        EXPECT_EQ(a.scales_file, b.scales_file);
    }
}

void expect_same_model(const ModelText &a, const ModelText &b) {
    EXPECT_EQ(a.crlf, b.crlf);
    EXPECT_EQ(a.trailing_newline, b.trailing_newline);
    EXPECT_EQ(a.blank_lines, b.blank_lines);
    ASSERT_EQ(a.ops.size(), b.ops.size());
    for (size_t i = 0; i < a.ops.size(); ++i) {
        const OpLine &x = a.ops[i], &y = b.ops[i];
        SCOPED_TRACE("op " + std::to_string(i));
        EXPECT_EQ(x.line, y.line);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.type, y.type);
        EXPECT_EQ(x.has_attr_section, y.has_attr_section);
        ASSERT_EQ(x.inputs.size(), y.inputs.size());
        for (size_t k = 0; k < x.inputs.size(); ++k) expect_same_ref(x.inputs[k], y.inputs[k]);
        ASSERT_EQ(x.outputs.size(), y.outputs.size());
        for (size_t k = 0; k < x.outputs.size(); ++k) expect_same_ref(x.outputs[k], y.outputs[k]);
        ASSERT_EQ(x.attrs.size(), y.attrs.size());
        for (size_t k = 0; k < x.attrs.size(); ++k) {
            EXPECT_EQ(x.attrs[k].key, y.attrs[k].key);
            EXPECT_EQ(x.attrs[k].value, y.attrs[k].value);
        }
    }
}

void expect_round_trip(const std::string &text) {
    ModelText m = parse(text);
    std::string written = write_model_txt(m);
    EXPECT_EQ(written, text);
    expect_same_model(parse(written), m);
}

std::string to_crlf(const std::string &lf) {
    std::string out;
    for (char c : lf) {
        if (c == '\n') out += '\r';
        out += c;
    }
    return out;
}

std::string shared_model_txt() {
    const char *dir = std::getenv("ONNXSTREAM_SHARED_DIR");
    if (!dir || !*dir) return "";
    return test::read_file(std::string(dir) + "/models/yolov8n/model.txt");
}

} // namespace

TEST(ModelTxt, ParsesAnOpLine) {
    const std::string line = "/model.0/conv/Conv:Conv*input:images(1,3,8,8);w_nchw.bin(float32:4,3,3,3);"
                             "b.bin(float32:4)*output:y_2E_0(1,4,8,8)*pads:1,1,1,1;group:1";
    ModelText m = parse(line + "\n");
    ASSERT_EQ(m.ops.size(), 1u);
    const OpLine &op = m.ops[0];
    EXPECT_EQ(op.line, 1);
    EXPECT_EQ(op.name, "/model.0/conv/Conv");
    EXPECT_EQ(op.type, "Conv");
    ASSERT_EQ(op.inputs.size(), 3u);
    EXPECT_FALSE(op.inputs[0].is_weight);
    EXPECT_EQ(op.inputs[0].name, "images");
    EXPECT_EQ(op.inputs[0].shape, (Shape{1, 3, 8, 8}));
    EXPECT_EQ(op.inputs[0].column, static_cast<int>(line.find("images")) + 1);
    EXPECT_TRUE(op.inputs[1].is_weight);
    EXPECT_EQ(op.inputs[1].name, "w_nchw.bin");
    EXPECT_EQ(op.inputs[1].dtype, DType::F32);
    EXPECT_EQ(op.inputs[1].shape, (Shape{4, 3, 3, 3}));
    EXPECT_EQ(op.inputs[1].column, static_cast<int>(line.find("w_nchw")) + 1);
    EXPECT_EQ(op.inputs[2].column, static_cast<int>(line.find("b.bin")) + 1);
    ASSERT_EQ(op.outputs.size(), 1u);
    EXPECT_EQ(op.outputs[0].name, "y_2E_0");
    EXPECT_EQ(op.outputs[0].column, static_cast<int>(line.find("y_2E_0")) + 1);
    EXPECT_TRUE(op.has_attr_section);
    ASSERT_EQ(op.attrs.size(), 2u);
    EXPECT_EQ(op.attrs[0].key, "pads");
    EXPECT_EQ(op.attrs[0].value, "1,1,1,1");
    EXPECT_EQ(op.attrs[0].column, static_cast<int>(line.find("pads")) + 1);
    EXPECT_EQ(op.attrs[1].key, "group");
    EXPECT_EQ(op.attrs[1].value, "1");
    EXPECT_EQ(op.attrs[1].column, static_cast<int>(line.find("group")) + 1);
    EXPECT_FALSE(m.crlf);
    EXPECT_TRUE(m.trailing_newline);
    EXPECT_TRUE(m.blank_lines.empty());
}

TEST(ModelTxt, EscapedNamesAreKeptVerbatim) {
    ModelText m = parse("n:Relu*input:input_2E_1(2)*output:onnx_3A__3A_Gemm_5F_5(2)\n");
    EXPECT_EQ(m.ops[0].inputs[0].name, "input_2E_1");
    EXPECT_EQ(unescape_name(m.ops[0].inputs[0].name), "input.1");
    EXPECT_EQ(m.ops[0].outputs[0].name, "onnx_3A__3A_Gemm_5F_5");
    EXPECT_EQ(unescape_name(m.ops[0].outputs[0].name), "onnx::Gemm_5");
}

TEST(ModelTxt, TypedWeights) {
    ModelText m = parse("n:T*input:a.bin(float32:2,3);b.bin(float16:4);c.bin(int64:1);d.bin(uint8[0.5,3]:2,2);"
                        "e.bin(int8[0.25,-3]:5);f.bin(float32:);g.bin(int32:7);h.bin(bool:2)*output:y(1)\n");
    const auto &in = m.ops[0].inputs;
    ASSERT_EQ(in.size(), 8u);
    for (const auto &r : in) EXPECT_TRUE(r.is_weight) << r.name;
    EXPECT_EQ(in[0].dtype, DType::F32);
    EXPECT_EQ(in[0].shape, (Shape{2, 3}));
    EXPECT_FALSE(in[0].quant.present);
    EXPECT_EQ(in[1].dtype, DType::F16);
    EXPECT_EQ(in[2].dtype, DType::I64);
    EXPECT_EQ(in[3].dtype, DType::U8);
    EXPECT_TRUE(in[3].quant.present);
    EXPECT_DOUBLE_EQ(in[3].quant.scale, 0.5);
    EXPECT_EQ(in[3].quant.zero_point, 3);
    EXPECT_EQ(in[3].quant_text, "0.5,3");
    EXPECT_EQ(in[3].shape, (Shape{2, 2}));
    EXPECT_EQ(in[4].dtype, DType::I8);
    EXPECT_DOUBLE_EQ(in[4].quant.scale, 0.25);
    EXPECT_EQ(in[4].quant.zero_point, -3);
    EXPECT_EQ(in[5].dtype, DType::F32);
    EXPECT_TRUE(in[5].shape.empty()) << "(float32:) is a scalar";
    EXPECT_EQ(in[6].dtype, DType::I32);
    EXPECT_EQ(in[7].dtype, DType::Bool);
}

TEST(ModelTxt, ScalarActivationAndZeroDims) {
    ModelText m = parse("n:T*input:x()*output:y(0,3)\n");
    EXPECT_FALSE(m.ops[0].inputs[0].is_weight);
    EXPECT_TRUE(m.ops[0].inputs[0].shape.empty());
    EXPECT_EQ(m.ops[0].outputs[0].shape, (Shape{0, 3}));
}

TEST(ModelTxt, OmittedInputs) {
    ModelText m = parse("r:Resize*input:x(1,2,3,3);;s.bin(float32:4)*output:y(1,2,6,6)\n");
    const auto &in = m.ops[0].inputs;
    ASSERT_EQ(in.size(), 3u);
    EXPECT_TRUE(in[0].present);
    EXPECT_FALSE(in[1].present);
    EXPECT_TRUE(in[2].present);

    m = parse("c:Clip*input:;x(2);*output:y(2)\n");
    ASSERT_EQ(m.ops[0].inputs.size(), 3u);
    EXPECT_FALSE(m.ops[0].inputs[0].present);
    EXPECT_TRUE(m.ops[0].inputs[1].present);
    EXPECT_FALSE(m.ops[0].inputs[2].present);

    m = parse("c:C*input:*output:y(2)\n");
    EXPECT_TRUE(m.ops[0].inputs.empty());
}

TEST(ModelTxt, Attributes) {
    ModelText m = parse("n:T*input:x(1)*output:y(1)*pads:1,1,1,1;alpha:-0.75;mode:nearest;axes:;eps:1e-05\n");
    const auto &a = m.ops[0].attrs;
    ASSERT_EQ(a.size(), 5u);
    EXPECT_EQ(a[0].value, "1,1,1,1");
    EXPECT_EQ(a[1].value, "-0.75");
    EXPECT_EQ(a[2].value, "nearest");
    EXPECT_EQ(a[3].key, "axes");
    EXPECT_EQ(a[3].value, "");
    EXPECT_EQ(a[4].value, "1e-05");

    Attributes attrs(&a, "m.txt:1 (n T)");
    EXPECT_EQ(attrs.get_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
    EXPECT_FLOAT_EQ(attrs.get_float("alpha", 0), -0.75f);
    EXPECT_EQ(attrs.get_string("mode", ""), "nearest");
    EXPECT_TRUE(attrs.get_ints("axes", {7}).empty());
    EXPECT_FLOAT_EQ(attrs.get_float("eps", 0), 1e-5f);
    EXPECT_EQ(attrs.get_int("missing", 42), 42);
    std::string msg = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { attrs.get_int("mode", 0); });
    EXPECT_CONTAINS(msg, "m.txt:1 (n T)");
    EXPECT_CONTAINS(msg, "'mode'");
    msg = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { attrs.require_int("axis"); });
    EXPECT_CONTAINS(msg, "'axis'");

    // A 4th section that is empty still round-trips as "*".
    m = parse("n:T*input:x(1)*output:y(1)*\n");
    EXPECT_TRUE(m.ops[0].has_attr_section);
    EXPECT_TRUE(m.ops[0].attrs.empty());
    m = parse("n:T*input:x(1)*output:y(1)\n");
    EXPECT_FALSE(m.ops[0].has_attr_section);
}

TEST(ModelTxt, OpNameMayContainColons) {
    ModelText m = parse("onnx::Add_3:Add*input:x(1)*output:y(1)\n");
    EXPECT_EQ(m.ops[0].name, "onnx::Add_3");
    EXPECT_EQ(m.ops[0].type, "Add");
}

TEST(ModelTxt, LineEndingsAndBlankLines) {
    ModelText m = parse("a:T*input:x(1)*output:y(1)\r\n\r\nb:T*input:y(1)*output:z(1)\r\n");
    EXPECT_TRUE(m.crlf);
    EXPECT_TRUE(m.trailing_newline);
    ASSERT_EQ(m.ops.size(), 2u);
    EXPECT_EQ(m.ops[0].line, 1);
    EXPECT_EQ(m.ops[1].line, 3);
    EXPECT_EQ(m.ops[1].outputs[0].name, "z") << "the CR must not end up in a name";
    EXPECT_EQ(m.blank_lines, (std::vector<int>{2}));

    m = parse("\n\na:T*input:x(1)*output:y(1)\n\n");
    EXPECT_FALSE(m.crlf);
    EXPECT_EQ(m.blank_lines, (std::vector<int>{1, 2, 4}));
    EXPECT_EQ(m.ops[0].line, 3);

    m = parse("a:T*input:x(1)*output:y(1)");
    EXPECT_FALSE(m.trailing_newline);
    EXPECT_EQ(m.ops[0].outputs[0].shape, (Shape{1}));

    m = parse("a:T*input:x(1)*output:y(1)\r\nb:T*input:y(1)*output:z(2)");
    EXPECT_TRUE(m.crlf);
    EXPECT_FALSE(m.trailing_newline);
    EXPECT_EQ(m.ops[1].outputs[0].shape, (Shape{2}));

    m = parse("");
    EXPECT_TRUE(m.ops.empty());
}

TEST(ModelTxt, PerChannelWeights) {
    ModelText m = parse("n:T*input:w_nchw.bin(int8[@w_scales.bin,0]:4,4,1,1);v.bin(int8[@v_s.bin,1]:64,32)"
                        "*output:y(1)\n");
    const auto &in = m.ops[0].inputs;
    ASSERT_EQ(in.size(), 2u);
    EXPECT_EQ(in[0].dtype, DType::I8);
    EXPECT_TRUE(in[0].quant.present);
    EXPECT_TRUE(in[0].quant.per_channel());
    EXPECT_EQ(in[0].quant.axis, 0);
    EXPECT_EQ(in[0].quant.zero_point, 0);
    EXPECT_EQ(in[0].scales_file, "w_scales.bin");
    EXPECT_EQ(in[0].quant_text, "@w_scales.bin,0");
    EXPECT_FALSE(in[0].quant.channel_scales) << "scales are read at model load, not by the parser";
    EXPECT_EQ(in[1].quant.axis, 1);
    EXPECT_EQ(in[1].scales_file, "v_s.bin");
    EXPECT_EQ(write_model_txt(m), "n:T*input:w_nchw.bin(int8[@w_scales.bin,0]:4,4,1,1);v.bin(int8[@v_s.bin,1]:64,32)"
                                  "*output:y(1)\n");
}

TEST(ModelTxt, Int4BlockWeights) {
    ModelText m = parse("m:MatMul*input:x(2,64);w.bin(int4[32,0]:64,8)*output:y(2,8)\n"
                        "g:Gemm*input:x(2,64);v.bin(int4[64,1]:5,64)*output:z(2,5)*transB:1\n");
    const TensorRef &w = m.ops[0].inputs[1];
    EXPECT_EQ(w.dtype, DType::I4);
    EXPECT_TRUE(w.quant.present);
    EXPECT_TRUE(w.quant.blockwise());
    EXPECT_FALSE(w.quant.per_channel());
    EXPECT_EQ(w.quant.block, 32);
    EXPECT_EQ(w.quant.axis, 0);
    EXPECT_EQ(w.shape, (Shape{64, 8})) << "the declared shape; graph.cpp holds the stored rows";
    EXPECT_TRUE(w.scales_file.empty()) << "the scales are inside the file";
    EXPECT_EQ(m.ops[1].inputs[1].quant.block, 64);
    EXPECT_EQ(m.ops[1].inputs[1].quant.axis, 1);
}

class RoundTrip : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, ByteIdentical) { expect_round_trip(GetParam()); }

INSTANTIATE_TEST_SUITE_P(
    Grammar, RoundTrip,
    ::testing::Values(
        "a:Add*input:x(1,2);y(1,2)*output:z(1,2)\n",
        "n:Relu*input:input_2E_1(2)*output:onnx_3A__3A_Gemm_5F_5(2)\n",
        "n:T*input:a.bin(float32:2,3);b.bin(float16:4);c.bin(int64:1);d.bin(uint8[0.5,3]:2,2);"
        "e.bin(int8[0.25,-3]:5);f.bin(float32:);g.bin(int32:7);h.bin(bool:2)*output:y(1)\n",
        "q:T*input:w.bin(uint8[0.012345678901234,128]:3);v.bin(uint8[1e-3,0]:1)*output:y(1)\n",
        "q:T*input:w_nchw.bin(int8[@w_scales.bin,0]:4,4,1,1);v.bin(int8[@v_s.bin,1]:64,32)*output:y(1)\n",
        "m:MatMul*input:x(2,64);w.bin(int4[32,0]:64,8)*output:y(2,8)\n",
        "r:Resize*input:x(1,2,3,3);;s.bin(float32:4)*output:y(1,2,6,6)\n",
        "c:Clip*input:;x(2);*output:y(2)\n",
        "c:Clip*input:x(2);;*output:y(2)\n",
        "c:C*input:*output:y(2)\n",
        "n:T*input:x()*output:y(0,3);z()\n",
        "n:T*input:x(1)*output:y(1)*pads:1,1,1,1;alpha:-0.75;mode:nearest;axes:;eps:1e-05\n",
        "n:T*input:x(1)*output:y(1)*\n",
        "a:T*input:x(1)*output:y(1)\r\n\r\nb:T*input:y(1)*output:z(1)\r\n",
        "\n\na:T*input:x(1)*output:y(1)\n\n\n",
        "a:T*input:x(1)*output:y(1)",
        "a:T*input:x(1)*output:y(1)\nb:T*input:y(1)*output:z(1)",
        "a:T*input:x(1)*output:y(1)\r\nb:T*input:y(1)*output:z(2)",
        "a:T*input:x(1)*output:y(1)\r\n\r\n",
        "a:T*input:x(1)*output:y(1)\n\nb:T*input:y(1)*output:z(1)\n\n",
        "\n",
        "\r\n\r\n",
        "\n\n",
        ""));

TEST(ModelTxt, WriteThenParseGivesTheSameModel) {
    ModelText m;
    m.crlf = true;
    m.trailing_newline = false;
    OpLine op;
    op.line = 1;
    op.name = "/conv";
    op.type = "Conv";
    TensorRef x;
    x.name = "x";
    x.shape = {1, 2, 3, 3};
    TensorRef w;
    w.is_weight = true;
    w.name = "w.bin";
    w.dtype = DType::U8;
    w.quant = {true, 0.5, 7, -1, nullptr, 0, {}};
    w.quant_text = "0.5,7";
    w.shape = {4, 2, 1, 1};
    TensorRef none;
    none.present = false;
    TensorRef y;
    y.name = "y";
    y.shape = {1, 4, 3, 3};
    op.inputs = {x, w, none};
    op.outputs = {y};
    op.has_attr_section = true;
    op.attrs = {{"group", "1", 0}, {"pads", "0,0,0,0", 0}};
    m.ops.push_back(op);
    m.blank_lines = {2};
    OpLine op2 = op;
    op2.line = 3;
    op2.name = "/conv2";
    op2.inputs = {y};
    op2.outputs = {x};
    op2.has_attr_section = false;
    op2.attrs.clear();
    m.ops.push_back(op2);

    std::string text = write_model_txt(m);
    EXPECT_EQ(text, "/conv:Conv*input:x(1,2,3,3);w.bin(uint8[0.5,7]:4,2,1,1);*output:y(1,4,3,3)*group:1;"
                    "pads:0,0,0,0\r\n\r\n/conv2:Conv*input:y(1,4,3,3)*output:x(1,2,3,3)");
    expect_same_model(parse(text), m);
    EXPECT_EQ(write_op_line(m.ops[1]), "/conv2:Conv*input:y(1,4,3,3)*output:x(1,2,3,3)");
}

TEST(ModelTxt, RealModelRoundTrips) {
    std::string text = shared_model_txt();
    if (text.empty()) GTEST_SKIP() << "ONNXSTREAM_SHARED_DIR is not set";
    ModelText m = parse(text);
    EXPECT_GT(m.ops.size(), 200u);
    EXPECT_FALSE(m.crlf);
    EXPECT_EQ(write_model_txt(m), text);

    // Every grammar feature the model uses survives: omitted inputs (Resize), scalars, int64 weights.
    size_t omitted = 0, scalars = 0, int64s = 0;
    for (const auto &op : m.ops)
        for (const auto &in : op.inputs) {
            omitted += !in.present;
            scalars += in.is_weight && in.shape.empty();
            int64s += in.is_weight && in.dtype == DType::I64;
        }
    EXPECT_GT(omitted, 0u);
    EXPECT_GT(scalars, 0u);
    EXPECT_GT(int64s, 0u);

    std::string crlf = to_crlf(text);
    ModelText mc = parse(crlf);
    EXPECT_TRUE(mc.crlf);
    EXPECT_EQ(write_model_txt(mc), crlf);
    mc.crlf = false;
    expect_same_model(mc, m);

    std::string no_eol = text.substr(0, text.size() - 1);
    EXPECT_EQ(write_model_txt(parse(no_eol)), no_eol);
    std::string crlf_no_eol = crlf.substr(0, crlf.size() - 2);
    EXPECT_EQ(write_model_txt(parse(crlf_no_eol)), crlf_no_eol);
}

// ---- errors ---------------------------------------------------------------------------------------

struct ParseErrorCase {
    const char *name;
    std::string text;
    int line;
    // The error column is where `at` first occurs in the failing line (1-based); "" = column 1,
    // "$" = one past the end of the line.
    std::string at;
    std::string message;
};

std::ostream &operator<<(std::ostream &os, const ParseErrorCase &c) { return os << c.name; }

class ParseError : public ::testing::TestWithParam<ParseErrorCase> {};

TEST_P(ParseError, NamesFileLineAndColumn) {
    const ParseErrorCase &c = GetParam();
    std::string msg = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { parse_model_txt(c.text, "dir/model.txt"); });
    // The failing line's text, without its line ending.
    size_t start = 0;
    for (int i = 1; i < c.line; ++i) start = c.text.find('\n', start) + 1;
    std::string line = c.text.substr(start, c.text.find('\n', start) - start);
    int column = 1;
    if (c.at == "$") {
        column = static_cast<int>(line.size()) + 1;
    } else if (!c.at.empty()) {
        size_t pos = line.find(c.at);
        ASSERT_NE(pos, std::string::npos) << "bad test case: '" << c.at << "' is not in line " << c.line;
        column = static_cast<int>(pos) + 1;
    }
    std::string prefix = "dir/model.txt:" + std::to_string(c.line) + ":" + std::to_string(column) + ": ";
    EXPECT_EQ(msg.substr(0, prefix.size()), prefix) << msg;
    EXPECT_CONTAINS(msg, c.message);
}

const std::string kOk = "a:T*input:x(1)*output:y(1)\n";

INSTANTIATE_TEST_SUITE_P(
    Grammar, ParseError,
    ::testing::Values(
        ParseErrorCase{"letter_dim", "a:Add*input:x(1,a)*output:y(1)\n", 1, "a)", "bad dimension 'a'"},
        ParseErrorCase{"negative_dim", "a:Add*input:x(1,-2)*output:y(1)\n", 1, "-2", "bad dimension '-2'"},
        ParseErrorCase{"plus_dim", "a:Add*input:x(+2)*output:y(1)\n", 1, "+2", "bad dimension '+2'"},
        ParseErrorCase{"space_dim", "a:Add*input:x(1, 2)*output:y(1)\n", 1, " 2", "bad dimension ' 2'"},
        ParseErrorCase{"leading_zero_dim", "a:Add*input:x(07)*output:y(1)\n", 1, "07", "bad dimension '07'"},
        ParseErrorCase{"empty_dim", "a:Add*input:x(1,,2)*output:y(1)\n", 1, ",2)", "bad dimension ''"},
        ParseErrorCase{"huge_dim", "a:Add*input:x(1,99999999999999999999)*output:y(1)\n", 1, "9999",
                       "is too large"},
        ParseErrorCase{"overflowing_shape", "a:Add*input:x(1099511627776,1099511627776)*output:y(1)\n", 1,
                       "1099511627776,", "more than 2^60 elements"},
        ParseErrorCase{"weight_bad_dim", "a:Add*input:w.bin(float32:3,x)*output:y(1)\n", 1, "x)",
                       "bad dimension 'x'"},
        ParseErrorCase{"no_shape", "a:Add*input:x*output:y(1)\n", 1, "x*", "expected NAME(shape)"},
        ParseErrorCase{"unterminated_input", "a:Add*input:x(1,2*output:y(1)\n", 1, "x(", "expected NAME(shape)"},
        ParseErrorCase{"unterminated_output", "a:Add*input:x(1)*output:y(1\n", 1, "y(1", "expected NAME(shape)"},
        ParseErrorCase{"junk_after_shape", "a:Add*input:x(1)z*output:y(1)\n", 1, "x(1)z", "expected NAME(shape)"},
        ParseErrorCase{"no_name", "a:Add*input:(1)*output:y(1)\n", 1, "(1)", "without a name"},
        ParseErrorCase{"unknown_dtype", "a:Add*input:w.bin(float128:2)*output:y(1)\n", 1, "float128",
                       "unknown dtype 'float128'"},
        ParseErrorCase{"empty_dtype", "a:Add*input:w.bin(:2)*output:y(1)\n", 1, ":2)", "unknown dtype ''"},
        ParseErrorCase{"quant_one_param", "a:Add*input:w.bin(uint8[0.5]:2)*output:y(1)\n", 1, "uint8",
                       "bad quantization parameters '[0.5]'"},
        ParseErrorCase{"quant_bad_scale", "a:Add*input:w.bin(uint8[x,1]:2)*output:y(1)\n", 1, "uint8",
                       "bad quantization parameters"},
        ParseErrorCase{"quant_zero_scale", "a:Add*input:w.bin(uint8[0,1]:2)*output:y(1)\n", 1, "uint8",
                       "scale must be positive"},
        ParseErrorCase{"quant_inf_scale", "a:Add*input:w.bin(uint8[inf,1]:2)*output:y(1)\n", 1, "uint8",
                       "scale must be positive and finite"},
        ParseErrorCase{"quant_zp_range", "a:Add*input:w.bin(uint8[0.5,256]:2)*output:y(1)\n", 1, "uint8",
                       "zero point 256 is outside 0..255"},
        ParseErrorCase{"quant_int8_zp_range", "a:Add*input:w.bin(int8[0.5,-129]:2)*output:y(1)\n", 1, "int8",
                       "zero point -129 is outside -128..127"},
        ParseErrorCase{"quant_unterminated", "a:Add*input:w.bin(uint8[0.5,3:2)*output:y(1)\n", 1, "uint8",
                       "unterminated quantization parameters"},
        ParseErrorCase{"per_channel_uint8", "a:Add*input:w.bin(uint8[@s.bin,0]:2,2)*output:y(1)\n", 1, "uint8",
                       "per-channel quantization needs an int8 weight"},
        ParseErrorCase{"per_channel_axis_range", "a:Add*input:w.bin(int8[@s.bin,2]:2,2)*output:y(1)\n", 1, "int8",
                       "quantization axis 2 is out of range for a weight of shape (2,2)"},
        ParseErrorCase{"per_channel_bad_axis", "a:Add*input:w.bin(int8[@s.bin,x]:2,2)*output:y(1)\n", 1, "x]",
                       "bad quantization axis 'x'"},
        ParseErrorCase{"per_channel_leading_zero_axis", "a:Add*input:w.bin(int8[@s.bin,01]:2,2)*output:y(1)\n", 1,
                       "01]", "bad quantization axis '01'"},
        ParseErrorCase{"per_channel_no_file", "a:Add*input:w.bin(int8[@,0]:2,2)*output:y(1)\n", 1, "@,",
                       "bad per-channel quantization parameters '[@,0]'"},
        ParseErrorCase{"per_channel_three_params", "a:Add*input:w.bin(int8[@s.bin,0,1]:2,2)*output:y(1)\n", 1,
                       "@s", "expected [@scales_file,axis]"},
        ParseErrorCase{"int4_block_16", "m:MatMul*input:x(1,64);w.bin(int4[16,0]:64,8)*output:y(1,8)\n", 1, "int4",
                       "an int4 block must be a multiple of 32"},
        ParseErrorCase{"int4_leading_zero", "m:MatMul*input:x(1,64);w.bin(int4[032,0]:64,8)*output:y(1,8)\n", 1,
                       "032", "bad int4 block parameters '[032,0]' (expected [block,axis])"},
        ParseErrorCase{"int4_one_param", "m:MatMul*input:x(1,64);w.bin(int4[32]:64,8)*output:y(1,8)\n", 1, "32]",
                       "expected [block,axis]"},
        ParseErrorCase{"int4_axis_2", "m:MatMul*input:x(1,64);w.bin(int4[32,2]:64,8)*output:y(1,8)\n", 1, "int4",
                       "axis must be 0 or 1"},
        ParseErrorCase{"int4_k_not_multiple", "m:MatMul*input:x(1,48);w.bin(int4[32,0]:48,8)*output:y(1,8)\n", 1,
                       "int4", "must be a positive multiple of its block 32"},
        ParseErrorCase{"int4_rank_3", "m:MatMul*input:x(1,64);w.bin(int4[32,0]:64,8,2)*output:y(1,8)\n", 1, "int4",
                       "must be 2-D"},
        ParseErrorCase{"quant_on_float", "a:Add*input:w.bin(float32[0.5,3]:2)*output:y(1)\n", 1, "float32",
                       "quantization parameters on a float32 weight"},
        ParseErrorCase{"weight_output", "a:Add*input:x(1)*output:y.bin(float32:1)\n", 1, "y.bin",
                       "written like a weight"},
        ParseErrorCase{"no_outputs", "a:Add*input:x(1)*output:\n", 1, "output:", "has no outputs"},
        ParseErrorCase{"empty_output", "a:Add*input:x(1)*output:y(1);\n", 1, "$", "empty output name"},
        ParseErrorCase{"two_sections", "a:Add*input:x(1)\n", 1, "", "expected 3 or 4 '*'-separated sections"},
        ParseErrorCase{"five_sections", "a:Add*input:x(1)*output:y(1)*k:1*z\n", 1, "", "found 5"},
        ParseErrorCase{"no_type", "Add*input:x(1)*output:y(1)\n", 1, "", "expected NAME:TYPE"},
        ParseErrorCase{"empty_name", ":Add*input:x(1)*output:y(1)\n", 1, "", "empty operation name"},
        ParseErrorCase{"empty_type", "a:*input:x(1)*output:y(1)\n", 1, "*", "empty operation type"},
        ParseErrorCase{"bad_input_prefix", "a:Add*inputs:x(1)*output:y(1)\n", 1, "inputs", "expected 'input:'"},
        ParseErrorCase{"bad_output_prefix", "a:Add*input:x(1)*out:y(1)\n", 1, "out:", "expected 'output:'"},
        ParseErrorCase{"attr_without_colon", "a:Add*input:x(1)*output:y(1)*axis\n", 1, "axis",
                       "expected KEY:VALUE"},
        ParseErrorCase{"attr_without_key", "a:Add*input:x(1)*output:y(1)*axis:1;:2\n", 1, ":2", "expected KEY:VALUE"},
        ParseErrorCase{"attr_trailing_semicolon", "a:Add*input:x(1)*output:y(1)*axis:1;\n", 1, "$",
                       "expected KEY:VALUE"},
        ParseErrorCase{"attr_duplicate", "a:Add*input:x(1)*output:y(1)*axis:1;axis:2\n", 1, "axis:2",
                       "duplicate attribute 'axis'"},
        ParseErrorCase{"tab", "a:Add*input:x(1)\t*output:y(1)\n", 1, "\t", "control character"},
        ParseErrorCase{"nul", std::string("a:Add*input:x(1)*output:y(1)\0\n", 30), 1, std::string("\0", 1),
                       "control character"},
        ParseErrorCase{"del", "a:Add*input:x(1)*output:y\x7f(1)\n", 1, "\x7f", "control character"},
        ParseErrorCase{"lone_cr_in_lf_file", "a:Add*input:x(1)\r*output:y(1)\n", 1, "\r", "control character"},
        ParseErrorCase{"lone_cr_at_eof", "a:Add*input:x(1)*output:y(1)\r", 1, "\r", "control character"},
        ParseErrorCase{"crlf_then_lf", kOk.substr(0, kOk.size() - 1) + "\r\n" + kOk, 2, "$",
                       "mixed line endings"},
        ParseErrorCase{"lf_then_crlf", kOk + kOk.substr(0, kOk.size() - 1) + "\r\n", 2, "\r",
                       "mixed line endings"},
        ParseErrorCase{"error_after_blank_lines", kOk + "\n\n" + "b:T*input:y(1)*output:z(q)\n", 4, "q)",
                       "bad dimension 'q'"},
        ParseErrorCase{"error_on_crlf_line", to_crlf(kOk + "b:T*input:y(1)*output:z(-1)\n"), 2, "-1)",
                       "bad dimension '-1'"},
        ParseErrorCase{"error_on_last_line_without_newline", kOk + "b:T*input:y(1)*output:z(1", 2, "z(1",
                       "expected NAME(shape)"}),
    [](const ::testing::TestParamInfo<ParseErrorCase> &info) { return std::string(info.param.name); });
