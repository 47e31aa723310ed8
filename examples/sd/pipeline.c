#include "pipeline.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image.h"
#include "conditioning.h"
#include "progress.h"
#include "rng.h"
#include "status.h"
#include "tile_cache.h"
#include "tiles.h"
#include "tokenizer.h"

/* Largest latent handled: (1,4,256,256), a 2048x2048 image. */
#define SD_MAX_LATENT_FLOATS (4 * 256 * 256)

/* Folder names and constants of one model family (see pipeline.h for the layouts). */
typedef struct sd_layout {
    int xl;
    const char *tokenizer;
    const char *text_encoders[2]; /* the second only for SDXL */
    const char *unets[3];         /* tried in order (NULL ends the list early) */
    const char *decoder;          /* prefix of the decoder folders: <decoder>_fp32, _fp16, _qu8 */
    double latent_scale;          /* the VAE decodes latents / latent_scale */
} sd_layout_t;

static const sd_layout_t sd15_layout = {0, "tokenizer", {"text_encoder_fp32", NULL}, {"unet_fp16", "unet_fp32", NULL},
                                        "vae_decoder", 0.18215};
static const sd_layout_t sdxl_layout = {1, "sdxl_tokenizer", {"sdxl_text_encoder_1_fp32", "sdxl_text_encoder_2_fp32"},
                                        {"sdxl_unet_fp16", "sdxl_unet_fp32", NULL}, "sdxl_vae_decoder", 0.13025};
/* Turbo generates at any size in OnnxStream's layout: its "anyshape" UNet comes first. */
static const sd_layout_t turbo_layout = {1, "sdxl_tokenizer",
                                         {"sdxl_text_encoder_1_fp32", "sdxl_text_encoder_2_fp32"},
                                         {"sdxl_unet_anyshape_fp16", "sdxl_unet_fp16", "sdxl_unet_fp32"}, "sdxl_vae_decoder",
                                         0.13025};

static const sd_layout_t *layout_of(const sd_pipeline_options_t *o) {
    return o->model == SD_MODEL_SDXL ? &sdxl_layout : o->model == SD_MODEL_SDXL_TURBO ? &turbo_layout : &sd15_layout;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void join(char *out, size_t size, const char *dir, const char *name) {
    snprintf(out, size, "%s/%s", dir, name);
}

void sd_pipeline_options_init(sd_pipeline_options_t *o) {
    memset(o, 0, sizeof *o);
    o->steps = 20;
    o->cfg_scale = 7.5;
    o->sampler = SD_SAMPLER_EULER_A;
    o->provider = ONNXSTREAM_PROVIDER_AUTO;
    o->memory_mode = ONNXSTREAM_MEMORY_BALANCED;
    o->attention = ONNXSTREAM_ATTENTION_AUTO;
    o->arithmetic = ONNXSTREAM_ARITHMETIC_AUTO;
    o->tiled_decode = SD_TILED_AUTO;
    o->tile_overlap = 8;
}

static int print_op(void *user, const onnxstream_progress_t *p) {
    (void)user;
    fprintf(stderr, "  [%zu/%zu] %s %s %.2f ms\n", p->op_index + 1, p->op_count, p->op_type, p->op_name,
            p->elapsed_us / 1000.0);
    return 0;
}

/* Create a model and load folder `dir` (named `what` in messages). */
static onnxstream_status_t open_model(const sd_pipeline_options_t *o, const char *dir, const char *what,
                                      onnxstream_model_t **out, char *err, size_t err_size) {
    onnxstream_model_options_t mo;
    onnxstream_model_options_init(&mo);
    mo.threads = o->threads;
    mo.provider = o->provider;
    mo.memory_mode = o->memory_mode;
    mo.attention = o->attention;
    mo.arithmetic = o->arithmetic;
    char cache_path[4200];
    if (o->weights_cache) {
        onnxstream_status_t s = sd_prepare_folder(o->weights_cache, "weights cache", err, err_size);
        if (s != ONNXSTREAM_OK) return s;
        const char *base = strrchr(dir, '/');
        base = base && base[1] ? base + 1 : dir;
        if (snprintf(cache_path, sizeof cache_path, "%s/%s.oswc", o->weights_cache, base) >= (int)sizeof cache_path)
            return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "%s: weights cache path too long", what);
        mo.cache_path = cache_path;
    }
    onnxstream_model_t *m = NULL;
    onnxstream_status_t s = onnxstream_model_create(&mo, &m);
    if (s != ONNXSTREAM_OK) return sd_fail(err, err_size, s, "%s: %s", what, onnxstream_last_error());
    if (o->ops_printf) s = onnxstream_model_set_progress_callback(m, print_op, NULL);
    if (s == ONNXSTREAM_OK) s = onnxstream_model_load(m, dir);
    if (s != ONNXSTREAM_OK) {
        sd_fail(err, err_size, s, "%s (%s): %s", what, dir, onnxstream_model_last_error(m));
        onnxstream_model_destroy(m);
        return s;
    }
    *out = m;
    return ONNXSTREAM_OK;
}

/* model.txt spells names with every character outside [A-Za-z0-9] escaped as _XX_ ("input.1" ->
 * "input_2E_1"); the C API reports input names that way. */
static void escape_name(const char *name, char *out, size_t size) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p && o + 5 < size; ++p) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (plain) {
            out[o++] = (char)*p;
        } else {
            out[o++] = '_';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
            out[o++] = '_';
        }
    }
    out[o] = '\0';
}

/* Declared shape of input `name` (first `cap` dims); returns its rank, or -1 when there is no such input. */
static int input_shape(onnxstream_model_t *m, const char *name, int64_t *shape, size_t cap) {
    char escaped[256];
    escape_name(name, escaped, sizeof escaped);
    for (size_t i = 0; i < onnxstream_model_input_count(m); ++i) {
        onnxstream_tensor_view_t v;
        v.struct_size = sizeof v;
        if (onnxstream_model_get_input(m, i, &v) != ONNXSTREAM_OK || strcmp(v.name, escaped) != 0 || v.rank > cap)
            continue;
        memcpy(shape, v.shape, v.rank * sizeof(int64_t));
        return (int)v.rank;
    }
    return -1;
}

