// Stable Diffusion 1.5 architecture (small variants, random weights) through onnxstream-convert, public C API
// only: convert each of gen_sd.py's text encoder, UNet and VAE decoder with float32 and float16 weights, check
// the model.txt keeps OnnxStream's SD tensor names and has its shape chains folded, run it on gen_sd.py's
// inputs and compare with ONNX Runtime's outputs on the same ONNX file (float32 weights: relative L2 error
// <= 1e-4; float16 weights: <= 1e-2). The converter's node counts before/after simplification are printed.
//
// Environment: ONNXSTREAM_SD_CASES (gen_sd.py's --out).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/conversion_util.h"

namespace {

using namespace onnxstream::testing;

struct Expectation {
    const char *model;
    // model.txt spellings (OnnxStream's escaping) of the inputs OnnxStream's own SD program pushes.
    std::vector<std::string> txt_inputs;
};

// Converts one model, checks the result, runs it and compares with ONNX Runtime (check_sd_model).
void check_model(const Expectation &e, bool fp16) {
    // The text encoder's embedding lookup stays a Gather.
    std::vector<std::string> unfolded;
    if (std::string(e.model) == "text_encoder") unfolded.push_back("Gather");
    check_sd_model(sd_case_dir("ONNXSTREAM_SD_CASES", e.model), e.txt_inputs, fp16, unfolded);
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
