#include "tools/sd15_keys.h"

#include <algorithm>
#include <cstddef>

namespace onnxstream::tools {

namespace {

using Parts = std::vector<std::string>;

// The ldm UNet has this many resnet(+attention) layers per resolution, then one down/upsampler slot: its
// input_blocks/output_blocks numbering runs through all of them.
constexpr int kLayersPerBlock = 2;

// Keys are compared by whole dot-separated components, so "input_blocks.1" never matches "input_blocks.10".
Parts split_dots(const std::string &s) {
    Parts parts;
    size_t start = 0;
    while (true) {
        const size_t dot = s.find('.', start);
        parts.push_back(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) return parts;
        start = dot + 1;
    }
}

// The i-th component, "" past the end: the rules below test components without counting them first.
const std::string &at(const Parts &p, size_t i) {
    static const std::string none;
    return i < p.size() ? p[i] : none;
}

// A block index: digits only, short enough not to overflow.
bool parse_index(const std::string &s, int &out) {
    if (s.empty() || s.size() > 6 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
    out = std::stoi(s);
    return true;
}

// `prefix` + the components from `from` on; nullopt when there are none (a key names a tensor, never a
// module).
std::optional<std::string> with_rest(const std::string &prefix, const Parts &p, size_t from) {
    if (from >= p.size()) return std::nullopt;
    std::string key = prefix;
    for (size_t i = from; i < p.size(); ++i) key += "." + p[i];
    return key;
}

// Inside a UNet resnet: ldm keeps the nn.Sequential indices (in_layers.2 is the conv after norm and SiLU).
std::optional<std::string> unet_resnet(const std::string &prefix, const Parts &p, size_t from) {
    struct Rename {
        const char *name, *index, *to; // index nullptr: a one-component name
    };
    static const Rename kRenames[] = {
        {"in_layers", "0", "norm1"},  {"in_layers", "2", "conv1"},          {"out_layers", "0", "norm2"},
        {"out_layers", "3", "conv2"}, {"emb_layers", "1", "time_emb_proj"}, {"skip_connection", nullptr, "conv_shortcut"},
    };
    for (const Rename &r : kRenames)
        if (at(p, from) == r.name && (!r.index || at(p, from + 1) == r.index))
            return with_rest(prefix + "." + r.to, p, from + (r.index ? 2 : 1));
    return std::nullopt;
}

// p: the key after "model.diffusion_model.".
std::optional<std::string> unet_key(const Parts &p) {
    const std::string &top = at(p, 0), &second = at(p, 1);
    if (top == "time_embed") {
        if (second == "0") return with_rest("time_embedding.linear_1", p, 2);
        if (second == "2") return with_rest("time_embedding.linear_2", p, 2);
        return std::nullopt;
    }
    if (top == "out") {
        if (second == "0") return with_rest("conv_norm_out", p, 2);
        if (second == "2") return with_rest("conv_out", p, 2);
        return std::nullopt;
    }
    int i = 0;
    if (!parse_index(second, i)) return std::nullopt;
    const std::string &sub = at(p, 2);
    if (top == "middle_block") {
        if (i == 0) return unet_resnet("mid_block.resnets.0", p, 2);
        if (i == 1) return with_rest("mid_block.attentions.0", p, 2);
        if (i == 2) return unet_resnet("mid_block.resnets.1", p, 2);
        return std::nullopt;
    }
    if (top == "input_blocks") {
        if (i == 0) return sub == "0" ? with_rest("conv_in", p, 3) : std::nullopt;
        const int b = (i - 1) / (kLayersPerBlock + 1), l = (i - 1) % (kLayersPerBlock + 1);
        const std::string block = "down_blocks." + std::to_string(b);
        if (l < kLayersPerBlock) {
            if (sub == "0") return unet_resnet(block + ".resnets." + std::to_string(l), p, 3);
            if (sub == "1") return with_rest(block + ".attentions." + std::to_string(l), p, 3);
        } else if (sub == "0" && at(p, 3) == "op") {
            return with_rest(block + ".downsamplers.0.conv", p, 4);
        }
        return std::nullopt;
    }
    if (top == "output_blocks") {
        const int b = i / (kLayersPerBlock + 1), l = i % (kLayersPerBlock + 1);
        const std::string block = "up_blocks." + std::to_string(b);
        if (sub == "0") return unet_resnet(block + ".resnets." + std::to_string(l), p, 3);
        // The upsampler sits right after the resnet in blocks without attention (output_blocks.2.1.conv),
        // after the attention in the others (output_blocks.5.2.conv).
        if ((sub == "1" || sub == "2") && at(p, 3) == "conv") return with_rest(block + ".upsamplers.0.conv", p, 4);
        if (sub == "1") return with_rest(block + ".attentions." + std::to_string(l), p, 3);
        return std::nullopt;
    }
    return std::nullopt;
}

std::optional<std::string> vae_resnet(const std::string &prefix, const Parts &p, size_t from) {
    const std::string &name = at(p, from);
    if (name == "norm1" || name == "conv1" || name == "norm2" || name == "conv2")
        return with_rest(prefix + "." + name, p, from + 1);
    if (name == "nin_shortcut") return with_rest(prefix + ".conv_shortcut", p, from + 1);
    return std::nullopt;
}

// p: the key after "first_stage_model.". Only the decoder side: the import makes no encoder.
std::optional<std::string> vae_key(const Parts &p, int levels) {
    if (at(p, 0) == "post_quant_conv") return with_rest("post_quant_conv", p, 1);
    if (at(p, 0) != "decoder") return std::nullopt;
    const std::string &part = at(p, 1);
    if (part == "conv_in") return with_rest("decoder.conv_in", p, 2);
    if (part == "norm_out") return with_rest("decoder.conv_norm_out", p, 2);
    if (part == "conv_out") return with_rest("decoder.conv_out", p, 2);
    if (part == "mid") {
        if (at(p, 2) == "block_1") return vae_resnet("decoder.mid_block.resnets.0", p, 3);
        if (at(p, 2) == "block_2") return vae_resnet("decoder.mid_block.resnets.1", p, 3);
        if (at(p, 2) != "attn_1") return std::nullopt;
        static const char *const kAttention[][2] = {
            {"norm", "group_norm"}, {"q", "to_q"}, {"k", "to_k"}, {"v", "to_v"}, {"proj_out", "to_out.0"}};
        for (const auto &r : kAttention)
            if (at(p, 3) == r[0]) return with_rest(std::string("decoder.mid_block.attentions.0.") + r[1], p, 4);
        return std::nullopt;
    }
    if (part != "up") return std::nullopt;
    int n = 0, m = 0;
    if (!parse_index(at(p, 2), n) || n >= levels) return std::nullopt;
    const std::string block = "decoder.up_blocks." + std::to_string(levels - 1 - n);
    if (at(p, 3) == "block" && parse_index(at(p, 4), m)) return vae_resnet(block + ".resnets." + std::to_string(m), p, 5);
    if (at(p, 3) == "upsample" && at(p, 4) == "conv") return with_rest(block + ".upsamplers.0.conv", p, 5);
    return std::nullopt;
}

// p: the key after "cond_stage_model.transformer." (CLIPTextModel's own names).
std::optional<std::string> text_encoder_key(const Parts &p) {
    if (p.back() == "position_ids") return std::nullopt; // a buffer of 0..76, not a weight
    if (at(p, 0) == "text_model") return with_rest("text_encoder:text_model", p, 1);
    // Files saved with older transformers releases lack the "text_model." level.
    if (at(p, 0) == "embeddings" || at(p, 0) == "encoder" || at(p, 0) == "final_layer_norm")
        return with_rest("text_encoder:text_model", p, 0);
    return std::nullopt;
}

bool starts_with(const std::string &s, const std::string &prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

} // namespace

std::optional<std::string> sd15_diffusers_key(const std::string &ldm_key, int vae_levels) {
    static const std::string kText = "cond_stage_model.transformer.", kUnet = "model.diffusion_model.",
                             kVae = "first_stage_model.";
    if (starts_with(ldm_key, kText)) return text_encoder_key(split_dots(ldm_key.substr(kText.size())));
    if (starts_with(ldm_key, kUnet)) {
        std::optional<std::string> key = unet_key(split_dots(ldm_key.substr(kUnet.size())));
        return key ? std::optional<std::string>("unet:" + *key) : std::nullopt;
    }
    if (starts_with(ldm_key, kVae)) {
        std::optional<std::string> key = vae_key(split_dots(ldm_key.substr(kVae.size())), vae_levels);
        return key ? std::optional<std::string>("vae:" + *key) : std::nullopt;
    }
    return std::nullopt;
}

int sd15_vae_levels(const std::vector<std::string> &ldm_keys) {
    static const std::string kUp = "first_stage_model.decoder.up.";
    int levels = 0;
    for (const std::string &key : ldm_keys) {
        if (!starts_with(key, kUp)) continue;
        const size_t dot = key.find('.', kUp.size());
        int n = 0;
        if (dot != std::string::npos && parse_index(key.substr(kUp.size(), dot - kUp.size()), n))
            levels = std::max(levels, n + 1);
    }
    return levels;
}

std::string sd15_current_diffusers_key(const std::string &key) {
    static const std::string kAttention = "vae:decoder.mid_block.attentions.0.";
    if (!starts_with(key, kAttention)) return key;
    const Parts p = split_dots(key.substr(kAttention.size()));
    static const char *const kOld[][2] = {{"query", "to_q"}, {"key", "to_k"}, {"value", "to_v"}, {"proj_attn", "to_out.0"}};
    for (const auto &r : kOld)
        if (at(p, 0) == r[0]) return with_rest(kAttention + r[1], p, 1).value_or(key);
    return key;
}

} // namespace onnxstream::tools