static onnxstream_status_t output0(onnxstream_model_t *m, const char *what, size_t expected_floats,
                                   const float **data, char *err, size_t err_size) {
    onnxstream_tensor_view_t v;
    v.struct_size = sizeof v;
    onnxstream_status_t s = onnxstream_model_get_output(m, 0, &v);
    if (s != ONNXSTREAM_OK) return sd_fail(err, err_size, s, "%s: %s", what, onnxstream_model_last_error(m));
    if (v.dtype != ONNXSTREAM_DTYPE_FLOAT32 || v.byte_size != expected_floats * sizeof(float))
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL,
                    "%s: output %s is %s with %zu bytes, expected float32 with %zu", what, v.name,
                    onnxstream_dtype_name(v.dtype), v.byte_size, expected_floats * sizeof(float));
    *data = (const float *)v.data;
    return ONNXSTREAM_OK;
}

typedef struct denoise_ctx {
    onnxstream_model_t *unet;
    const sd_text_encoding_t *cond, *uncond; /* uncond is unused without guidance */
    int xl;                     /* SDXL: also push text_embeds and time_ids */
    float time_ids[12];         /* SDXL's (B,6) size conditioning, one row per batch item */
    int64_t ctx_shape[3];       /* (1, tokens, width) */
    int64_t sample_shape[4];    /* (batch, 4, h, w) as the UNet declares it */
    int batch2;                 /* cond and uncond in one run */
    double cfg;                 /* 1: no guidance, one UNet run per evaluation */
    size_t n;                   /* latent floats of one sample */
    float *sample, *eps, *ctx2, *pooled2; /* work buffers */
    uint64_t weights_read;      /* summed over the UNet's runs */
    unsigned runs;
    char *err;
    size_t err_size;
} denoise_ctx_t;

static onnxstream_status_t push_f32(onnxstream_model_t *m, const char *name, size_t rank, const int64_t *shape,
                                    const float *data) {
    size_t n = 1;
    for (size_t i = 0; i < rank; ++i) n *= (size_t)shape[i];
    return onnxstream_model_push_tensor(m, name, ONNXSTREAM_DTYPE_FLOAT32, rank, shape, data, n * sizeof(float));
}

/* One UNet run on `batch` samples with their contexts (batch * tokens * width floats) and, for SDXL, pooled
 * embeddings (batch * P floats). */
static onnxstream_status_t unet_run(denoise_ctx_t *d, const float *sample, const float *context, const float *pooled,
                                    size_t batch, double timestep, float *eps_out) {
    float t = (float)timestep;
    int64_t tshape[1] = {1};
    int64_t cshape[3] = {(int64_t)batch, d->ctx_shape[1], d->ctx_shape[2]};
    int64_t sshape[4] = {(int64_t)batch, d->sample_shape[1], d->sample_shape[2], d->sample_shape[3]};
    int64_t pshape[2] = {(int64_t)batch, (int64_t)d->cond->pooled_width};
    int64_t ishape[2] = {(int64_t)batch, 6};
    onnxstream_status_t s = push_f32(d->unet, "sample", 4, sshape, sample);
    if (s == ONNXSTREAM_OK) s = push_f32(d->unet, "timestep", 1, tshape, &t);
    if (s == ONNXSTREAM_OK) s = push_f32(d->unet, "encoder_hidden_states", 3, cshape, context);
    if (s == ONNXSTREAM_OK && d->xl) s = push_f32(d->unet, "text_embeds", 2, pshape, pooled);
    if (s == ONNXSTREAM_OK && d->xl) s = push_f32(d->unet, "time_ids", 2, ishape, d->time_ids);
    if (s == ONNXSTREAM_OK) s = sd_run(d->unet, &d->weights_read);
    if (s == ONNXSTREAM_OK) ++d->runs;
    if (s != ONNXSTREAM_OK) return sd_fail(d->err, d->err_size, s, "unet: %s", onnxstream_model_last_error(d->unet));
    const float *out = NULL;
    s = output0(d->unet, "unet", batch * d->n, &out, d->err, d->err_size);
    if (s == ONNXSTREAM_OK) memcpy(eps_out, out, batch * d->n * sizeof(float));
    return s;
}

/* The sampler's model call: eps from the UNet with guidance, turned into the denoised prediction. */
static int denoise(void *user, const float *x, double sigma, double timestep, float *out_denoised) {
    denoise_ctx_t *d = (denoise_ctx_t *)user;
    const size_t n = d->n;
    const float c_in = (float)sd_c_in(sigma);
    const size_t cn = (size_t)(d->ctx_shape[1] * d->ctx_shape[2]);
    const int guided = d->cfg != 1.0;
    onnxstream_status_t s;
    float *eps_c = d->eps, *eps_u = d->eps + n;
    if (d->batch2) {
        /* Batch 0 = uncond, batch 1 = cond: the weights stream once for both. */
        size_t pw = d->cond->pooled_width;
        for (size_t i = 0; i < n; ++i) d->sample[i] = d->sample[n + i] = x[i] * c_in;
        memcpy(d->ctx2, d->uncond->hidden, cn * sizeof(float));
        memcpy(d->ctx2 + cn, d->cond->hidden, cn * sizeof(float));
        if (d->xl) {
            memcpy(d->pooled2, d->uncond->pooled, pw * sizeof(float));
            memcpy(d->pooled2 + pw, d->cond->pooled, pw * sizeof(float));
        }
        s = unet_run(d, d->sample, d->ctx2, d->pooled2, 2, timestep, d->eps);
        eps_u = d->eps;
        eps_c = d->eps + n;
    } else {
        for (size_t i = 0; i < n; ++i) d->sample[i] = x[i] * c_in;
        s = unet_run(d, d->sample, d->cond->hidden, d->cond->pooled, 1, timestep, eps_c);
        if (s == ONNXSTREAM_OK && guided)
            s = unet_run(d, d->sample, d->uncond->hidden, d->uncond->pooled, 1, timestep, eps_u);
    }
    if (s != ONNXSTREAM_OK) return (int)s;
    if (guided)
        for (size_t i = 0; i < n; ++i) eps_c[i] = eps_u[i] + (float)d->cfg * (eps_c[i] - eps_u[i]);
    sd_eps_to_denoised(x, eps_c, sigma, out_denoised, n);
    return 0;
}

