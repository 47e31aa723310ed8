// onnxstream-sd-import's pure parts: the ldm -> diffusers key mapping of SD 1.5 checkpoints (tools/sd15_keys.h)
// and the weights.tsv reader of its graphs (tools/sd_graphs.h).
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "graph/model_txt.h"
#include "test_util.h"
#include "tools/sd15_keys.h"
#include "tools/sd_graphs.h"

using namespace onnxstream;
using namespace onnxstream::tools;

namespace {

std::string mapped(const std::string &ldm_key, int levels = 4) {
    return sd15_diffusers_key(ldm_key, levels).value_or("<nullopt>");
}

} // namespace

TEST(Sd15Keys, TextEncoder) {
    EXPECT_EQ(mapped("cond_stage_model.transformer.text_model.encoder.layers.0.mlp.fc1.weight"),
              "text_encoder:text_model.encoder.layers.0.mlp.fc1.weight");
    // Older files: no "text_model." level.
    EXPECT_EQ(mapped("cond_stage_model.transformer.encoder.layers.11.self_attn.q_proj.bias"),
              "text_encoder:text_model.encoder.layers.11.self_attn.q_proj.bias");
    EXPECT_EQ(mapped("cond_stage_model.transformer.embeddings.token_embedding.weight"),
              "text_encoder:text_model.embeddings.token_embedding.weight");
    EXPECT_EQ(mapped("cond_stage_model.transformer.text_model.embeddings.position_ids"), "<nullopt>");
    EXPECT_EQ(mapped("cond_stage_model.transformer.embeddings.position_ids"), "<nullopt>");
}

TEST(Sd15Keys, UnetTopLevel) {
    EXPECT_EQ(mapped("model.diffusion_model.time_embed.0.weight"), "unet:time_embedding.linear_1.weight");
    EXPECT_EQ(mapped("model.diffusion_model.time_embed.2.bias"), "unet:time_embedding.linear_2.bias");
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.0.0.weight"), "unet:conv_in.weight");
    EXPECT_EQ(mapped("model.diffusion_model.out.0.weight"), "unet:conv_norm_out.weight");
    EXPECT_EQ(mapped("model.diffusion_model.out.2.bias"), "unet:conv_out.bias");
}

TEST(Sd15Keys, UnetDownBlocks) {
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.1.0.in_layers.0.weight"),
              "unet:down_blocks.0.resnets.0.norm1.weight");
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.2.0.in_layers.2.weight"),
              "unet:down_blocks.0.resnets.1.conv1.weight");
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.4.0.emb_layers.1.weight"),
              "unet:down_blocks.1.resnets.0.time_emb_proj.weight");
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.4.0.skip_connection.weight"),
              "unet:down_blocks.1.resnets.0.conv_shortcut.weight");
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.1.1.transformer_blocks.0.attn1.to_q.weight"),
              "unet:down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_q.weight");
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.3.0.op.weight"), "unet:down_blocks.0.downsamplers.0.conv.weight");
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.9.0.op.bias"), "unet:down_blocks.2.downsamplers.0.conv.bias");
    // Whole components: input_blocks.10 is down block 3, not input_blocks.1 followed by "0".
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.10.0.out_layers.3.weight"),
              "unet:down_blocks.3.resnets.0.conv2.weight");
    EXPECT_EQ(mapped("model.diffusion_model.input_blocks.11.0.out_layers.0.bias"),
              "unet:down_blocks.3.resnets.1.norm2.bias");
}

TEST(Sd15Keys, UnetMidAndUpBlocks) {
    EXPECT_EQ(mapped("model.diffusion_model.middle_block.0.in_layers.2.bias"), "unet:mid_block.resnets.0.conv1.bias");
    EXPECT_EQ(mapped("model.diffusion_model.middle_block.1.proj_in.weight"), "unet:mid_block.attentions.0.proj_in.weight");
    EXPECT_EQ(mapped("model.diffusion_model.middle_block.2.out_layers.3.weight"), "unet:mid_block.resnets.1.conv2.weight");
    EXPECT_EQ(mapped("model.diffusion_model.output_blocks.0.0.skip_connection.weight"),
              "unet:up_blocks.0.resnets.0.conv_shortcut.weight");
    EXPECT_EQ(mapped("model.diffusion_model.output_blocks.2.1.conv.weight"), "unet:up_blocks.0.upsamplers.0.conv.weight");
    EXPECT_EQ(mapped("model.diffusion_model.output_blocks.5.2.conv.bias"), "unet:up_blocks.1.upsamplers.0.conv.bias");
    EXPECT_EQ(mapped("model.diffusion_model.output_blocks.5.1.norm.weight"), "unet:up_blocks.1.attentions.2.norm.weight");
    EXPECT_EQ(mapped("model.diffusion_model.output_blocks.8.1.norm.weight"), "unet:up_blocks.2.attentions.2.norm.weight");
    EXPECT_EQ(mapped("model.diffusion_model.output_blocks.11.1.transformer_blocks.0.ff.net.0.proj.weight"),
              "unet:up_blocks.3.attentions.2.transformer_blocks.0.ff.net.0.proj.weight");
    EXPECT_EQ(mapped("model.diffusion_model.output_blocks.3.0.in_layers.0.weight"), "unet:up_blocks.1.resnets.0.norm1.weight");
}

