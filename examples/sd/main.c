/*
 * sd: Stable Diffusion txt2img on onnxstream. Only argument parsing and reporting live here; the work is
 * in pipeline.c (and tokenizer.c, scheduler.c, rng.c, image.c). Options follow OnnxStream's SD example.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lora.h"
#include "pipeline.h"
#include "progress.h"
#include "tokenizer.h"

static const char *usage =
    "usage: sd --models-path DIR [--xl | --turbo] [--prompt TEXT] [--neg-prompt TEXT] [--steps N] [--seed N]\n"
    "          [--cfg SCALE] [--width W --height H]\n"
    "          [--sampler euler_a|euler|heun|dpm++2m|dpm++2m_karras|ddim|lcm] [--output FILE.png]\n"
    "          [--save-latents FILE [--latents-only]] [--decode-latents FILE] [--decoder-fp16] [--decoder-qu8]\n"
    "          [--decoder-calibrate] [--threads N]\n"
    "          [--memory-mode min|balanced|max-speed] [--attention auto|full|sliced|flash]\n"
    "          [--arithmetic auto|fp32|fp16]\n"
    "          [--tiled-decode] [--tile-overlap N] [--tile-cache DIR] [--weights-cache DIR] [--rpi] [--rpi-lowmem]\n"
    "          [--ops-printf]\n"
    "          [--lora FILE[:SCALE]]... [--tokenizer PATH] [--print-tokens] [--help]\n"
    "  --models-path      folder with text_encoder_fp32/, unet_fp16/ (or unet_fp32/), vae_decoder_fp32/\n"
    "                     (or vae_decoder_fp16/) and tokenizer/ (OnnxStream's SD 1.5 layout)\n"
    "  --xl               SDXL 1.0 base: sdxl_text_encoder_1_fp32/, sdxl_text_encoder_2_fp32/, sdxl_unet_fp16/,\n"
    "                     sdxl_vae_decoder_fp32/ (or _fp16/), sdxl_tokenizer/ (OnnxStream's SDXL layout);\n"
    "                     default cfg 5; without --neg-prompt the unconditional embeddings are zeros\n"
    "  --turbo            SDXL Turbo: the --xl folders (sdxl_unet_anyshape_fp16/ first), no guidance and no\n"
    "                     negative prompt, trailing timesteps, default 1 step (1 to 4 is what it was made for)\n"
    "  --cfg              classifier-free guidance scale (default 7.5; --xl: 5)\n"
    "  --latents-only     stop after --save-latents wrote the latents (no image); --decode-latents FILE\n"
    "                     decodes them later, in another process, to the same image\n"
    "  --seed             any 64-bit number (default 0); same seed, same image on every platform\n"
    "  --width, --height  image size in pixels, multiples of 64 for SD 1.5 (e.g. 384x640, 768x512); needs a\n"
    "                     UNet and VAE decoder converted for any size (onnxstream-convert --resizable, as\n"
    "                     make_models.py --resizable and onnxstream-sd-import make them); default: the\n"
    "                     UNet's size, 512x512 for one that takes any\n"
    "  --decoder-qu8      decode with vae_decoder_qu8/ (W8A8: uint8 weights + range_data.txt); memory mode\n"
    "                     min uses it whenever it exists\n"
    "  --decoder-calibrate  decode with vae_decoder_qu8/ in float while recording activation ranges, then\n"
    "                     write its range_data.txt (run on a few prompts' latents with --decode-latents)\n"
    "  --memory-mode      min (smallest working set), balanced (default) or max-speed (everything in RAM)\n"
    "  --arithmetic       how fp16 models compute: auto (default: fp16 only on CPUs with native float16\n"
    "                     arithmetic, e.g. ARMv8.2), fp32, or fp16 (float32 where the CPU has no f16 kernels)\n"
    "  --tiled-decode     decode the latent in overlapping tiles with <decoder>_l32/ or _l16/ (the decoder\n"
    "                     converted for 32x32 or 16x16 latents); --tile-overlap sets the shared latent\n"
    "                     cells (default 8, at most a quarter of the tile)\n"
    "  --tile-cache       keep each decoded tile in DIR and read back the tiles already there: a tiled\n"
    "                     decode that was stopped resumes where it stopped\n"
    "  --weights-cache    keep each model's prepared (XNNPACK 2024: and packed) weights in DIR/<model>.oswc*\n"
    "  --rpi              memory mode min (a 1 GB board)\n"
    "  --rpi-lowmem       the lowest memory (a 512 MB board): memory mode min, weights read per op without\n"
    "                     read-ahead, flash attention, tiled decoding when a tile decoder exists\n"
    "  --lora             apply a LoRA (.safetensors, kohya/A1111 or diffusers/PEFT keys) to the text\n"
    "                     encoder(s) and the UNet while their weights stream, scaled by SCALE (default 1);\n"
    "                     repeatable (at most 16), the LoRAs add up\n"
    "  --tokenizer        a folder with vocab.txt + merges.txt, or bpe_simple_vocab_16e6.txt.gz\n"
    "  --print-tokens     print the prompt's token ids (one line per 75-token chunk) and exit\n";

static int die(const char *message) {
    fprintf(stderr, "sd: %s\n", message);
    return 1;
}

static int parse_u64(const char *text, unsigned long long *out) {
    char *end = NULL;
    errno = 0;
    if (!text || !*text || *text == '-') return 0;
    *out = strtoull(text, &end, 10);
    return errno == 0 && *end == '\0';
}

static int print_tokens(const char *path, const char *prompt) {
    char err[512];
    sd_tokenizer_t *tok = sd_tokenizer_create(path, err, sizeof err);
    if (!tok) return die(err);
    int32_t *ids = NULL;
    size_t count = 0;
    if (sd_tokenizer_encode(tok, prompt ? prompt : "", &ids, &count, err, sizeof err) != 0) {
        sd_tokenizer_destroy(tok);
        return die(err);
    }
    for (size_t i = 0; i < count; ++i)
        printf("%d%s", ids[i], (i + 1) % SD_TOKENIZER_CHUNK_TOKENS == 0 || i + 1 == count ? "\n" : " ");
    if (count == 0) printf("\n");
    free(ids);
    sd_tokenizer_destroy(tok);
    return 0;
}

int main(int argc, char **argv) {
    sd_pipeline_options_t o;
    sd_pipeline_options_init(&o);
    static sd_lora_t loras[SD_MAX_LORAS];
    char err[2048] = "";
    o.loras = loras;
    o.output = "result.png";
    int want_tokens = 0, latents_only = 0, steps_given = 0, cfg_given = 0;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes_value = 1;
        unsigned long long n = 0;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage, stdout);
            return 0;
        } else if (!strcmp(a, "--xl")) {
            o.model = SD_MODEL_SDXL;
            takes_value = 0;
        } else if (!strcmp(a, "--turbo")) {
            o.model = SD_MODEL_SDXL_TURBO;
            takes_value = 0;
        } else if (!strcmp(a, "--latents-only")) {
            latents_only = 1;
            takes_value = 0;
        } else if (!strcmp(a, "--decoder-fp16")) {
            o.decoder_fp16 = 1;
            takes_value = 0;
        } else if (!strcmp(a, "--rpi")) {
            o.memory_mode = ONNXSTREAM_MEMORY_MIN;
            if (o.tiled_decode == SD_TILED_AUTO) o.tiled_decode = SD_TILED_NEVER;
            takes_value = 0;
        } else if (!strcmp(a, "--rpi-lowmem")) {
            o.memory_mode = ONNXSTREAM_MEMORY_MIN;
            o.provider = ONNXSTREAM_PROVIDER_NOCACHE;
            o.attention = ONNXSTREAM_ATTENTION_FLASH;
            takes_value = 0;
        } else if (!strcmp(a, "--tiled-decode")) {
            o.tiled_decode = SD_TILED_ALWAYS;
            takes_value = 0;
        } else if (!strcmp(a, "--ops-printf")) {
            o.ops_printf = 1;
            takes_value = 0;
        } else if (!strcmp(a, "--print-tokens")) {
            want_tokens = 1;
            takes_value = 0;
        } else if (!strcmp(a, "--decoder-calibrate")) {
            o.decoder_calibrate = 1;
            takes_value = 0;
        } else if (!strcmp(a, "--decoder-qu8")) {
            o.decoder_qu8 = 1;
            takes_value = 0;
        } else if (!v) {
            fprintf(stderr, "sd: %s needs a value\n%s", a, usage);
            return 1;
        } else if (!strcmp(a, "--memory-mode")) {
            if (!strcmp(v, "min")) o.memory_mode = ONNXSTREAM_MEMORY_MIN;
            else if (!strcmp(v, "balanced")) o.memory_mode = ONNXSTREAM_MEMORY_BALANCED;
            else if (!strcmp(v, "max-speed")) o.memory_mode = ONNXSTREAM_MEMORY_MAX_SPEED;
            else return die("--memory-mode expects min, balanced or max-speed");
        } else if (!strcmp(a, "--arithmetic")) {
            if (!strcmp(v, "auto")) o.arithmetic = ONNXSTREAM_ARITHMETIC_AUTO;
            else if (!strcmp(v, "fp32")) o.arithmetic = ONNXSTREAM_ARITHMETIC_FP32;
            else if (!strcmp(v, "fp16")) o.arithmetic = ONNXSTREAM_ARITHMETIC_FP16;
            else return die("--arithmetic expects auto, fp32 or fp16");
        } else if (!strcmp(a, "--attention")) {
            if (!strcmp(v, "auto")) o.attention = ONNXSTREAM_ATTENTION_AUTO;
            else if (!strcmp(v, "full")) o.attention = ONNXSTREAM_ATTENTION_FULL;
            else if (!strcmp(v, "sliced")) o.attention = ONNXSTREAM_ATTENTION_SLICED;
            else if (!strcmp(v, "flash")) o.attention = ONNXSTREAM_ATTENTION_FLASH;
            else return die("--attention expects auto, full, sliced or flash");
        } else if (!strcmp(a, "--tile-overlap")) {
            if (!parse_u64(v, &n) || n > 64) return die("--tile-overlap expects 0..64 latent cells");
            o.tile_overlap = (int)n;
        } else if (!strcmp(a, "--models-path")) {
            o.models_path = v;
        } else if (!strcmp(a, "--prompt")) {
            o.prompt = v;
        } else if (!strcmp(a, "--neg-prompt")) {
            o.negative_prompt = v;
        } else if (!strcmp(a, "--output")) {
            o.output = v;
        } else if (!strcmp(a, "--save-latents")) {
            o.save_latents = v;
        } else if (!strcmp(a, "--decode-latents")) {
            o.decode_latents = v;
        } else if (!strcmp(a, "--tile-cache")) {
            o.tile_cache = v;
        } else if (!strcmp(a, "--weights-cache")) {
            o.weights_cache = v;
        } else if (!strcmp(a, "--lora")) {
            if (o.lora_count == SD_MAX_LORAS) return die("--lora: at most 16 LoRAs");
            if (sd_lora_parse(v, &loras[o.lora_count], err, sizeof err) != 0) return die(err);
            o.lora_count++;
        } else if (!strcmp(a, "--tokenizer")) {
            o.tokenizer_path = v;
        } else if (!strcmp(a, "--sampler")) {
            if (sd_sampler_from_name(v, &o.sampler) != 0) {
                fprintf(stderr, "sd: unknown sampler '%s'\n%s", v, usage);
                return 1;
            }
        } else if (!strcmp(a, "--steps")) {
            if (!parse_u64(v, &n) || n < 1 || n > SD_MAX_STEPS) return die("--steps expects 1..1000");
            o.steps = (int)n;
            steps_given = 1;
        } else if (!strcmp(a, "--seed")) {
            if (!parse_u64(v, &n)) return die("--seed expects a non-negative 64-bit integer");
            o.seed = (uint64_t)n;
        } else if (!strcmp(a, "--width") || !strcmp(a, "--height")) {
            if (!parse_u64(v, &n) || n < 8 || n > 2048 || n % 8)
                return die("--width and --height expect a multiple of 8 from 8 to 2048");
            if (!strcmp(a, "--width")) o.width = (int)n;
            else o.height = (int)n;
        } else if (!strcmp(a, "--threads")) {
            if (!parse_u64(v, &n) || n > 1024) return die("--threads expects 0..1024 (0 = one per core)");
            o.threads = (int)n;
        } else if (!strcmp(a, "--cfg")) {
            char *end = NULL;
            o.cfg_scale = strtod(v, &end);
            if (*end || o.cfg_scale < 0 || o.cfg_scale > 100) return die("--cfg expects a number in 0..100");
            cfg_given = 1;
        } else {
            fprintf(stderr, "sd: unknown option %s\n%s", a, usage);
            return 1;
        }
        i += takes_value;
    }
    if (o.model == SD_MODEL_SDXL_TURBO && !steps_given) o.steps = 1;
    if (o.model == SD_MODEL_SDXL && !cfg_given) o.cfg_scale = 5.0; /* SDXL's usual guidance */
    if (o.model == SD_MODEL_SDXL_TURBO && cfg_given) return die("--turbo runs without guidance: drop --cfg");
    if (want_tokens) {
        char path[4096];
        if (o.tokenizer_path) snprintf(path, sizeof path, "%s", o.tokenizer_path);
        else if (o.models_path)
            snprintf(path, sizeof path, "%s/%s", o.models_path, o.model == SD_MODEL_SD15 ? "tokenizer" : "sdxl_tokenizer");
        else return die("--print-tokens needs --tokenizer or --models-path");
        return print_tokens(path, o.prompt);
    }
    if (!o.models_path) {
        fprintf(stderr, "sd: --models-path is required\n%s", usage);
        return 1;
    }
    if (o.lora_count && o.decode_latents) return die("--lora changes the text encoder and the UNet, which --decode-latents does not run");
    if (latents_only) {
        if (!o.save_latents || o.decode_latents) return die("--latents-only needs --save-latents (and no --decode-latents)");
        o.output = NULL;
    }
    double start = sd_progress_now();
    onnxstream_status_t s = sd_pipeline_run(&o, err, sizeof err);
    if (s != ONNXSTREAM_OK) return die(err);
    uint64_t cur = 0, peak = 0;
    sd_memory_usage(&cur, &peak);
    fprintf(stderr, "done in %.1f s, peak RSS %.1f MB%s%s\n", sd_progress_now() - start, peak / 1e6,
            o.output ? ", image " : "", o.output ? o.output : "");
    return 0;
}