/* Runs one text encoder folder over both prompts; the model is destroyed before returning. */
static onnxstream_status_t run_text_encoder(const sd_pipeline_options_t *o, const sd_tokenizer_t *tok,
                                            const char *folder, sd_lora_target target,
                                            const sd_text_encoder_spec_t *spec, int with_negative,
                                            sd_text_encoding_t *cond, sd_text_encoding_t *uncond,
                                            size_t *lora_taken, char *err, size_t err_size) {
    char path[4096];
    join(path, sizeof path, o->models_path, folder);
    onnxstream_model_t *te = NULL;
    double start = sd_progress_now();
    onnxstream_status_t s = open_model(o, path, "text encoder", &te, err, err_size);
    if (s == ONNXSTREAM_OK)
        s = sd_lora_apply(te, target, o->model != SD_MODEL_SD15, o->loras, o->lora_count, lora_taken, o->quiet, err,
                          err_size);
    if (s == ONNXSTREAM_OK)
        s = sd_encode_prompts(te, tok, spec, o->prompt, o->negative_prompt, with_negative, cond, uncond, err,
                              err_size);
    onnxstream_model_destroy(te); /* only one model's working set at a time */
    if (s == ONNXSTREAM_OK && !o->quiet)
        fprintf(stderr, "text encoder: %s, %zu chunk(s) x %d prompt(s) in %.1f s, %.1f MB of weights read\n", folder,
                cond->chunks, with_negative ? 2 : 1, sd_progress_now() - start,
                (double)(cond->weights_read + uncond->weights_read) / 1e6);
    return s;
}

/*
 * Prompt embeddings. SD 1.5: one encoder, cond and uncond. SDXL: both encoders, their hidden states
 * concatenated and the second one's pooled embedding; without a negative prompt the unconditional
 * embeddings are zeros (SDXL's force_zeros_for_empty_prompt), and SDXL Turbo has no unconditional run.
 */
static onnxstream_status_t encode_text(const sd_pipeline_options_t *o, const sd_layout_t *layout,
                                       sd_text_encoding_t *cond, sd_text_encoding_t *uncond, size_t *lora_taken,
                                       char *err, size_t err_size) {
    char tok_path[4096];
    snprintf(tok_path, sizeof tok_path, "%s", o->tokenizer_path ? o->tokenizer_path : "");
    if (!o->tokenizer_path) join(tok_path, sizeof tok_path, o->models_path, layout->tokenizer);
    char terr[512];
    sd_tokenizer_t *tok = sd_tokenizer_create(tok_path, terr, sizeof terr);
    if (!tok) return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "tokenizer: %s", terr);
    onnxstream_status_t s;
    if (!layout->xl) {
        sd_text_encoder_spec_t spec = {"onnx::Reshape_0", SD_TOKEN_PAD, 0};
        s = run_text_encoder(o, tok, layout->text_encoders[0], SD_LORA_TEXT_ENCODER, &spec, 1, cond, uncond,
                             lora_taken, err, err_size);
    } else {
        int encode_negative = o->model == SD_MODEL_SDXL && o->negative_prompt != NULL;
        sd_text_encoder_spec_t spec1 = {"input_ids", SD_TOKEN_PAD, 0}, spec2 = {"input_ids", 0, 1};
        sd_text_encoding_t c1, u1, c2, u2;
        memset(&c1, 0, sizeof c1);
        memset(&u1, 0, sizeof u1);
        s = run_text_encoder(o, tok, layout->text_encoders[0], SD_LORA_TEXT_ENCODER, &spec1, encode_negative, &c1,
                             &u1, lora_taken, err, err_size);
        if (s == ONNXSTREAM_OK)
            s = run_text_encoder(o, tok, layout->text_encoders[1], SD_LORA_TEXT_ENCODER_2, &spec2, encode_negative,
                                 &c2, &u2, lora_taken, err, err_size);
        if (s != ONNXSTREAM_OK) {
            sd_text_encoding_free(&c1);
            sd_text_encoding_free(&u1);
        }
        if (s == ONNXSTREAM_OK) s = sd_text_encoding_concat(&c1, &c2, cond, err, err_size);
        if (s == ONNXSTREAM_OK && encode_negative) s = sd_text_encoding_concat(&u1, &u2, uncond, err, err_size);
        else if (s == ONNXSTREAM_OK && o->model == SD_MODEL_SDXL && sd_text_encoding_zeros(cond, uncond) != 0)
            s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for prompt embeddings");
        if (!encode_negative) {
            sd_text_encoding_free(&u1);
            sd_text_encoding_free(&u2);
        }
        if (s != ONNXSTREAM_OK) sd_text_encoding_free(cond);
    }
    sd_tokenizer_destroy(tok);
    return s;
}

/* Checks the UNet's declared inputs against the embeddings and fills d's shapes. */
/*
 * The latent size (sample dims 2 and 3) from --width/--height: a UNet converted with --resizable declares
 * them '?' (-1) and takes any size (512x512 unless asked; the engine says which sizes the model divides);
 * any other UNet runs at its own size only.
 */
