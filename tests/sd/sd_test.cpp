// Stable Diffusion 1.5 architecture (small variants, random weights) through onnxstream-convert, public C API
// only: convert each of gen_sd.py's text encoder, UNet and VAE decoder with float32 and float16 weights, check
// the model.txt keeps OnnxStream's SD tensor names and has its shape chains folded, run it on gen_sd.py's
// inputs and compare with ONNX Runtime's outputs on the same ONNX file (float32 weights: relative L2 error
// <= 1e-4; float16 weights: <= 1e-2). The converter's node counts before/after simplification are printed.
//
// Environment: ONNXSTREAM_SD_CASES (gen_sd.py's --out).
#include <sys/stat.h>
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

std::string case_dir(const std::string &name) {
    const char *v = std::getenv("ONNXSTREAM_SD_CASES");
    return std::string(v ? v : "") + "/sd/" + name;
}

struct Expectation {
    const char *model;
    // model.txt spellings (OnnxStream's escaping) of the inputs OnnxStream's own SD program pushes.
    std::vector<std::string> txt_inputs;
};

// Converts one model, checks the result, runs it and compares with ONNX Runtime.
void check_model(const Expectation &e, bool fp16) {
    std::string dir = case_dir(e.model);
    ASSERT_TRUE(exists(dir + "/model.onnx")) << "ONNXSTREAM_SD_CASES does not point at gen_sd.py's output (" << dir
                                             << ")";
    Scratch scratch("onnxstream-sd-test");
    Conversion c = convert(dir + "/model.onnx", scratch.out(), fp16);
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    for (const auto &w : c.warnings) std::printf("converter warning: %s\n", w.c_str());
    // The converter's own summary line: "N nodes before simplification, M after".
    for (const auto &line : lines_of(c.report))
        if (line.find("nodes before") != std::string::npos) std::printf("%s%s:%s\n", e.model, fp16 ? " fp16" : "", line.c_str());

    std::string txt = read_text(scratch.out() + "/model.txt");
    auto ops = op_counts(txt);
    // Shape arithmetic and constants must be folded into weights: the exports are full of them.
    for (const char *folded : {"Shape", "Constant", "ConstantOfShape", "Identity", "Gather", "Equal", "Where"})
        if (std::string(folded) != "Gather" || std::string(e.model) != "text_encoder") { // the embedding lookup stays
            EXPECT_EQ(ops[folded], 0u) << e.model << ": " << folded << " left in model.txt";
        }
    for (const auto &name : e.txt_inputs)
        EXPECT_NE(txt.find(name + "("), std::string::npos) << "input " << name << " missing from model.txt";
    if (fp16) {
        // The bulk of SD's weights (convolution kernels, projection matrices) must stream as float16.
        size_t half = 0;
        for (const auto &line : lines_of(txt)) {
            std::string head = line.substr(0, line.find('*'));
            std::string type = head.substr(head.rfind(':') + 1);
            if (type != "Conv" && type != "MatMul" && type != "Gemm") continue;
            for (size_t at = line.find(".bin("); at != std::string::npos; at = line.find(".bin(", at + 1)) {
                std::string spec = line.substr(at + 5, line.find(')', at) - at - 5);
                bool matrix = spec.find(',') != std::string::npos;
                if (spec.rfind("float16:", 0) == 0) ++half;
                EXPECT_FALSE(matrix && spec.rfind("float32:", 0) == 0) << e.model << ": float32 weight in " << line;
            }
        }
        EXPECT_GT(half, 0u) << "no float16 weight written";
    }

    // float32 weights: rel L2 <= 1e-4; float16 weights: <= 1e-2 (no max-abs bound: outputs are unscaled).
    run_and_compare(scratch.out(), dir, fp16 ? 1e-2 : 1e-4, HUGE_VAL);
}

const Expectation kTextEncoder{"text_encoder", {"onnx_3A__3A_Reshape_5F_0"}};
const Expectation kUnet{"unet", {"sample", "timestep", "encoder_5F_hidden_5F_states"}};
const Expectation kVaeDecoder{"vae_decoder", {"input_2E_1"}};
// The same weights at other static input sizes: the tile decoder and the UNet for two prompt chunks.
const Expectation kVaeDecoderTile{"vae_decoder_tile", {"input_2E_1"}};
const Expectation kVaeDecoderTileSmall{"vae_decoder_tile_small", {"input_2E_1"}};
const Expectation kUnetBatch2{"unet_batch2", {"sample", "timestep", "encoder_5F_hidden_5F_states"}};
const Expectation kUnetLong{"unet_long", {"sample", "timestep", "encoder_5F_hidden_5F_states"}};

TEST(Sd15Small, TextEncoderFp32) { check_model(kTextEncoder, false); }
TEST(Sd15Small, TextEncoderFp16) { check_model(kTextEncoder, true); }
TEST(Sd15Small, UnetFp32) { check_model(kUnet, false); }
TEST(Sd15Small, UnetFp16) { check_model(kUnet, true); }
TEST(Sd15Small, VaeDecoderFp32) { check_model(kVaeDecoder, false); }
TEST(Sd15Small, VaeDecoderFp16) { check_model(kVaeDecoder, true); }
TEST(Sd15Small, VaeDecoderTileFp32) { check_model(kVaeDecoderTile, false); }
TEST(Sd15Small, VaeDecoderQuarterTileFp32) { check_model(kVaeDecoderTileSmall, false); }
TEST(Sd15Small, UnetLongContextFp16) { check_model(kUnetLong, true); }
TEST(Sd15Small, UnetBatch2Fp16) { check_model(kUnetBatch2, true); }

} // namespace
