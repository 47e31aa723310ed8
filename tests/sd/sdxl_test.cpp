// Stable Diffusion XL 1.0 / SDXL Turbo architecture (small variants, random weights) through onnxstream-convert,
// public C API only: convert each of gen_sdxl.py's models (both text encoders, the UNet with its text_time
// embedding, at batch 1 and 2, the VAE decoder and its tile size) with float32 and float16 weights, check the
// model.txt keeps the input names and has its shape chains folded, run it on gen_sdxl.py's inputs and compare
// every output with ONNX Runtime's on the same ONNX file (float32 weights: relative L2 error <= 1e-4; float16
// weights: <= 1e-2). The converter's node counts before/after simplification are printed.
//
// Environment: ONNXSTREAM_SDXL_CASES (gen_sdxl.py's --out).
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/conversion_util.h"

namespace {

using namespace onnxstream::testing;

struct Expectation {
    const char *model;
    // model.txt spellings (OnnxStream's escaping) of the model's inputs.
    std::vector<std::string> txt_inputs;
    // Ops of check_sd_model's folded list that stay: the text encoders' embedding lookups (and the second
    // encoder's pooling at the argmax of the ids) are Gathers of run-time indices.
    std::vector<std::string> unfolded;
};

void check_model(const Expectation &e, bool fp16) {
    check_sd_model(sd_case_dir("ONNXSTREAM_SDXL_CASES", e.model), e.txt_inputs, fp16, e.unfolded);
}

const std::vector<std::string> kUnetInputs{"sample", "timestep", "encoder_5F_hidden_5F_states", "text_5F_embeds",
                                           "time_5F_ids"};
// One output, hidden_states[-2] (the last layer is unused and left out of the export).
const Expectation kTextEncoder1{"sdxl_text_encoder_1", {"input_5F_ids"}, {"Gather"}};
// Two outputs: text_embeds (pooled and projected) and hidden_states[-2].
const Expectation kTextEncoder2{"sdxl_text_encoder_2", {"input_5F_ids"}, {"Gather"}};
const Expectation kUnet{"sdxl_unet", kUnetInputs, {}};
const Expectation kUnetBatch2{"sdxl_unet_batch2", kUnetInputs, {}}; // cond + uncond in one run
const Expectation kVaeDecoder{"sdxl_vae_decoder", {"input_2E_1"}, {}};
const Expectation kVaeDecoderTile{"sdxl_vae_decoder_tile", {"input_2E_1"}, {}}; // half the latent size

TEST(SdxlSmall, TextEncoder1Fp32) { check_model(kTextEncoder1, false); }
TEST(SdxlSmall, TextEncoder1Fp16) { check_model(kTextEncoder1, true); }
TEST(SdxlSmall, TextEncoder2Fp32) { check_model(kTextEncoder2, false); }
TEST(SdxlSmall, TextEncoder2Fp16) { check_model(kTextEncoder2, true); }
TEST(SdxlSmall, UnetFp32) { check_model(kUnet, false); }
TEST(SdxlSmall, UnetFp16) { check_model(kUnet, true); }
TEST(SdxlSmall, UnetBatch2Fp32) { check_model(kUnetBatch2, false); }
TEST(SdxlSmall, UnetBatch2Fp16) { check_model(kUnetBatch2, true); }
TEST(SdxlSmall, VaeDecoderFp32) { check_model(kVaeDecoder, false); }
TEST(SdxlSmall, VaeDecoderFp16) { check_model(kVaeDecoder, true); }
TEST(SdxlSmall, VaeDecoderTileFp32) { check_model(kVaeDecoderTile, false); }
TEST(SdxlSmall, VaeDecoderTileFp16) { check_model(kVaeDecoderTile, true); }

} // namespace