static onnxstream_status_t image_size(const sd_pipeline_options_t *o, const char *path, int64_t sample[4], char *err,
                                      size_t err_size) {
    const int resizable = sample[2] < 0 || sample[3] < 0;
    if ((o->width % 8) || (o->height % 8))
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "--width and --height must be multiples of 8 "
                       "(of 64 for SD 1.5's UNet), not %dx%d", o->width, o->height);
    if (resizable) {
        sample[3] = o->width ? o->width / 8 : 64;
        sample[2] = o->height ? o->height / 8 : 64;
    } else if ((o->width && o->width != sample[3] * 8) || (o->height && o->height != sample[2] * 8)) {
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT,
                       "unet (%s) was converted for %lldx%lld images only; for %dx%d convert it with --resizable "
                       "(examples/sd/make_models.py --resizable, or onnxstream-sd-import)", path,
                       (long long)sample[3] * 8, (long long)sample[2] * 8, o->width ? o->width : (int)sample[3] * 8,
                       o->height ? o->height : (int)sample[2] * 8);
    }
    return ONNXSTREAM_OK;
}

static onnxstream_status_t check_unet(const sd_pipeline_options_t *o, onnxstream_model_t *unet, const char *path,
                                      const sd_text_encoding_t *cond, int xl, denoise_ctx_t *d, char *err,
                                      size_t err_size) {
    int64_t ctx_decl[8], tshape[8], pshape[8], ishape[8];
    int r1 = input_shape(unet, "sample", d->sample_shape, 4);
    int r2 = input_shape(unet, "encoder_hidden_states", ctx_decl, 8);
    if (r1 != 4 || r2 != 3 || input_shape(unet, "timestep", tshape, 8) < 0)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL,
                       "unet (%s): expected inputs sample (B,4,h,w), timestep and encoder_hidden_states (B,T,W)", path);
    if (xl && (input_shape(unet, "text_embeds", pshape, 8) != 2 || input_shape(unet, "time_ids", ishape, 8) != 2 ||
               (size_t)pshape[1] != cond->pooled_width || ishape[1] != 6))
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL,
                       "unet (%s): an SDXL unet takes text_embeds (B,%zu) and time_ids (B,6) as inputs", path,
                       cond->pooled_width);
    size_t tokens = cond->chunks * SD_TOKENIZER_CONTEXT;
    if ((size_t)ctx_decl[1] != tokens || (size_t)ctx_decl[2] != cond->width)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT,
                       "the prompts need encoder_hidden_states (1,%zu,%zu) (%zu chunk(s) of 75 tokens) but the unet "
                       "takes (%lld,%lld,%lld); shorten the prompt or convert the unet with "
                       "--input-shape encoder_hidden_states=1,%zu,%zu",
                       tokens, cond->width, cond->chunks, (long long)ctx_decl[0], (long long)ctx_decl[1],
                       (long long)ctx_decl[2], tokens, cond->width);
    d->ctx_shape[0] = 1;
    d->ctx_shape[1] = ctx_decl[1];
    d->ctx_shape[2] = ctx_decl[2];
    onnxstream_status_t s = image_size(o, path, d->sample_shape, err, err_size);
    if (s != ONNXSTREAM_OK) return s;
    d->n = (size_t)(d->sample_shape[1] * d->sample_shape[2] * d->sample_shape[3]);
    if (d->n > SD_MAX_LATENT_FLOATS || d->sample_shape[0] < 1 || d->sample_shape[0] > 2)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_UNSUPPORTED, "unet sample input (%lld,%lld,%lld,%lld) is not "
                       "supported (batch 1 or 2, at most 4x256x256)", (long long)d->sample_shape[0],
                       (long long)d->sample_shape[1], (long long)d->sample_shape[2], (long long)d->sample_shape[3]);
    return ONNXSTREAM_OK;
}

