/*
 * A1111-style prompt emphasis (tokenizer.h's sd_tokenizer_encode_chunks): `(text)`, `((text))`, `[text]`,
 * `(text:1.3)` and the escapes `\(` `\)` `\[` `\]` `\\`, parsed into literal text segments with weights.
 */
#ifndef SD_PROMPT_EMPHASIS_H
#define SD_PROMPT_EMPHASIS_H

#include <stddef.h>

struct sd_prompt_segment {
    size_t start, len; /* in the literal-text buffer */
    double weight;
};

struct sd_prompt_segments {
    struct sd_prompt_segment *v;
    size_t n, cap;
    char *text;
    size_t text_len;
};

/* A1111's parse_prompt_attention: the prompt's literal text segments with their weights, equal neighbours
 * merged. 0, or -1 when out of memory; the caller frees l->v and l->text either way. */
int sd_parse_prompt_attention(const char *prompt, struct sd_prompt_segments *l);

#endif
