/*
 * The Unicode rules of CLIP's tokenizer (tokenizer.c, text_clean.c): UTF-8 with invalid bytes kept, the
 * character classes of its pre-tokenization regex, and Python's lowercasing.
 */
#ifndef SD_UNICODE_H
#define SD_UNICODE_H

#include <stddef.h>
#include <stdint.h>

#define SD_INVALID_BYTE_FLAG 0x200000 /* code point slot holding a raw byte that was not valid UTF-8 */

/* Writes cp (or the raw byte of an SD_INVALID_BYTE_FLAG slot) as UTF-8; returns the bytes written (1..4). */
size_t sd_utf8_put(int32_t cp, char *out);
/* Decodes one code point from s (n > 0 bytes); returns the bytes used. A byte that does not start a valid
 * sequence becomes SD_INVALID_BYTE_FLAG | byte, so that byte-level encoding still sees the original byte. */
size_t sd_utf8_get(const unsigned char *s, size_t n, int32_t *cp);

/* Python's str.isspace / regex \s. */
int sd_is_space(int32_t c);
/* Which class of `\s`, `\p{L}`, `\p{N}` or none of them c is in. */
enum { SD_CHAR_SPACE, SD_CHAR_LETTER, SD_CHAR_NUMBER, SD_CHAR_OTHER };
int sd_char_class(int32_t c);
/* Python's str.lower for Latin, Greek, Cyrillic, Armenian, Roman numerals and circled letters (U+0130 is
 * handled by the caller). */
int32_t sd_lower_cp(int32_t c);

#endif