static onnxstream_status_t diffuse(const sd_pipeline_options_t *o, float *latent, int64_t lat_shape[4], char *err,
                                   size_t err_size) {
    const sd_layout_t *layout = layout_of(o);
    sd_text_encoding_t cond, uncond;
    memset(&cond, 0, sizeof cond);
    memset(&uncond, 0, sizeof uncond);
    size_t lora_taken[SD_MAX_LORAS] = {0};
    onnxstream_status_t s = encode_text(o, layout, &cond, &uncond, lora_taken, err, err_size);

    char path[4096];
    onnxstream_model_t *unet = NULL;
    if (s == ONNXSTREAM_OK) {
        /* The first folder that exists; the first name for the error message when none does. */
        join(path, sizeof path, o->models_path, layout->unets[0]);
        for (int i = 0; i < 3 && layout->unets[i]; ++i) {
            char candidate[4096];
            join(candidate, sizeof candidate, o->models_path, layout->unets[i]);
            if (is_dir(candidate)) {
                memcpy(path, candidate, sizeof path);
                break;
            }
        }
        s = open_model(o, path, "unet", &unet, err, err_size);
    }
    if (s == ONNXSTREAM_OK)
        s = sd_lora_apply(unet, SD_LORA_UNET, layout->xl, o->loras, o->lora_count, lora_taken, o->quiet, err, err_size);
    if (s == ONNXSTREAM_OK) s = sd_lora_check_used(o->loras, o->lora_count, lora_taken, layout->xl, err, err_size);
    denoise_ctx_t d;
    memset(&d, 0, sizeof d);
    if (s == ONNXSTREAM_OK) s = check_unet(o, unet, path, &cond, layout->xl, &d, err, err_size);
    if (s == ONNXSTREAM_OK) {
        d.unet = unet;
        d.cond = &cond;
        d.uncond = &uncond;
        d.xl = layout->xl;
        d.batch2 = d.sample_shape[0] == 2;
        d.cfg = o->model == SD_MODEL_SDXL_TURBO ? 1.0 : o->cfg_scale;
        if (d.cfg == 1.0 && d.batch2)
            s = sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "unet (%s) takes a batch of 2 (cond + uncond) "
                        "but this run has no guidance; use a batch-1 unet", path);
        sd_xl_time_ids((int)d.sample_shape[2] * 8, (int)d.sample_shape[3] * 8, d.time_ids);
        memcpy(d.time_ids + 6, d.time_ids, 6 * sizeof(float));
    }
    if (s == ONNXSTREAM_OK) {
        d.sample = malloc(2 * d.n * sizeof(float));
        d.eps = malloc(2 * d.n * sizeof(float));
        d.ctx2 = malloc(2 * (size_t)(d.ctx_shape[1] * d.ctx_shape[2]) * sizeof(float));
        d.pooled2 = malloc((2 * cond.pooled_width + 1) * sizeof(float));
        d.err = err;
        d.err_size = err_size;
        if (!d.sample || !d.eps || !d.ctx2 || !d.pooled2)
            s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for the diffusion buffers");
    }
    sd_noise_schedule ns;
    sd_schedule sch;
    sd_sampler smp;
    memset(&smp, 0, sizeof smp);
    if (s == ONNXSTREAM_OK) {
        /* SDXL keeps SD 1.5's noise schedule; Turbo was distilled on diffusers' "trailing" timesteps. */
        sd_noise_schedule_sd15(&ns);
        sd_spacing spacing = o->model == SD_MODEL_SDXL_TURBO ? SD_SPACING_TRAILING : SD_SPACING_DEFAULT;
        if (sd_schedule_build(&sch, &ns, o->sampler, spacing, o->steps) != 0)
            s = sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "--steps %d is not valid for sampler %s%s",
                        o->steps, sd_sampler_name(o->sampler),
                        o->model == SD_MODEL_SDXL_TURBO ? " with SDXL Turbo's trailing timesteps" : "");
        else if (sd_sampler_init(&smp, o->sampler, d.n) != 0)
            s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for the sampler");
    }
    if (s == ONNXSTREAM_OK) {
        sd_rng_t rng;
        sd_rng_seed(&rng, o->seed);
        sd_rng_fill_normal(&rng, latent, d.n);
        float scale = (float)sd_schedule_init_noise_scale(&sch);
        for (size_t i = 0; i < d.n; ++i) latent[i] *= scale;
        sd_noise_source noise = {sd_rng_noise, &rng};
        sd_progress_t progress;
        if (!o->quiet) sd_progress_start(&progress, stderr, sch.steps);
        for (int i = 0; i < sch.steps && s == ONNXSTREAM_OK; ++i) {
            int rc = sd_sampler_step(&smp, &sch, i, latent, denoise, &d, &noise);
            if (rc > 0) s = (onnxstream_status_t)rc; /* denoise's status; its message is in err */
            else if (rc < 0) s = sd_fail(err, err_size, ONNXSTREAM_ERR_INTERNAL, "sampler step %d failed (%d)", i, rc);
            else if (!o->quiet) sd_progress_update(&progress, i + 1);
        }
        if (!o->quiet) sd_progress_finish(&progress, sch.steps, "unet");
        if (!o->quiet && d.runs)
            fprintf(stderr, "unet: %u run(s), %.1f MB of weights read (%.1f MB per run)\n", d.runs,
                    (double)d.weights_read / 1e6, (double)d.weights_read / 1e6 / d.runs);
        if (s == ONNXSTREAM_OK) sd_schedule_finish(&sch, latent, d.n);
        memcpy(lat_shape, d.sample_shape, sizeof d.sample_shape);
        lat_shape[0] = 1;
    }
    sd_sampler_free(&smp);
    free(d.sample);
    free(d.eps);
    free(d.ctx2);
    free(d.pooled2);
    sd_text_encoding_free(&cond);
    sd_text_encoding_free(&uncond);
    onnxstream_model_destroy(unet);
    return s;
}

/*
 * The decoder folder (<decoder> is vae_decoder, or sdxl_vae_decoder for SDXL): <decoder>_fp16/ or
 * <decoder>_qu8/ when asked for (calibration needs the W8A8 one), <decoder>_qu8/ in memory mode MIN when
 * it exists (a quarter of the weight bytes to read), else <decoder>_fp32/, or <decoder>_fp16/ when there
 * is no fp32 one.
 */
static void decoder_dir(const sd_pipeline_options_t *o, char *path, size_t size) {
    const char *prefix = layout_of(o)->decoder;
    if (o->decoder_fp16) {
        snprintf(path, size, "%s/%s_fp16", o->models_path, prefix);
        return;
    }
    snprintf(path, size, "%s/%s_qu8", o->models_path, prefix);
    if (o->decoder_qu8 || o->decoder_calibrate || (o->memory_mode == ONNXSTREAM_MEMORY_MIN && is_dir(path))) return;
    snprintf(path, size, "%s/%s_fp32", o->models_path, prefix);
    if (!is_dir(path)) snprintf(path, size, "%s/%s_fp16", o->models_path, prefix);
}

/* Runs the decoder on one (1,C,h,w) latent (already divided by the latent scale); on success *out views
 * the (1,3,H,W) float32 output, valid until the model's next run. */
static onnxstream_status_t vae_run(onnxstream_model_t *vae, const float *z, const int64_t shape[4],
                                   onnxstream_tensor_view_t *out, uint64_t *weights_read, char *err,
                                   size_t err_size) {
    size_t n = (size_t)(shape[1] * shape[2] * shape[3]);
    onnxstream_status_t s =
        onnxstream_model_push_tensor(vae, "input.1", ONNXSTREAM_DTYPE_FLOAT32, 4, shape, z, n * sizeof(float));
    if (s == ONNXSTREAM_OK) s = sd_run(vae, weights_read);
    if (s == ONNXSTREAM_OK) {
        out->struct_size = sizeof *out;
        s = onnxstream_model_get_output(vae, 0, out);
    }
    if (s != ONNXSTREAM_OK) return sd_fail(err, err_size, s, "vae decoder: %s", onnxstream_model_last_error(vae));
    if (out->dtype != ONNXSTREAM_DTYPE_FLOAT32 || out->rank != 4 || out->shape[1] != 3)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL, "vae decoder: output must be float32 (1,3,H,W)");
    return ONNXSTREAM_OK;
}

