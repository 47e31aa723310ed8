/*
 * Text cleaning of CLIP's reference tokenizer (basic_clean + whitespace_clean + lower): the parts of
 * ftfy.fix_text that change CLIP tokens, HTML entities unescaped, whitespace runs collapsed and trimmed,
 * lowercased. See tokenizer.h for what is and is not covered.
 */
#ifndef SD_TEXT_CLEAN_H
#define SD_TEXT_CLEAN_H

#include <stddef.h>
#include <stdint.h>

/* A growable array of code points; the caller frees v. */
struct sd_cp_buf {
    int32_t *v;
    size_t n, cap;
};

/* Appends the cleaned code points of `len` bytes of UTF-8 text to `out`; 0, or -1 when out of memory. */
int sd_clean_text(const char *text, size_t len, struct sd_cp_buf *out);

#endif
