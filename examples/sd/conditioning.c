#include "conditioning.h"

#include <stdlib.h>
#include <string.h>

#include "status.h"

void sd_text_encoding_free(sd_text_encoding_t *e) {
    if (!e) return;
    free(e->hidden);
    free(e->pooled);
    memset(e, 0, sizeof *e);
}

/* The encoder's (1,77,W) and, when wanted, (1,P) outputs of the last run. */
static onnxstream_status_t read_outputs(onnxstream_model_t *te, int want_pooled, onnxstream_tensor_view_t *hidden,
                                        onnxstream_tensor_view_t *pooled, char *err, size_t err_size) {
    int have_hidden = 0, have_pooled = 0;
    for (size_t i = 0; i < onnxstream_model_output_count(te); ++i) {
        onnxstream_tensor_view_t v;
        v.struct_size = sizeof v;
        onnxstream_status_t s = onnxstream_model_get_output(te, i, &v);
        if (s != ONNXSTREAM_OK) return sd_fail(err, err_size, s, "text encoder: %s", onnxstream_model_last_error(te));
        if (v.dtype != ONNXSTREAM_DTYPE_FLOAT32) continue;
        if (!have_hidden && v.rank == 3 && v.shape[0] == 1 && v.shape[1] == SD_TOKENIZER_CONTEXT) {
            *hidden = v;
            have_hidden = 1;
        } else if (want_pooled && !have_pooled && v.rank == 2 && v.shape[0] == 1) {
            *pooled = v;
            have_pooled = 1;
        }
    }
    if (!have_hidden)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL,
                       "text encoder: no float32 (1,77,width) output among its %zu output(s)",
                       onnxstream_model_output_count(te));
    if (want_pooled && !have_pooled)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_MODEL,
                       "text encoder: no float32 (1,width) pooled output (SDXL's second encoder has text_embeds)");
    return ONNXSTREAM_OK;
}

/* Chunk c's ids and weights; chunks beyond the prompt's own (to match the other prompt's count) are empty
 * prompts. Ids after the first end token become spec->pad_id. */
static void chunk_input(const sd_token_chunks_t *chunks, size_t c, int64_t pad_id, int64_t *ids, float *weights) {
    int after_end = 0;
    for (int i = 0; i < SD_TOKENIZER_CONTEXT; ++i) {
        int real = c < chunks->count;
        int64_t id = real ? chunks->ids[c * SD_TOKENIZER_CONTEXT + i]
                          : (i == 0 ? SD_TOKEN_BOS : (i == 1 ? SD_TOKEN_EOS : SD_TOKEN_PAD));
        ids[i] = after_end ? pad_id : id;
        if (id == SD_TOKEN_EOS) after_end = 1;
        weights[i] = real ? chunks->weights[c * SD_TOKENIZER_CONTEXT + i] : 1.0f;
    }
}

/* z = src scaled per token by its weight, then by the ratio that restores the chunk's sum. */
static void apply_emphasis(const float *src, const float *weights, size_t width, float *z) {
    size_t n = SD_TOKENIZER_CONTEXT * width;
    double before = 0, after = 0;
    for (size_t i = 0; i < n; ++i) before += src[i];
    for (size_t t = 0; t < SD_TOKENIZER_CONTEXT; ++t)
        for (size_t k = 0; k < width; ++k) z[t * width + k] = src[t * width + k] * weights[t];
    for (size_t i = 0; i < n; ++i) after += z[i];
    if (after != 0 && before != 0)
        for (size_t i = 0; i < n; ++i) z[i] = (float)(z[i] * (before / after));
}

/* One prompt, at least min_chunks chunks. */
static onnxstream_status_t encode_prompt(onnxstream_model_t *te, const sd_tokenizer_t *tok,
                                         const sd_text_encoder_spec_t *spec, const char *prompt, size_t min_chunks,
                                         sd_text_encoding_t *out, char *err, size_t err_size) {
    sd_token_chunks_t chunks = {0, NULL, NULL};
    char terr[256];
    memset(out, 0, sizeof *out);
    if (sd_tokenizer_encode_chunks(tok, prompt ? prompt : "", &chunks, terr, sizeof terr) != 0)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT, "tokenizer: %s", terr);
    size_t n_chunks = chunks.count < min_chunks ? min_chunks : chunks.count;
    onnxstream_status_t s = ONNXSTREAM_OK;
    for (size_t c = 0; c < n_chunks && s == ONNXSTREAM_OK; ++c) {
        int64_t ids[SD_TOKENIZER_CONTEXT];
        float weights[SD_TOKENIZER_CONTEXT];
        chunk_input(&chunks, c, spec->pad_id, ids, weights);
        int64_t shape[2] = {1, SD_TOKENIZER_CONTEXT};
        s = onnxstream_model_push_tensor(te, spec->input_name, ONNXSTREAM_DTYPE_INT64, 2, shape, ids, sizeof ids);
        if (s == ONNXSTREAM_OK) s = sd_run(te, &out->weights_read);
        if (s != ONNXSTREAM_OK) {
            sd_fail(err, err_size, s, "text encoder: %s", onnxstream_model_last_error(te));
            break;
        }
        onnxstream_tensor_view_t hidden, pooled;
        memset(&hidden, 0, sizeof hidden);
        memset(&pooled, 0, sizeof pooled);
        s = read_outputs(te, spec->pooled && c == 0, &hidden, &pooled, err, err_size);
        if (s != ONNXSTREAM_OK) break;
        size_t width = (size_t)hidden.shape[2];
        if (!out->hidden) {
            out->width = width;
            out->hidden = malloc(n_chunks * SD_TOKENIZER_CONTEXT * width * sizeof(float));
            if (!out->hidden) {
                s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for prompt embeddings");
                break;
            }
        }
        if (spec->pooled && c == 0) {
            out->pooled_width = (size_t)pooled.shape[1];
            out->pooled = malloc(out->pooled_width * sizeof(float));
            if (!out->pooled) {
                s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for prompt embeddings");
                break;
            }
            memcpy(out->pooled, pooled.data, out->pooled_width * sizeof(float));
        }
        apply_emphasis((const float *)hidden.data, weights, width, out->hidden + c * SD_TOKENIZER_CONTEXT * width);
    }
    sd_token_chunks_free(&chunks);
    if (s != ONNXSTREAM_OK) sd_text_encoding_free(out);
    else out->chunks = n_chunks;
    return s;
}