/*
 * Tiled decoding: overlapping (th x tw) latent tiles through the tile decoder, blended into *image
 * (malloc'd 3 x H x W floats, H and W from the decoder's upscale factor). With o->tile_cache, each decoded
 * tile is kept in that folder and a tile already there (same latent values, same decoder) is read back
 * instead of decoded: a stopped decode resumes.
 */
static onnxstream_status_t decode_tiles(const sd_pipeline_options_t *o, onnxstream_model_t *vae,
                                        const char *decoder_path, const float *latent, const int64_t lat[4],
                                        const int64_t tile[4], float **image, int *img_w, int *img_h,
                                        uint64_t *weights_read, char *err, size_t err_size) {
    const int lh = (int)lat[2], lw = (int)lat[3], th = (int)tile[2], tw = (int)tile[3], c = (int)lat[1];
    /* At most a quarter of the tile: more would multiply the tiles (stride = tile - overlap). */
    int overlap_y = o->tile_overlap < th / 4 ? o->tile_overlap : th / 4;
    int overlap_x = o->tile_overlap < tw / 4 ? o->tile_overlap : tw / 4;
    int ys[SD_TILES_MAX_PER_AXIS], xs[SD_TILES_MAX_PER_AXIS];
    int ny = sd_tiles_axis(lh, th, overlap_y, ys, SD_TILES_MAX_PER_AXIS);
    int nx = sd_tiles_axis(lw, tw, overlap_x, xs, SD_TILES_MAX_PER_AXIS);
    if (ny < 0 || nx < 0 || th > lh || tw > lw)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT,
                    "cannot cut a %dx%d latent into %dx%d tiles overlapping by %d", lh, lw, th, tw, o->tile_overlap);
    onnxstream_status_t s = o->tile_cache ? sd_prepare_folder(o->tile_cache, "tile cache", err, err_size) : ONNXSTREAM_OK;
    if (s != ONNXSTREAM_OK) return s;
    float *z = malloc((size_t)c * th * tw * sizeof(float));
    float *acc = NULL, *wsum = NULL;
    int scale = 0, H = 0, W = 0, reused = 0;
    if (!z) s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory");
    sd_progress_t progress;
    if (s == ONNXSTREAM_OK && !o->quiet) sd_progress_start(&progress, stderr, ny * nx);
    for (int ty = 0; ty < ny && s == ONNXSTREAM_OK; ++ty) {
        for (int tx = 0; tx < nx && s == ONNXSTREAM_OK; ++tx) {
            for (int ch = 0; ch < c; ++ch)
                for (int y = 0; y < th; ++y)
                    for (int x = 0; x < tw; ++x)
                        z[((size_t)ch * th + y) * tw + x] =
                            (float)(latent[((size_t)ch * lh + ys[ty] + y) * lw + xs[tx] + x] / layout_of(o)->latent_scale);
            char cached_path[4200];
            float *cached = NULL;
            int oh = 0, ow = 0;
            if (o->tile_cache) {
                uint64_t key = sd_tile_key(z, (size_t)c * th * tw, decoder_path);
                if (sd_tile_cache_path(cached_path, sizeof cached_path, o->tile_cache, ty, tx, key) != 0) {
                    s = sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "tile cache path too long: %s",
                             o->tile_cache);
                    break;
                }
                cached = sd_tile_cache_load(cached_path, 3, &oh, &ow);
            }
            const float *decoded = cached;
            if (cached) {
                reused++;
            } else {
                onnxstream_tensor_view_t v;
                int64_t shape[4] = {1, c, th, tw};
                s = vae_run(vae, z, shape, &v, weights_read, err, err_size);
                if (s != ONNXSTREAM_OK) break;
                decoded = (const float *)v.data;
                oh = (int)v.shape[2];
                ow = (int)v.shape[3];
                if (o->tile_cache) s = sd_tile_cache_store(cached_path, decoded, 3, oh, ow, err, err_size);
            }
            if (s == ONNXSTREAM_OK && !acc) { /* the first tile tells the upscale factor */
                scale = oh / th;
                H = lh * scale;
                W = lw * scale;
                acc = scale >= 1 ? calloc((size_t)3 * H * W, sizeof(float)) : NULL;
                wsum = scale >= 1 ? calloc((size_t)H * W, sizeof(float)) : NULL;
                if (scale >= 1 && (!acc || !wsum))
                    s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for the image");
            }
            if (s == ONNXSTREAM_OK && (scale < 1 || oh != th * scale || ow != tw * scale))
                s = sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL, "vae decoder: a %dx%d tile decodes to %dx%d, "
                         "not %dx%d like the first tile", th, tw, oh, ow, th * scale, tw * scale);
            if (s == ONNXSTREAM_OK) {
                int up = ty > 0 ? sd_tiles_overlap_after(ys, ny, th, ty - 1) : 0;
                int left = tx > 0 ? sd_tiles_overlap_after(xs, nx, tw, tx - 1) : 0;
                sd_tile_accumulate(acc, wsum, 3, H, W, decoded, th * scale, tw * scale, ys[ty] * scale,
                                   xs[tx] * scale, up * scale, sd_tiles_overlap_after(ys, ny, th, ty) * scale,
                                   left * scale, sd_tiles_overlap_after(xs, nx, tw, tx) * scale);
            }
            free(cached);
            if (s == ONNXSTREAM_OK && !o->quiet) sd_progress_update(&progress, ty * nx + tx + 1);
        }
    }
    if (!o->quiet && z) sd_progress_finish(&progress, ny * nx, "vae tiles");
    if (!o->quiet && reused)
        fprintf(stderr, "vae tiles: %d of %d read from the tile cache %s\n", reused, ny * nx, o->tile_cache);
    if (s == ONNXSTREAM_OK) sd_tile_finish(acc, wsum, 3, H, W);
    free(z);
    free(wsum);
    if (s != ONNXSTREAM_OK) {
        free(acc);
        return s;
    }
    *image = acc;
    *img_w = W;
    *img_h = H;
    return s;
}

