/*
 * Prompt conditioning: text-encoder runs over 77-token chunks with A1111 emphasis, and what SDXL adds on
 * top: a second encoder whose ids are padded with 0, the two hidden states concatenated per token, the
 * pooled embedding of the second encoder, and the size conditioning vector.
 */
#ifndef SD_CONDITIONING_H
#define SD_CONDITIONING_H

#include <stddef.h>
#include <stdint.h>

#include "onnxstream.h"
#include "tokenizer.h"

/* One prompt's encoder output. */
typedef struct sd_text_encoding {
    float *hidden;       /* chunks * 77 * width floats, chunks concatenated along the tokens */
    size_t chunks, width;
    float *pooled;       /* pooled_width floats from the first chunk; NULL when not asked for */
    size_t pooled_width;
    uint64_t weights_read; /* weight bytes the text encoder read to compute it */
} sd_text_encoding_t;

/* How to drive one text encoder. */
typedef struct sd_text_encoder_spec {
    const char *input_name; /* "onnx::Reshape_0" (SD 1.5) or "input_ids" (SDXL) */
    int64_t pad_id;         /* id after each chunk's end token: SD_TOKEN_PAD, or 0 for SDXL's OpenCLIP encoder */
    int pooled;             /* also read the encoder's (1,P) pooled output */
} sd_text_encoder_spec_t;

/*
 * Encodes `prompt` into *cond and, when with_negative, `negative` (NULL means empty) into *uncond, both
 * with the same number of chunks (the longer prompt's). The hidden state is the encoder's rank-3
 * (1,77,W) output, the pooled embedding its rank-2 (1,P) output. Emphasis scales each token's hidden
 * state by its weight, then restores the chunk's mean. On failure nothing is left allocated.
 */
onnxstream_status_t sd_encode_prompts(onnxstream_model_t *te, const sd_tokenizer_t *tok,
                                      const sd_text_encoder_spec_t *spec, const char *prompt,
                                      const char *negative, int with_negative, sd_text_encoding_t *cond,
                                      sd_text_encoding_t *uncond, char *err, size_t err_size);

/* Frees the arrays and zeroes *e; safe on a zeroed struct. */
void sd_text_encoding_free(sd_text_encoding_t *e);

/*
 * SDXL: out->hidden holds, per token, a's width values then b's (768 + 1280 = 2048); out->pooled is b's.
 * a and b must have the same chunk count; both are freed (also on failure). Returns ONNXSTREAM_OK or
 * ONNXSTREAM_ERR_OUT_OF_MEMORY / _INVALID_ARGUMENT with a message.
 */
onnxstream_status_t sd_text_encoding_concat(sd_text_encoding_t *a, sd_text_encoding_t *b, sd_text_encoding_t *out,
                                            char *err, size_t err_size);

/* All-zero embeddings shaped like *like: SDXL's unconditional input when no negative prompt is given
 * (diffusers' force_zeros_for_empty_prompt). Returns 0, or -1 when out of memory. */
int sd_text_encoding_zeros(const sd_text_encoding_t *like, sd_text_encoding_t *out);

/* SDXL's micro-conditioning (diffusers' add_time_ids): original size (h, w), crop top-left (0, 0) and
 * target size (h, w), for an image of height x width pixels. */
void sd_xl_time_ids(int height, int width, float out[6]);

#endif
