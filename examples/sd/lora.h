/* LoRAs in the sd example: `--lora FILE[:SCALE]` applies a LoRA file to the text encoder(s) and the UNet
 * while their weights stream (onnxstream_model_add_lora). Each model takes the modules under its own key
 * prefixes, in kohya/A1111 and in diffusers/PEFT spelling. */
#ifndef SD_LORA_H
#define SD_LORA_H

#include <stddef.h>

#include "onnxstream.h"

#define SD_MAX_LORAS 16

typedef struct sd_lora {
    char path[4096];
    float scale;
} sd_lora_t;

typedef enum sd_lora_target {
    SD_LORA_TEXT_ENCODER, /* SD 1.5's, SDXL's first */
    SD_LORA_TEXT_ENCODER_2,
    SD_LORA_UNET,
} sd_lora_target;

/* Parses FILE or FILE:SCALE (SCALE a finite number; a path whose last ':' is not followed by one is taken
 * whole). Returns 0, or -1 with a message in err. */
int sd_lora_parse(const char *arg, sd_lora_t *out, char *err, size_t err_size);

/* Adds each LoRA's modules for `target` (xl: SDXL's key names) to model m; taken[i] grows by the modules
 * LoRA i gave it. Prints one line per LoRA unless quiet. Returns the library's status with its message. */
onnxstream_status_t sd_lora_apply(onnxstream_model_t *m, sd_lora_target target, int xl, const sd_lora_t *loras,
                                  size_t count, size_t *taken, int quiet, char *err, size_t err_size);

/* After the last model: a LoRA that gave no model a module is an error (its keys name another kind of
 * model). */
onnxstream_status_t sd_lora_check_used(const sd_lora_t *loras, size_t count, const size_t *taken, int xl,
                                       char *err, size_t err_size);

#endif