/*
 * The tile decoder folder: <decoder>_l32/ (OnnxStream's name) or <decoder>_l16/; memory mode MIN prefers
 * the smaller tiles (a quarter of the working set), the others the larger ones (fewer seams). Returns 0
 * and the _l32 path (for the error message) when neither exists.
 */
static int tile_decoder_dir(const sd_pipeline_options_t *o, const char *base, char *path, size_t size) {
    const char *order[2] = {"_l32", "_l16"};
    if (o->memory_mode == ONNXSTREAM_MEMORY_MIN) {
        order[0] = "_l16";
        order[1] = "_l32";
    }
    for (int i = 0; i < 2; ++i) {
        snprintf(path, size, "%s%s", base, order[i]);
        if (is_dir(path)) return 1;
    }
    /* OnnxStream's SDXL name: sdxl_vae_decoder_32x32_fp16 for sdxl_vae_decoder_fp16. */
    const char *suffix = strrchr(base, '_');
    if (suffix && layout_of(o)->xl) {
        snprintf(path, size, "%.*s_32x32%s", (int)(suffix - base), base, suffix);
        if (is_dir(path)) return 1;
    }
    snprintf(path, size, "%s_l32", base);
    return 0;
}

/* Opens the decoder (a tile decoder when tiling) and reports whether it decodes tiles. */
static onnxstream_status_t open_decoder(const sd_pipeline_options_t *o, onnxstream_model_t **vae, int *tiled,
                                        char *path, size_t path_size, char *err, size_t err_size) {
    char base[4000];
    decoder_dir(o, base, sizeof base);
    int have_tiles = tile_decoder_dir(o, base, path, path_size);
    *tiled = o->tiled_decode == SD_TILED_ALWAYS ||
             (o->tiled_decode == SD_TILED_AUTO && o->memory_mode == ONNXSTREAM_MEMORY_MIN && have_tiles);
    if (*tiled && !have_tiles)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "tiled decoding needs the tile decoder folder %s or %s_l16 "
                    "(the decoder converted with --input-shape input.1=1,4,32,32 or 1,4,16,16)", path, base);
    if (!*tiled) snprintf(path, path_size, "%s", base);
    return open_model(o, path, *tiled ? "vae tile decoder" : "vae decoder", vae, err, err_size);
}

static onnxstream_status_t decode(const sd_pipeline_options_t *o, const float *latent, int64_t lat_shape[4],
                                  char *err, size_t err_size) {
    char path[4096];
    int tiled = 0;
    double start = sd_progress_now();
    uint64_t weights_read = 0;
    onnxstream_model_t *vae = NULL;
    onnxstream_status_t s = open_decoder(o, &vae, &tiled, path, sizeof path, err, err_size);
    if (s != ONNXSTREAM_OK) return s;
    if (o->tile_cache && (!tiled || o->decoder_calibrate)) {
        onnxstream_model_destroy(vae);
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "--tile-cache needs tiled decoding%s",
                    tiled ? ", and calibration must decode every tile" : " (--tiled-decode or --rpi-lowmem)");
    }
    if (o->decoder_calibrate && (s = onnxstream_model_set_calibrate(vae, 1)) != ONNXSTREAM_OK) {
        sd_fail(err, err_size, s, "vae decoder (%s): %s", path, onnxstream_model_last_error(vae));
        onnxstream_model_destroy(vae);
        return s;
    }
    int64_t decl[8];
    int rank = input_shape(vae, "input.1", decl, 8);
    /* A decoder converted with --resizable ('?' sizes) decodes the whole latent, or tiles of up to 32x32. */
    for (int k = 2; rank == 4 && k < 4; ++k)
        if (decl[k] < 0) decl[k] = tiled ? (lat_shape[k] < 32 ? lat_shape[k] : 32) : lat_shape[k];
    int fits = rank == 4 && decl[1] == lat_shape[1] &&
               (tiled ? decl[2] <= lat_shape[2] && decl[3] <= lat_shape[3]
                      : decl[2] == lat_shape[2] && decl[3] == lat_shape[3]);
    if (!fits) {
        onnxstream_model_destroy(vae);
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL,
                    "vae decoder (%s): expected input input.1 of shape (1,%lld,%lld,%lld)%s", path,
                    (long long)lat_shape[1], (long long)lat_shape[2], (long long)lat_shape[3],
                    tiled ? " or a smaller tile" : "");
    }
    float *image = NULL;
    int w = 0, h = 0;
    if (tiled) {
        s = decode_tiles(o, vae, path, latent, lat_shape, decl, &image, &w, &h, &weights_read, err, err_size);
    } else {
        size_t n = (size_t)(lat_shape[1] * lat_shape[2] * lat_shape[3]);
        float *z = malloc(n * sizeof(float));
        if (!z) s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; z && i < n; ++i) z[i] = (float)(latent[i] / layout_of(o)->latent_scale);
        onnxstream_tensor_view_t v;
        int64_t shape[4] = {1, lat_shape[1], lat_shape[2], lat_shape[3]};
        if (s == ONNXSTREAM_OK) s = vae_run(vae, z, shape, &v, &weights_read, err, err_size);
        free(z);
        if (s == ONNXSTREAM_OK) {
            w = (int)v.shape[3];
            h = (int)v.shape[2];
            image = malloc((size_t)3 * w * h * sizeof(float));
            if (!image) s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for the image");
            else memcpy(image, v.data, (size_t)3 * w * h * sizeof(float));
        }
    }
    if (s == ONNXSTREAM_OK && o->decoder_calibrate) {
        /* The ranges recorded over this decode (every tile) become the folder's range_data.txt. */
        char ranges[4200];
        join(ranges, sizeof ranges, path, "range_data.txt");
        s = onnxstream_model_write_range_data(vae, ranges);
        if (s != ONNXSTREAM_OK) sd_fail(err, err_size, s, "vae decoder calibration: %s", onnxstream_model_last_error(vae));
        else if (!o->quiet) fprintf(stderr, "vae decoder calibrated: wrote %s\n", ranges);
    }
    onnxstream_model_destroy(vae);
    if (s == ONNXSTREAM_OK && !o->quiet)
        fprintf(stderr, "vae decoder%s (%s): %.1f s, %.1f MB of weights read\n", tiled ? " (tiled)" : "", path,
                sd_progress_now() - start, (double)weights_read / 1e6);
    if (s == ONNXSTREAM_OK && o->output) {
        uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
        if (!rgb) {
            s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for the image");
        } else {
            sd_image_from_nchw(image, w, h, rgb);
            sd_image_params_t p = {o->prompt, o->negative_prompt, o->steps, sd_sampler_name(o->sampler),
                                   o->model == SD_MODEL_SDXL_TURBO ? 1.0 : o->cfg_scale, o->seed, w, h, NULL};
            char *text = sd_image_format_parameters(&p);
            s = sd_png_write(o->output, rgb, w, h, text, err, err_size);
            free(text);
            free(rgb);
        }
    }
    free(image);
    return s;
}

