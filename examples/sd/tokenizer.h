/*
 * CLIP BPE tokenizer for Stable Diffusion prompts (the tokenizer of OpenAI's CLIP / SD 1.x).
 *
 * Text is cleaned the way the reference tokenizer does (a subset of ftfy: control characters removed,
 * curly quotes straightened, Latin ligatures and full-width forms folded; HTML entities unescaped;
 * whitespace runs collapsed and trimmed; lowercased), split with CLIP's pre-tokenization regex
 * (`<|startoftext|>|<|endoftext|>|'s|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+`), byte-level
 * encoded and merged with the BPE ranks. Unicode classes are exact for ASCII and tabulated for the common
 * scripts, punctuation and symbol blocks; NFC composition is not performed, so text must already be
 * precomposed (as text typed on a keyboard almost always is).
 *
 * Ids: 256 byte tokens, the same 256 with `</w>`, one per merge, then <|startoftext|> = 49406 and
 * <|endoftext|> = 49407 (SD uses the first 49152-256-2 merges).
 *
 * Every function that can fail returns 0 on success and -1 on failure, writing a one-line message into
 * `err` (truncated to `err_size` bytes, always NUL-terminated when err_size > 0; `err` may be NULL).
 */
#ifndef SD_TOKENIZER_H
#define SD_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SD_TOKEN_BOS 49406
#define SD_TOKEN_EOS 49407
/* Padding token of SD 1.x (the text encoder was trained with <|endoftext|> padding). */
#define SD_TOKEN_PAD 49407
/* Tokens per text-encoder call, including BOS and EOS. */
#define SD_TOKENIZER_CONTEXT 77
/* Prompt tokens per chunk (SD_TOKENIZER_CONTEXT minus BOS and EOS). */
#define SD_TOKENIZER_CHUNK_TOKENS 75

typedef struct sd_tokenizer sd_tokenizer_t;

/*
 * Loads a tokenizer from `path`, which is either
 *   - a folder holding OnnxStream's `vocab.txt` (one token per line, the line index is the id, tokens in
 *     CLIP's byte-to-unicode spelling with `</w>` suffixes) and `merges.txt` (one "left right" pair per
 *     line in rank order, an optional `#version` header line), or
 *   - the original `bpe_simple_vocab_16e6.txt.gz` (or its uncompressed .txt): a header line then the
 *     merges; the vocabulary is derived from them.
 * Returns a tokenizer owned by the caller (free with sd_tokenizer_destroy), or NULL with a message naming
 * the file and what was expected.
 */
sd_tokenizer_t *sd_tokenizer_create(const char *path, char *err, size_t err_size);

/* Frees a tokenizer; NULL is allowed. */
void sd_tokenizer_destroy(sd_tokenizer_t *tok);

/*
 * Tokenizes `text` (UTF-8; invalid bytes are byte-encoded as they are) into ids without BOS/EOS and
 * without emphasis parsing. On success `*ids` is a malloc'd array owned by the caller (NULL when
 * `*count` is 0). Fails only on allocation failure.
 */
int sd_tokenizer_encode(const sd_tokenizer_t *tok, const char *text, int32_t **ids, size_t *count,
                        char *err, size_t err_size);

/* A prompt split into text-encoder inputs: `count` chunks of SD_TOKENIZER_CONTEXT ids and weights each. */
typedef struct sd_token_chunks {
    size_t count;
    int32_t *ids;   /* count * SD_TOKENIZER_CONTEXT: BOS, up to 75 prompt tokens, EOS, PAD... */
    float *weights; /* same layout; 1.0 for BOS/EOS/PAD */
} sd_token_chunks_t;

/*
 * Tokenizes a prompt with A1111-style emphasis: `(text)` multiplies weights by 1.1, `((text))` by 1.21,
 * `[text]` divides by 1.1, `(text:1.3)` sets an explicit factor, `\(` `\)` `\[` `\]` `\\` are literal
 * characters, and unbalanced brackets are closed at the end of the prompt. Tokens are grouped into
 * chunks of 75 (an empty prompt gives one chunk), each wrapped as BOS + tokens + EOS and padded with
 * SD_TOKEN_PAD to 77. On success `out` owns malloc'd arrays (free with sd_token_chunks_free); on
 * failure `out` is left empty.
 */
int sd_tokenizer_encode_chunks(const sd_tokenizer_t *tok, const char *prompt, sd_token_chunks_t *out,
                               char *err, size_t err_size);

/* Frees the arrays of `chunks` and zeroes it; NULL or an empty struct is allowed. */
void sd_token_chunks_free(sd_token_chunks_t *chunks);

/* Number of ids (49408 for CLIP). */
size_t sd_tokenizer_vocab_size(const sd_tokenizer_t *tok);

/* The token of `id` in vocab.txt spelling (byte-to-unicode, `</w>` suffix), or NULL when out of range.
 * The string is owned by the tokenizer. */
const char *sd_tokenizer_token(const sd_tokenizer_t *tok, int32_t id);

/* Number of BPE merges in use. */
size_t sd_tokenizer_merge_count(const sd_tokenizer_t *tok);

/* The ids of the left and right parts of the merge of rank `rank`; returns -1 when out of range. */
int sd_tokenizer_merge(const sd_tokenizer_t *tok, size_t rank, int32_t *left, int32_t *right);

#ifdef __cplusplus
}
#endif

#endif
