/*
 * txt2img pipeline: text encoder(s) -> UNet with classifier-free guidance -> VAE decoder, on onnxstream
 * models loaded one after the other (each is destroyed before the next is created, so only one model's
 * working set is ever alive).
 *
 * SD 1.5 model folder layout (OnnxStream's published SD 1.5 layout, also what onnxstream-convert produces):
 *   <models>/text_encoder_fp32/   input onnx::Reshape_0 (1,77) int64 -> a (1,77,768) output
 *   <models>/unet_fp16/           inputs sample (B,4,h,w), timestep (1) float32, encoder_hidden_states
 *                                 (B,77k,768) -> output 0 (B,4,h,w) (B = 1, or 2 for cond+uncond in one batch)
 *     (unet_fp32/ is used when unet_fp16/ is absent)
 *   <models>/vae_decoder_fp32/ or vae_decoder_fp16/   input input.1 (1,4,h,w) -> output 0 (1,3,8h,8w)
 *   <models>/vae_decoder_qu8/     optional: the W8A8 decoder (uint8 weights + range_data.txt); used with
 *                                 --decoder-qu8, and by default in memory mode MIN when present
 *   <models>/<decoder>_l32/, <decoder>_l16/   optional: the same decoder converted for (1,4,32,32) or
 *                                 (1,4,16,16) latent tiles, for tiled decoding (the tile size is read from the
 *                                 model; memory mode MIN prefers _l16, the others _l32)
 *   <models>/tokenizer/           vocab.txt + merges.txt (or pass tokenizer_path)
 * SDXL 1.0 and SDXL Turbo (OnnxStream's folder names):
 *   <models>/sdxl_text_encoder_1_fp32/  CLIP ViT-L: input input_ids (1,77) int64 -> the penultimate hidden
 *                                 state (1,77,768) as an output
 *   <models>/sdxl_text_encoder_2_fp32/  OpenCLIP ViT-bigG: input input_ids (ids after the end token are 0) ->
 *                                 the penultimate hidden state (1,77,1280) and the pooled text_embeds (1,1280)
 *   <models>/sdxl_unet_fp16/      inputs sample, timestep, encoder_hidden_states (B,77k,2048), text_embeds
 *                                 (B,1280), time_ids (B,6) (or sdxl_unet_fp32/); SDXL Turbo first looks for
 *                                 sdxl_unet_anyshape_fp16/
 *   <models>/sdxl_vae_decoder_fp32/ or _fp16/ (and _qu8/), with tile decoders <decoder>_l32/, _l16/ or
 *                                 OnnxStream's sdxl_vae_decoder_32x32_fp16/
 *   <models>/sdxl_tokenizer/      vocab.txt + merges.txt
 * Image and latent sizes are read from the models' declared input shapes.
 */
#ifndef SD_PIPELINE_H
#define SD_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "lora.h"
#include "onnxstream.h"
#include "scheduler.h"

/* When to decode in tiles with a <decoder>_l32/ or <decoder>_l16/ folder. */
enum {
    SD_TILED_AUTO = 0,  /* when the memory mode is MIN and a tile decoder folder exists */
    SD_TILED_NEVER = 1,
    SD_TILED_ALWAYS = 2 /* a missing tile decoder folder is an error */
};

/* Which family of Stable Diffusion models the folder holds. */
typedef enum sd_model_kind {
    SD_MODEL_SD15 = 0,   /* SD 1.x */
    SD_MODEL_SDXL,       /* SDXL 1.0 base: two text encoders, size conditioning, CFG */
    SD_MODEL_SDXL_TURBO  /* SDXL Turbo: as SDXL without CFG or negative prompt, trailing timesteps */
} sd_model_kind;

typedef struct sd_pipeline_options {
    const char *models_path;
    int model;                    /* an sd_model_kind */
    const char *tokenizer_path;   /* NULL: <models_path>/tokenizer (SDXL: sdxl_tokenizer) */
    const char *prompt;
    const char *negative_prompt;  /* may be NULL (SDXL: NULL means zero embeddings for the unconditional run) */
    int steps;
    double cfg_scale;             /* SDXL Turbo ignores it (one UNet run per step, no guidance) */
    uint64_t seed;
    sd_sampler_kind sampler;
    int threads;                  /* 0: one per core */
    int provider;                 /* an onnxstream_provider_kind_t (default AUTO: the memory mode's) */
    int memory_mode;              /* an onnxstream_memory_mode_t for all three models */
    int attention;                /* an onnxstream_attention_t */
    int arithmetic;               /* an onnxstream_arithmetic_t for all three models (default AUTO) */
    int decoder_fp16;             /* use vae_decoder_fp16/ */
    int decoder_qu8;              /* use vae_decoder_qu8/ (W8A8) */
    int decoder_calibrate;        /* decode with vae_decoder_qu8/ in float while recording activation ranges,
                                     then write its range_data.txt (OnnxStream's --decoder-calibrate) */
    int tiled_decode;             /* SD_TILED_*: decode the latent in overlapping tiles */
    int tile_overlap;             /* latent cells shared by neighbouring tiles (default 8) */
    int ops_printf;               /* print every op as it finishes */
    int quiet;                    /* no progress output */
    const char *output;           /* PNG path (NULL: no image, e.g. with save_latents only) */
    const char *save_latents;     /* raw float32 latents after diffusion (may be NULL) */
    const char *decode_latents;   /* skip diffusion: decode this latents file (may be NULL) */
    const char *tile_cache;       /* tiled decoding: keep each decoded tile in this folder and read back the
                                     tiles already there, so a stopped decode resumes (may be NULL) */
    const char *weights_cache;    /* folder of each model's persistent weights cache (<model folder name>.oswc
                                     and, on XNNPACK 2024 builds, its packed weights); NULL: none */
    int width, height;            /* image size, multiples of 8 (0: the UNet's own size, 512x512 for SD 1.5 when
                                     the UNet takes any size); other than the UNet's needs a resizable UNet */
    const sd_lora_t *loras;       /* applied to the text encoder(s) and the UNet while they stream */
    size_t lora_count;
} sd_pipeline_options_t;

/* Fill defaults: SD 1.5, 20 steps, cfg 7.5, seed 0, euler_a, balanced memory mode, tiles when in MIN mode.
 * For SDXL Turbo, callers usually set steps 1. */
void sd_pipeline_options_init(sd_pipeline_options_t *o);

/*
 * Run the pipeline. Returns ONNXSTREAM_OK, or a status with a one-line message in err (naming the missing
 * file or folder, the model and the engine's own message).
 */
onnxstream_status_t sd_pipeline_run(const sd_pipeline_options_t *o, char *err, size_t err_size);

#endif