/*
 * Latent shape for --decode-latents: the full decoder's declared input when that folder exists, else a
 * square 4-channel latent matching the file's size (the tile decoder alone does not say the image size).
 */
static onnxstream_status_t decode_latent_shape(const sd_pipeline_options_t *o, int64_t lat_shape[4], char *err,
                                               size_t err_size) {
    char path[4096];
    decoder_dir(o, path, sizeof path);
    if (is_dir(path)) {
        onnxstream_model_t *vae = NULL;
        onnxstream_status_t s = open_model(o, path, "vae decoder", &vae, err, err_size);
        if (s == ONNXSTREAM_OK && input_shape(vae, "input.1", lat_shape, 4) != 4)
            s = sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL, "vae decoder (%s) has no input input.1", path);
        onnxstream_model_destroy(vae);
        if (s != ONNXSTREAM_OK || (lat_shape[2] > 0 && lat_shape[3] > 0)) return s;
        /* A resizable decoder: the size comes from --width/--height or from a square file. */
    }
    struct stat st;
    if (stat(o->decode_latents, &st) != 0)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "cannot read latents file %s", o->decode_latents);
    if (o->width && o->height) {
        lat_shape[0] = 1;
        lat_shape[1] = 4;
        lat_shape[2] = o->height / 8;
        lat_shape[3] = o->width / 8;
        if ((off_t)(4 * lat_shape[2] * lat_shape[3] * (long)sizeof(float)) != st.st_size)
            return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "latents file %s (%lld bytes) is not a "
                           "%dx%d image's (1,4,%d,%d) float32 latent", o->decode_latents, (long long)st.st_size,
                           o->width, o->height, o->height / 8, o->width / 8);
        return ONNXSTREAM_OK;
    }
    long side = lround(sqrt((double)st.st_size / (4.0 * sizeof(float))));
    if (side < 1 || (off_t)(side * side * 4 * (long)sizeof(float)) != st.st_size) {
        if (is_dir(path))
            return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "latents file %s (%lld bytes) is not a "
                           "square (1,4,h,h) float32 latent; give the image's --width and --height (the decoder %s "
                           "takes any size)", o->decode_latents, (long long)st.st_size, path);
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "latents file %s (%lld bytes) is not a square "
                    "(1,4,h,h) float32 latent; give the full decoder folder %s so its size is known",
                    o->decode_latents, (long long)st.st_size, path);
    }
    lat_shape[0] = 1;
    lat_shape[1] = 4;
    lat_shape[2] = lat_shape[3] = side;
    return ONNXSTREAM_OK;
}

onnxstream_status_t sd_pipeline_run(const sd_pipeline_options_t *o, char *err, size_t err_size) {
    if (!o || !o->models_path)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "no models path given");
    const sd_layout_t *layout = layout_of(o);
    if (!is_dir(o->models_path))
        return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "models folder %s not found (expected %s/,%s%s %s/, "
                       "%s_fp32/ or %s_fp16/, %s/)", o->models_path, layout->text_encoders[0],
                       layout->xl ? " " : "", layout->xl ? layout->text_encoders[1] : "", layout->unets[0],
                       layout->decoder, layout->decoder, layout->tokenizer);
    if (o->model == SD_MODEL_SDXL_TURBO && o->negative_prompt)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT,
                       "SDXL Turbo takes no negative prompt (it runs without classifier-free guidance)");
    size_t cap = SD_MAX_LATENT_FLOATS;
    float *latent = malloc(cap * sizeof(float));
    if (!latent) return sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory");
    int64_t lat_shape[4] = {0, 0, 0, 0};
    onnxstream_status_t s = ONNXSTREAM_OK;
    if (o->decode_latents) {
        s = decode_latent_shape(o, lat_shape, err, err_size);
        size_t n = (size_t)(lat_shape[1] * lat_shape[2] * lat_shape[3]);
        if (s == ONNXSTREAM_OK && n > cap)
            s = sd_fail(err, err_size, ONNXSTREAM_ERR_UNSUPPORTED, "latents larger than (1,4,256,256)");
        if (s == ONNXSTREAM_OK) s = sd_latents_load(o->decode_latents, latent, n, err, err_size);
    } else {
        s = diffuse(o, latent, lat_shape, err, err_size);
        if (s == ONNXSTREAM_OK && o->save_latents)
            s = sd_latents_save(o->save_latents, latent, (size_t)(lat_shape[1] * lat_shape[2] * lat_shape[3]), err,
                                err_size);
    }
    if (s == ONNXSTREAM_OK && o->output) s = decode(o, latent, lat_shape, err, err_size);
    free(latent);
    return s;
}
