// Tensor names of Stable Diffusion 1.5 checkpoints. onnxstream-sd-import's graphs name every weight by its
// diffusers key ("unet:down_blocks.0.resnets.0.conv1.weight"); a single-file checkpoint in the original
// (ldm / A1111) layout names the same tensors differently. These functions translate, with no I/O, so the
// tests can check every rule.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace onnxstream::tools {

// The "component:diffusers_key" of the ldm key `ldm_key` (component: text_encoder, unet or vae), or nullopt
// for a key the import does not use (VAE encoder, quant_conv, model_ema.*, position_ids, scheduler tables,
// anything unknown). `vae_levels` is the VAE decoder's number of up levels (sd15_vae_levels): ldm numbers
// them from the lowest resolution up, diffusers from the highest down.
std::optional<std::string> sd15_diffusers_key(const std::string &ldm_key, int vae_levels);

// 1 + the largest N among the keys "first_stage_model.decoder.up.N.…" (4 for SD 1.5), 0 when there is none.
int sd15_vae_levels(const std::vector<std::string> &ldm_keys);

// A diffusers key ("vae:decoder.mid_block.attentions.0.query.weight") in today's spelling: older diffusers
// releases saved the VAE attention as query/key/value/proj_attn, now to_q/to_k/to_v/to_out.0. Other keys
// come back unchanged.
std::string sd15_current_diffusers_key(const std::string &key);

} // namespace onnxstream::tools