TEST(Sd15Keys, Vae) {
    EXPECT_EQ(mapped("first_stage_model.post_quant_conv.weight"), "vae:post_quant_conv.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.conv_in.bias"), "vae:decoder.conv_in.bias");
    EXPECT_EQ(mapped("first_stage_model.decoder.norm_out.weight"), "vae:decoder.conv_norm_out.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.mid.block_1.conv1.weight"), "vae:decoder.mid_block.resnets.0.conv1.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.mid.block_2.norm2.bias"), "vae:decoder.mid_block.resnets.1.norm2.bias");
    EXPECT_EQ(mapped("first_stage_model.decoder.mid.attn_1.norm.weight"),
              "vae:decoder.mid_block.attentions.0.group_norm.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.mid.attn_1.q.weight"), "vae:decoder.mid_block.attentions.0.to_q.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.mid.attn_1.proj_out.weight"),
              "vae:decoder.mid_block.attentions.0.to_out.0.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.up.0.block.2.conv1.weight"), "vae:decoder.up_blocks.3.resnets.2.conv1.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.up.1.block.0.nin_shortcut.weight"),
              "vae:decoder.up_blocks.2.resnets.0.conv_shortcut.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.up.3.upsample.conv.bias"), "vae:decoder.up_blocks.0.upsamplers.0.conv.bias");
    // The test models have 3 levels: up.0 is then up_blocks.2.
    EXPECT_EQ(mapped("first_stage_model.decoder.up.0.block.1.norm1.weight", 3),
              "vae:decoder.up_blocks.2.resnets.1.norm1.weight");
    EXPECT_EQ(mapped("first_stage_model.decoder.up.3.block.0.conv1.weight", 3), "<nullopt>");
}

TEST(Sd15Keys, UnusedKeys) {
    for (const char *key : {"first_stage_model.encoder.conv_in.weight", "first_stage_model.quant_conv.weight",
                            "first_stage_model.encoder.down.0.block.0.conv1.weight", "model_ema.decay",
                            "model_ema.diffusion_modelinput_blocks00weight", "alphas_cumprod", "betas",
                            "model.diffusion_model.input_blocks.3.1.norm.weight", "model.diffusion_model.label_emb.0.0.weight",
                            "model.diffusion_model.input_blocks.x.0.op.weight", "model.diffusion_model.time_embed.0",
                            "cond_stage_model.model.transformer.resblocks.0.attn.in_proj_weight", "first_stage_model.loss.logvar",
                            "model.diffusion_model.input_blocks.1.0.in_layers.1.weight", ""})
        EXPECT_EQ(mapped(key), "<nullopt>") << key;
}

TEST(Sd15Keys, VaeLevels) {
    EXPECT_EQ(sd15_vae_levels({"first_stage_model.decoder.up.0.block.0.conv1.weight",
                               "first_stage_model.decoder.up.3.upsample.conv.weight",
                               "first_stage_model.encoder.down.7.block.0.conv1.weight", "x"}),
              4);
    EXPECT_EQ(sd15_vae_levels({"first_stage_model.decoder.up.2.block.0.conv1.weight"}), 3);
    EXPECT_EQ(sd15_vae_levels({"model.diffusion_model.out.0.weight"}), 0);
}

TEST(Sd15Keys, OldDiffusersVaeAttention) {
    EXPECT_EQ(sd15_current_diffusers_key("vae:decoder.mid_block.attentions.0.query.weight"),
              "vae:decoder.mid_block.attentions.0.to_q.weight");
    EXPECT_EQ(sd15_current_diffusers_key("vae:decoder.mid_block.attentions.0.proj_attn.bias"),
              "vae:decoder.mid_block.attentions.0.to_out.0.bias");
    EXPECT_EQ(sd15_current_diffusers_key("vae:decoder.mid_block.attentions.0.to_k.weight"),
              "vae:decoder.mid_block.attentions.0.to_k.weight");
    EXPECT_EQ(sd15_current_diffusers_key("unet:mid_block.attentions.0.query.weight"),
              "unet:mid_block.attentions.0.query.weight");
}