onnxstream_status_t sd_encode_prompts(onnxstream_model_t *te, const sd_tokenizer_t *tok,
                                      const sd_text_encoder_spec_t *spec, const char *prompt,
                                      const char *negative, int with_negative, sd_text_encoding_t *cond,
                                      sd_text_encoding_t *uncond, char *err, size_t err_size) {
    memset(uncond, 0, sizeof *uncond);
    onnxstream_status_t s = encode_prompt(te, tok, spec, prompt, 1, cond, err, err_size);
    if (s != ONNXSTREAM_OK || !with_negative) return s;
    s = encode_prompt(te, tok, spec, negative, cond->chunks, uncond, err, err_size);
    if (s == ONNXSTREAM_OK && uncond->chunks > cond->chunks) { /* the negative prompt is the longer one */
        size_t chunks = uncond->chunks;
        uint64_t read_before = cond->weights_read;
        sd_text_encoding_free(cond);
        s = encode_prompt(te, tok, spec, prompt, chunks, cond, err, err_size);
        cond->weights_read += read_before;
    }
    if (s != ONNXSTREAM_OK) {
        sd_text_encoding_free(cond);
        sd_text_encoding_free(uncond);
    }
    return s;
}

onnxstream_status_t sd_text_encoding_concat(sd_text_encoding_t *a, sd_text_encoding_t *b, sd_text_encoding_t *out,
                                            char *err, size_t err_size) {
    onnxstream_status_t s = ONNXSTREAM_OK;
    memset(out, 0, sizeof *out);
    size_t tokens = a->chunks * SD_TOKENIZER_CONTEXT, width = a->width + b->width;
    if (a->chunks != b->chunks)
        s = sd_fail(err, err_size, ONNXSTREAM_ERR_INVALID_ARGUMENT,
                    "the two text encoders gave %zu and %zu chunks", a->chunks, b->chunks);
    else if (!(out->hidden = malloc(tokens * width * sizeof(float))))
        s = sd_fail(err, err_size, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory for prompt embeddings");
    if (s == ONNXSTREAM_OK) {
        for (size_t t = 0; t < tokens; ++t) {
            memcpy(out->hidden + t * width, a->hidden + t * a->width, a->width * sizeof(float));
            memcpy(out->hidden + t * width + a->width, b->hidden + t * b->width, b->width * sizeof(float));
        }
        out->chunks = a->chunks;
        out->width = width;
        out->pooled = b->pooled; /* ownership moves */
        out->pooled_width = b->pooled_width;
        out->weights_read = a->weights_read + b->weights_read;
        b->pooled = NULL;
    }
    sd_text_encoding_free(a);
    sd_text_encoding_free(b);
    return s;
}

int sd_text_encoding_zeros(const sd_text_encoding_t *like, sd_text_encoding_t *out) {
    memset(out, 0, sizeof *out);
    out->hidden = calloc(like->chunks * SD_TOKENIZER_CONTEXT * like->width, sizeof(float));
    out->pooled = like->pooled_width ? calloc(like->pooled_width, sizeof(float)) : NULL;
    if (!out->hidden || (like->pooled_width && !out->pooled)) {
        sd_text_encoding_free(out);
        return -1;
    }
    out->chunks = like->chunks;
    out->width = like->width;
    out->pooled_width = like->pooled_width;
    return 0;
}

void sd_xl_time_ids(int height, int width, float out[6]) {
    out[0] = (float)height; /* original size */
    out[1] = (float)width;
    out[2] = 0.0f; /* crop top-left */
    out[3] = 0.0f;
    out[4] = (float)height; /* target size */
    out[5] = (float)width;
}
