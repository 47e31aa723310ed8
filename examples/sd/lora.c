#include "lora.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"

int sd_lora_parse(const char *arg, sd_lora_t *out, char *err, size_t err_size)
{
    const char *colon = strrchr(arg, ':');
    size_t path_len = strlen(arg);
    out->scale = 1.0f;
    if (colon && colon[1]) {
        char *end = NULL;
        double v = strtod(colon + 1, &end);
        if (end && *end == '\0') {
            if (!isfinite(v)) {
                sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "--lora %s: the scale is not finite", arg);
                return -1;
            }
            path_len = (size_t)(colon - arg);
            out->scale = (float)v;
        }
    }
    if (path_len == 0 || path_len >= sizeof out->path) {
        sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "--lora expects FILE[:SCALE], got '%s'", arg);
        return -1;
    }
    memcpy(out->path, arg, path_len);
    out->path[path_len] = '\0';
    return 0;
}

/* The key prefixes of a model's modules: kohya/A1111's, then diffusers/PEFT's. */
static void prefixes_of(sd_lora_target target, int xl, const char *prefixes[2])
{
    switch (target) {
    case SD_LORA_TEXT_ENCODER:
        prefixes[0] = xl ? "lora_te1_" : "lora_te_";
        prefixes[1] = "text_encoder.";
        break;
    case SD_LORA_TEXT_ENCODER_2:
        prefixes[0] = "lora_te2_";
        prefixes[1] = "text_encoder_2.";
        break;
    default:
        prefixes[0] = "lora_unet_";
        prefixes[1] = "unet.";
        break;
    }
}

static const char *target_name(sd_lora_target target)
{
    return target == SD_LORA_UNET ? "unet" : target == SD_LORA_TEXT_ENCODER_2 ? "text encoder 2" : "text encoder";
}

onnxstream_status_t sd_lora_apply(onnxstream_model_t *m, sd_lora_target target, int xl, const sd_lora_t *loras,
                                  size_t count, size_t *taken, int quiet, char *err, size_t err_size)
{
    const char *prefixes[2];
    prefixes_of(target, xl, prefixes);
    for (size_t i = 0; i < count; ++i) {
        size_t here = 0;
        for (int p = 0; p < 2; ++p) {
            size_t n = 0;
            onnxstream_status_t s = onnxstream_model_add_lora(m, loras[i].path, loras[i].scale, prefixes[p], &n);
            if (s != ONNXSTREAM_OK)
                return sd_fail(err, err_size, s, "%s: %s", target_name(target), onnxstream_model_last_error(m));
            here += n;
        }
        taken[i] += here;
        if (!quiet && here)
            fprintf(stderr, "lora: %s, %zu module(s) in the %s, scale %g\n", loras[i].path, here, target_name(target),
                    loras[i].scale);
    }
    return ONNXSTREAM_OK;
}

onnxstream_status_t sd_lora_check_used(const sd_lora_t *loras, size_t count, const size_t *taken, int xl,
                                       char *err, size_t err_size)
{
    for (size_t i = 0; i < count; ++i)
        if (taken[i] == 0)
            return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT,
                           "lora %s: no module for this model: its keys start with none of %s, unet., "
                           "text_encoder.%s",
                           loras[i].path, xl ? "lora_unet_, lora_te1_, lora_te2_" : "lora_unet_, lora_te_",
                           xl ? ", text_encoder_2." : "");
    return ONNXSTREAM_OK;
}