TEST(SdGraphs, WeightsTsv) {
    const auto w = parse_weights_tsv("# comment\n\n"
                                     "a.bin\tunet:conv_in.weight\tohwi\tfloat16\t320,3,3,4\r\n"
                                     "b.bin\ttext_encoder:x.weight\ttranspose\tfloat32\t768,3072\n"
                                     "c.bin\t=\t00ff\n",
                                     "w.tsv");
    ASSERT_EQ(w.size(), 3u);
    EXPECT_EQ(w[0].file, "a.bin");
    EXPECT_EQ(w[0].line, 3);
    EXPECT_EQ(w[0].transform, WeightTransform::Ohwi);
    EXPECT_EQ(w[0].dtype, DType::F16);
    EXPECT_EQ(w[0].shape, (Shape{320, 3, 3, 4}));
    EXPECT_EQ(w[1].key, "text_encoder:x.weight");
    EXPECT_TRUE(w[2].constant);
    EXPECT_EQ(w[2].bytes, std::string("\x00\xff", 2));
}

TEST(SdGraphs, WeightsTsvErrors) {
    const std::pair<const char *, const char *> cases[] = {
        {"../a.bin\tunet:k\tas_is\tfloat32\t4\n", "w.tsv:1: '../a.bin' is not a plain file name"},
        {"d/a.bin\tunet:k\tas_is\tfloat32\t4\n", "not a plain file name"},
        {"model.txt\t=\t00\n", "not a plain file name"},
        {"a.bin\tclip:k\tas_is\tfloat32\t4\n", "is not <component>:<key>"},
        {"a.bin\tunet:\tas_is\tfloat32\t4\n", "is not <component>:<key>"},
        {"a.bin\tunet:k\tflip\tfloat32\t4\n", "unknown transform 'flip'"},
        {"a.bin\tunet:k\tas_is\tint8\t4\n", "dtype 'int8' is not float32 or float16"},
        {"a.bin\tunet:k\tas_is\tfloat32\t4,,2\n", "shape '4,,2'"},
        {"a.bin\tunet:k\tas_is\tfloat32\t0\n", "shape '0'"},
        {"a.bin\tunet:k\tas_is\tfloat32\t99999999999,99999999999\n", "is too large"},
        {"a.bin\tunet:k\ttranspose\tfloat32\t4\n", "transpose needs a 2-D shape"},
        {"a.bin\t=\t0\n", "odd length"},
        {"a.bin\t=\t0G\n", "not lowercase hex"},
        {"a.bin\t=\tAB\n", "not lowercase hex"},
        {"a.bin unet:k as_is float32 4\n", "expected 5 TAB-separated fields"},
        {"a.bin\t=\t00\n#\na.bin\t=\t01\n", "w.tsv:3: a.bin is already made on line 1"},
    };
    for (const auto &c : cases) {
        const std::string &text = c.first;
        EXPECT_CONTAINS(test::expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { parse_weights_tsv(text, "w.tsv"); }),
                        c.second);
    }
}

TEST(SdGraphs, MatchModel) {
    const ModelText model = parse_model_txt(
        "c:Conv*input:x(1,4,8,8);w_nchw.bin(float16:8,4,3,3);b.bin(float32:8)*output:y(1,8,8,8)*pads:1,1,1,1\n"
        "m:MatMul*input:y(1,8,8,8);m.bin(float32:8,2)*output:z(1,8,8,2)\n",
        "model.txt");
    const std::string good = "w_nhwc.bin\tunet:w\tohwi\tfloat16\t8,3,3,4\n"
                             "b.bin\tunet:b\tas_is\tfloat32\t8\n"
                             "m.bin\tunet:m\ttranspose\tfloat32\t8,2\n";
    check_weights_match_model(parse_weights_tsv(good, "w.tsv"), "w.tsv", model, "model.txt");

    std::string message = test::expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] {
        const std::string bad = "w_nchw.bin\tunet:w\tas_is\tfloat32\t8,4,3,3\n"
                                "x.bin\tunet:b\tas_is\tfloat32\t8\n"
                                "m.bin\t=\t00\n";
        check_weights_match_model(parse_weights_tsv(bad, "w.tsv"), "w.tsv", model, "model.txt");
    });
    EXPECT_CONTAINS(message, "(4 problem(s))");
    EXPECT_CONTAINS(message, "w.tsv:1: w_nchw.bin is made as float32 [8,4,3,3] but model.txt:1 reads it as float16 [8,4,3,3]");
    EXPECT_CONTAINS(message, "model.txt:1: weights.tsv does not make b.bin");
    EXPECT_CONTAINS(message, "w.tsv:3: m.bin is made as 1 bytes but model.txt:2 reads it as float32 [8,2]");
    EXPECT_CONTAINS(message, "w.tsv:2: x.bin is not a weight file of model.txt");
}
