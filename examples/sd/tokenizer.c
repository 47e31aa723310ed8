/* CLIP BPE tokenizer; see tokenizer.h for the behaviour and the file formats. */
#include "tokenizer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* SD's tokenizer keeps the first 49152 - 256 - 2 merges of the published list. */
#define CLIP_MERGES 48894
#define EOW "</w>"
#define INVALID_BYTE_FLAG 0x200000 /* code point slot holding a raw byte that was not valid UTF-8 */

struct str_map {
    int32_t *slots; /* token ids, -1 = empty */
    size_t mask;
};

struct pair_slot {
    uint64_t key; /* (left << 32) | right, UINT64_MAX = empty */
    int32_t rank;
    int32_t result;
};

struct sd_tokenizer {
    char **tokens;
    size_t n_tokens;
    struct str_map vocab;
    int32_t *merge_left;
    int32_t *merge_right;
    size_t n_merges;
    struct pair_slot *pairs;
    size_t pair_mask;
    int32_t byte_id[256];
    int32_t byte_eow_id[256];
    int32_t bos, eos;
};

static void set_err(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    if (!err || err_size == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- UTF-8 */

static size_t utf8_put(int32_t cp, char *out)
{
    if (cp & INVALID_BYTE_FLAG) {
        out[0] = (char)(cp & 0xFF);
        return 1;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes one code point; a byte that does not start a valid sequence becomes INVALID_BYTE_FLAG | byte so
 * that byte-level encoding still sees the original byte. */
static size_t utf8_get(const unsigned char *s, size_t n, int32_t *cp)
{
    unsigned char c = s[0];
    size_t len, i;
    int32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0) {
        len = 2, v = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, v = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = INVALID_BYTE_FLAG | c;
        return 1;
    }
    if (len > n) {
        *cp = INVALID_BYTE_FLAG | c;
        return 1;
    }
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            *cp = INVALID_BYTE_FLAG | c;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = INVALID_BYTE_FLAG | c;
        return 1;
    }
    *cp = v;
    return len;
}

/* ---------------------------------------------------------------- Unicode classes */

struct cp_range {
    int32_t lo, hi;
};

/* \p{N}: decimal digits, letter numbers and other numbers of the common blocks. */
static const struct cp_range number_ranges[] = {
    {0x00B2, 0x00B3}, {0x00B9, 0x00B9}, {0x00BC, 0x00BE}, {0x0660, 0x0669}, {0x06F0, 0x06F9},
    {0x07C0, 0x07C9}, {0x0966, 0x096F}, {0x09E6, 0x09EF}, {0x09F4, 0x09F9}, {0x0A66, 0x0A6F},
    {0x0AE6, 0x0AEF}, {0x0B66, 0x0B6F}, {0x0BE6, 0x0BF2}, {0x0C66, 0x0C6F}, {0x0CE6, 0x0CEF},
    {0x0D66, 0x0D6F}, {0x0E50, 0x0E59}, {0x0ED0, 0x0ED9}, {0x0F20, 0x0F33}, {0x1040, 0x1049},
    {0x1369, 0x137C}, {0x16EE, 0x16F0}, {0x17E0, 0x17E9}, {0x1810, 0x1819}, {0x2070, 0x2070},
    {0x2074, 0x2079}, {0x2080, 0x2089}, {0x2150, 0x2182}, {0x2185, 0x2189}, {0x2460, 0x249B},
    {0x24EA, 0x24FF}, {0x2776, 0x2793}, {0x2CFD, 0x2CFD}, {0x3007, 0x3007}, {0x3021, 0x3029},
    {0x3038, 0x303A}, {0x3192, 0x3195}, {0x3220, 0x3229}, {0x3248, 0x324F}, {0x3251, 0x325F},
    {0x3280, 0x3289}, {0x32B1, 0x32BF}, {0xFF10, 0xFF19}, {0x1D7CE, 0x1D7FF}, {0x1F100, 0x1F10C},
};

/* Neither \p{L} nor \p{N}: punctuation, symbols, marks, controls and format characters. Anything above
 * U+007F not listed here or in number_ranges counts as a letter. */
static const struct cp_range other_ranges[] = {
    {0x0080, 0x00A9}, {0x00AB, 0x00B4}, {0x00B6, 0x00B9}, {0x00BB, 0x00BF}, {0x00D7, 0x00D7},
    {0x00F7, 0x00F7}, {0x02C2, 0x02C5}, {0x02D2, 0x02DF}, {0x02E5, 0x02EB}, {0x02ED, 0x02ED},
    {0x02EF, 0x036F}, {0x0375, 0x0375}, {0x037E, 0x037E}, {0x0384, 0x0385}, {0x0387, 0x0387},
    {0x03F6, 0x03F6}, {0x0482, 0x0489}, {0x055A, 0x055F}, {0x0589, 0x058F}, {0x0591, 0x05C7},
    {0x05F3, 0x05F4}, {0x0600, 0x061F}, {0x064B, 0x065F}, {0x066A, 0x066D}, {0x0670, 0x0670},
    {0x06D4, 0x06D4}, {0x06D6, 0x06E4}, {0x06E7, 0x06ED}, {0x0900, 0x0903}, {0x093A, 0x093C},
    {0x093E, 0x094F}, {0x0951, 0x0957}, {0x0962, 0x0965}, {0x0970, 0x0970}, {0x0E31, 0x0E31},
    {0x0E34, 0x0E3F}, {0x0E47, 0x0E4F}, {0x0E5A, 0x0E5B}, {0x1AB0, 0x1AFF}, {0x1DC0, 0x1DFF},
    {0x2000, 0x206F}, {0x207A, 0x207E}, {0x208A, 0x208E}, {0x20A0, 0x20FF}, {0x2100, 0x2101},
    {0x2103, 0x2106}, {0x2108, 0x2109}, {0x2114, 0x2114}, {0x2116, 0x2118}, {0x211E, 0x2123},
    {0x2125, 0x2125}, {0x2127, 0x2127}, {0x2129, 0x2129}, {0x212E, 0x212E}, {0x213A, 0x213B},
    {0x2140, 0x2144}, {0x214A, 0x214D}, {0x214F, 0x214F}, {0x218A, 0x245F}, {0x249C, 0x24E9},
    {0x2500, 0x2775}, {0x2794, 0x2BFF}, {0x2CE5, 0x2CEA}, {0x2CEF, 0x2CF1}, {0x2CF9, 0x2CFC},
    {0x2CFE, 0x2CFF}, {0x2DE0, 0x2E2E}, {0x2E30, 0x2FFF}, {0x3000, 0x3004}, {0x3008, 0x3020},
    {0x302A, 0x3030}, {0x3036, 0x3037}, {0x303D, 0x303F}, {0x3099, 0x309C}, {0x30A0, 0x30A0},
    {0x30FB, 0x30FB}, {0x3190, 0x3191}, {0x3196, 0x319F}, {0x31C0, 0x31EF}, {0x3200, 0x321F},
    {0x322A, 0x3247}, {0x3250, 0x3250}, {0x3260, 0x327F}, {0x328A, 0x32B0}, {0x32C0, 0x33FF},
    {0x4DC0, 0x4DFF}, {0xA490, 0xA4CF}, {0xD800, 0xF8FF}, {0xFB29, 0xFB29}, {0xFD3E, 0xFD3F},
    {0xFDFC, 0xFDFF}, {0xFE00, 0xFE6F}, {0xFEFF, 0xFEFF}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF20},
    {0xFF3B, 0xFF40}, {0xFF5B, 0xFF65}, {0xFFE0, 0xFFFF}, {0x1D100, 0x1D3FF}, {0x1F000, 0x1F0FF},
    {0x1F10D, 0x1FAFF}, {0xE0000, 0xE0FFF}, {0xF0000, 0x10FFFF},
};

static int in_ranges(int32_t cp, const struct cp_range *r, size_t n)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

/* Python's str.isspace / regex \s. */
static int is_space(int32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}

enum { CLASS_SPACE, CLASS_LETTER, CLASS_NUMBER, CLASS_OTHER };

static int classify(int32_t c)
{
    if (c & INVALID_BYTE_FLAG)
        return CLASS_OTHER;
    if (is_space(c))
        return CLASS_SPACE;
    if (c < 0x80) {
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            return CLASS_LETTER;
        if (c >= '0' && c <= '9')
            return CLASS_NUMBER;
        return CLASS_OTHER;
    }
    if (in_ranges(c, number_ranges, sizeof(number_ranges) / sizeof(number_ranges[0])))
        return CLASS_NUMBER;
    if (in_ranges(c, other_ranges, sizeof(other_ranges) / sizeof(other_ranges[0])))
        return CLASS_OTHER;
    return CLASS_LETTER;
}

/* Python's str.lower for Latin, Greek, Cyrillic, Armenian, Roman numerals and circled letters (U+0130 is
 * handled by the caller). */
static int32_t lower_cp(int32_t c)
{
    if (c < 0x80)
        return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if (c < 0xC0)
        return c;
    if (c <= 0xDE)
        return c == 0xD7 ? c : c + 32;
    if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177) || (c >= 0x460 && c <= 0x481) ||
        (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F) || (c >= 0x1E00 && c <= 0x1E95) ||
        (c >= 0x1EA0 && c <= 0x1EFF))
        return c | 1;
    if ((c >= 0x1DE && c <= 0x1EF) || (c >= 0x1F8 && c <= 0x21F) || (c >= 0x222 && c <= 0x233) ||
        (c >= 0x246 && c <= 0x24F))
        return c | 1;
    if (c >= 0x2160 && c <= 0x216F)
        return c + 16;
    if (c >= 0x24B6 && c <= 0x24CF)
        return c + 26;
    if ((c >= 0x1CD && c <= 0x1DC) || (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E) ||
        (c >= 0x4C1 && c <= 0x4CE))
        return (c & 1) ? c + 1 : c;
    if (c == 0x178)
        return 0xFF;
    if (c == 0x386)
        return 0x3AC;
    if (c >= 0x388 && c <= 0x38A)
        return c + 37;
    if (c == 0x38C)
        return 0x3CC;
    if (c == 0x38E || c == 0x38F)
        return c + 63;
    if (c >= 0x391 && c <= 0x3AB && c != 0x3A2)
        return c + 32;
    if (c >= 0x400 && c <= 0x40F)
        return c + 80;
    if (c >= 0x410 && c <= 0x42F)
        return c + 32;
    if (c >= 0x531 && c <= 0x556)
        return c + 48;
    if (c >= 0xFF21 && c <= 0xFF3A)
        return c + 32;
    return c;
}

/* ---------------------------------------------------------------- text cleaning */

struct cp_buf {
    int32_t *v;
    size_t n, cap;
};

static int cp_push(struct cp_buf *b, int32_t c)
{
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        int32_t *v = realloc(b->v, cap * sizeof(*v));
        if (!v)
            return -1;
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = c;
    return 0;
}

static int cp_push_str(struct cp_buf *b, const char *s)
{
    for (; *s; s++)
        if (cp_push(b, (unsigned char)*s))
            return -1;
    return 0;
}

/* The parts of ftfy.fix_text that change CLIP tokens: control characters removed, curly quotes
 * straightened, Latin ligatures expanded, full-width ASCII folded. */
static int ftfy_subset(const int32_t *in, size_t n, struct cp_buf *out)
{
    size_t i;
    for (i = 0; i < n; i++) {
        int32_t c = in[i];
        int rc = 0;
        if ((c >= 0x00 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F ||
            (c >= 0x206A && c <= 0x206F) || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFC) ||
            (c >= 0x1D173 && c <= 0x1D17A) || (c >= 0xE0000 && c <= 0xE007F))
            continue;
        if (c == 0x2BC || (c >= 0x2018 && c <= 0x201B))
            rc = cp_push(out, '\'');
        else if (c >= 0x201C && c <= 0x201F)
            rc = cp_push(out, '"');
        else if (c == 0x132)
            rc = cp_push_str(out, "IJ");
        else if (c == 0x133)
            rc = cp_push_str(out, "ij");
        else if (c == 0x13F || c == 0x140)
            rc = cp_push(out, c == 0x13F ? 'L' : 'l') || cp_push(out, 0xB7);
        else if (c == 0x149)
            rc = cp_push_str(out, "'n"); /* NFKC gives U+02BC, which the quote fix then straightens */
        else if (c >= 0x1C4 && c <= 0x1CC) {
            /* DŽ Dž dž LJ Lj lj NJ Nj nj */
            static const char first[] = "DDdLLlNNn";
            int k = c - 0x1C4;
            rc = cp_push(out, first[k]);
            if (!rc && k < 3)
                rc = cp_push(out, k == 0 ? 0x17D : 0x17E);
            else if (!rc)
                rc = cp_push(out, k % 3 == 0 ? 'J' : 'j');
        } else if (c >= 0x1F1 && c <= 0x1F3)
            rc = cp_push(out, c == 0x1F3 ? 'd' : 'D') || cp_push(out, c == 0x1F1 ? 'Z' : 'z');
        else if (c == 0xFB00)
            rc = cp_push_str(out, "ff");
        else if (c == 0xFB01)
            rc = cp_push_str(out, "fi");
        else if (c == 0xFB02)
            rc = cp_push_str(out, "fl");
        else if (c == 0xFB03)
            rc = cp_push_str(out, "ffi");
        else if (c == 0xFB04)
            rc = cp_push_str(out, "ffl");
        else if (c == 0xFB05 || c == 0xFB06)
            rc = cp_push_str(out, "st");
        else if (c >= 0xFF01 && c <= 0xFF5E)
            rc = cp_push(out, c - 0xFEE0);
        else if (c == 0x3000)
            rc = cp_push(out, ' ');
        else
            rc = cp_push(out, c);
        if (rc)
            return -1;
    }
    return 0;
}

static int ascii_ieq(const int32_t *s, size_t n, const char *lit)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (lit[i] == 0 || s[i] != (unsigned char)lit[i])
            return 0;
    return lit[n] == 0;
}

/* html.unescape for the entities prompts realistically contain: numeric ones and the basic named ones. */
static int html_unescape(const int32_t *in, size_t n, struct cp_buf *out)
{
    static const struct {
        const char *name;
        int32_t cp;
        int needs_semicolon;
    } named[] = {{"amp", '&', 0}, {"lt", '<', 0}, {"gt", '>', 0}, {"quot", '"', 0},
                 {"apos", '\'', 1}, {"nbsp", 0xA0, 0}};
    size_t i = 0;
    while (i < n) {
        int32_t c = in[i];
        if (c == '&' && i + 1 < n) {
            size_t j = i + 1, k;
            if (in[j] == '#') {
                int hex = 0;
                int32_t v = 0;
                size_t start;
                j++;
                if (j < n && (in[j] == 'x' || in[j] == 'X'))
                    hex = 1, j++;
                start = j;
                while (j < n && j - start < 8) {
                    int32_t d = in[j];
                    int dv;
                    if (d >= '0' && d <= '9')
                        dv = d - '0';
                    else if (hex && d >= 'a' && d <= 'f')
                        dv = d - 'a' + 10;
                    else if (hex && d >= 'A' && d <= 'F')
                        dv = d - 'A' + 10;
                    else
                        break;
                    v = v * (hex ? 16 : 10) + dv;
                    j++;
                }
                if (j > start && v > 0 && v <= 0x10FFFF && !(v >= 0xD800 && v <= 0xDFFF)) {
                    if (j < n && in[j] == ';')
                        j++;
                    if (cp_push(out, v))
                        return -1;
                    i = j;
                    continue;
                }
            } else {
                while (j < n && j - i <= 5 &&
                       ((in[j] >= 'a' && in[j] <= 'z') || (in[j] >= 'A' && in[j] <= 'Z')))
                    j++;
                for (k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
                    if (!ascii_ieq(in + i + 1, j - i - 1, named[k].name))
                        continue;
                    if (j < n && in[j] == ';')
                        j++;
                    else if (named[k].needs_semicolon)
                        continue;
                    if (cp_push(out, named[k].cp))
                        return -1;
                    i = j;
                    break;
                }
                if (k < sizeof(named) / sizeof(named[0]))
                    continue;
            }
        }
        if (cp_push(out, c))
            return -1;
        i++;
    }
    return 0;
}

/* basic_clean + whitespace_clean + lower of the reference tokenizer. */
static int clean_text(const char *text, size_t len, struct cp_buf *out)
{
    struct cp_buf a = {0}, b = {0};
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    int pending_space = 0, rc = -1;

    while (i < len) {
        int32_t c;
        i += utf8_get(s + i, len - i, &c);
        if (cp_push(&a, c))
            goto done;
    }
    if (ftfy_subset(a.v, a.n, &b))
        goto done;
    a.n = 0;
    if (html_unescape(b.v, b.n, &a))
        goto done;
    b.n = 0;
    if (html_unescape(a.v, a.n, &b))
        goto done;

    out->n = 0;
    for (i = 0; i < b.n; i++) {
        int32_t c = b.v[i];
        if (is_space(c)) {
            pending_space = out->n > 0;
            continue;
        }
        if (pending_space && cp_push(out, ' '))
            goto done;
        pending_space = 0;
        if (c == 0x130) {
            /* Python lowercases U+0130 to "i" + combining dot above. */
            if (cp_push(out, 'i') || cp_push(out, 0x307))
                goto done;
        } else if (cp_push(out, (c & INVALID_BYTE_FLAG) ? c : lower_cp(c))) {
            goto done;
        }
    }
    rc = 0;
done:
    free(a.v);
    free(b.v);
    return rc;
}

/* ---------------------------------------------------------------- hash maps */

static uint32_t hash_bytes(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

static int str_map_init(struct str_map *m, size_t n)
{
    size_t cap = 16, i;
    while (cap < n * 2)
        cap *= 2;
    m->slots = malloc(cap * sizeof(*m->slots));
    if (!m->slots)
        return -1;
    for (i = 0; i < cap; i++)
        m->slots[i] = -1;
    m->mask = cap - 1;
    return 0;
}

static int32_t str_map_find(const sd_tokenizer_t *t, const char *s, size_t n)
{
    size_t i = hash_bytes(s, n) & t->vocab.mask;
    for (;; i = (i + 1) & t->vocab.mask) {
        int32_t id = t->vocab.slots[i];
        if (id < 0)
            return -1;
        if (strlen(t->tokens[id]) == n && memcmp(t->tokens[id], s, n) == 0)
            return id;
    }
}

/* Later ids replace earlier ones with the same spelling, as in the reference's dict(zip(vocab, ids)). */
static void str_map_insert(sd_tokenizer_t *t, int32_t id)
{
    const char *s = t->tokens[id];
    size_t n = strlen(s);
    size_t i = hash_bytes(s, n) & t->vocab.mask;
    for (;; i = (i + 1) & t->vocab.mask) {
        int32_t cur = t->vocab.slots[i];
        if (cur < 0 || strcmp(t->tokens[cur], s) == 0) {
            t->vocab.slots[i] = id;
            return;
        }
    }
}

static size_t pair_hash(uint64_t key)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)key;
}

static const struct pair_slot *pair_find(const sd_tokenizer_t *t, int32_t left, int32_t right)
{
    uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    size_t i = pair_hash(key) & t->pair_mask;
    for (;; i = (i + 1) & t->pair_mask) {
        const struct pair_slot *p = &t->pairs[i];
        if (p->key == UINT64_MAX)
            return NULL;
        if (p->key == key)
            return p;
    }
}

/* ---------------------------------------------------------------- loading */

/* CLIP's bytes_to_unicode: printable Latin-1 bytes map to themselves, the others to U+0100 onwards. The
 * vocabulary lists the byte tokens in that order (printable ones first), not in byte order. */
static void bytes_to_unicode(int32_t byte_cp[256], unsigned char order[256])
{
    int n = 0, extra = 0, b;
    for (b = 0; b < 256; b++) {
        if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) {
            byte_cp[b] = b;
            order[n++] = (unsigned char)b;
        }
    }
    for (b = 0; b < 256; b++) {
        if (!((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF))) {
            byte_cp[b] = 256 + extra++;
            order[n++] = (unsigned char)b;
        }
    }
}

static char *str_dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

static char *str_cat(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *d = malloc(na + nb + 1);
    if (d) {
        memcpy(d, a, na);
        memcpy(d + na, b, nb + 1);
    }
    return d;
}

/* Merge pairs as read from a file, before ids are known. */
struct merge_list {
    char **left, **right;
    size_t n, cap;
};

static void merge_list_free(struct merge_list *m)
{
    size_t i;
    for (i = 0; i < m->n; i++) {
        free(m->left[i]);
        free(m->right[i]);
    }
    free(m->left);
    free(m->right);
}

/* Parses "left right" (one space); returns 1 if added, 0 if the line is not a merge, -1 on OOM. */
static int merge_list_add(struct merge_list *m, const char *line, size_t len)
{
    const char *sp = memchr(line, ' ', len);
    if (!sp || sp == line || sp == line + len - 1 || memchr(sp + 1, ' ', (size_t)(line + len - sp - 1)))
        return 0;
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 1024;
        char **l = realloc(m->left, cap * sizeof(*l));
        char **r;
        if (!l)
            return -1;
        m->left = l;
        r = realloc(m->right, cap * sizeof(*r));
        if (!r)
            return -1;
        m->right = r;
        m->cap = cap;
    }
    m->left[m->n] = str_dup_n(line, (size_t)(sp - line));
    m->right[m->n] = str_dup_n(sp + 1, (size_t)(line + len - sp - 1));
    if (!m->left[m->n] || !m->right[m->n]) {
        free(m->left[m->n]);
        free(m->right[m->n]);
        return -1;
    }
    m->n++;
    return 1;
}

static size_t strip_eol(char *line)
{
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
        line[--n] = 0;
    return n;
}

/* Reads a whole line of any length with gzgets; returns NULL at end of file (or on a read error, which
 * the caller detects through gzerror). */
static char *gz_read_line(gzFile f, char **buf, size_t *cap)
{
    size_t len = 0;
    if (!*buf) {
        *cap = 1024;
        *buf = malloc(*cap);
        if (!*buf)
            return NULL;
    }
    for (;;) {
        if (!gzgets(f, *buf + len, (int)(*cap - len)))
            return len ? *buf : NULL;
        len += strlen(*buf + len);
        if (len > 0 && (*buf)[len - 1] == '\n')
            return *buf;
        if (len + 1 < *cap)
            return *buf; /* last line without newline */
        {
            char *nb = realloc(*buf, *cap * 2);
            if (!nb)
                return NULL;
            *buf = nb;
            *cap *= 2;
        }
    }
}

static int read_merges(const char *path, int skip_first_line, size_t limit, struct merge_list *m, char *err,
                       size_t err_size)
{
    gzFile f = gzopen(path, "rb");
    char *buf = NULL, *line;
    size_t cap = 0, line_no = 0;
    int errnum = 0, rc = 0;
    if (!f) {
        set_err(err, err_size, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    while (m->n < limit && (line = gz_read_line(f, &buf, &cap)) != NULL) {
        size_t n = strip_eol(line);
        line_no++;
        if (line_no == 1 && (skip_first_line || strncmp(line, "#version", 8) == 0))
            continue;
        if (n == 0)
            continue;
        rc = merge_list_add(m, line, n);
        if (rc < 0) {
            set_err(err, err_size, "out of memory reading '%s'", path);
            break;
        }
        if (rc == 0) {
            set_err(err, err_size, "'%s' line %zu is not a BPE merge (expected two tokens separated by one "
                    "space)", path, line_no);
            rc = -1;
            break;
        }
        rc = 0;
    }
    if (rc == 0) {
        gzerror(f, &errnum);
        if (errnum != Z_OK && errnum != Z_STREAM_END) {
            set_err(err, err_size, "cannot read '%s': corrupt or truncated gzip data", path);
            rc = -1;
        } else if (m->n == 0) {
            set_err(err, err_size, "'%s' holds no BPE merges (expected a CLIP merges list such as "
                    "bpe_simple_vocab_16e6.txt.gz)", path);
            rc = -1;
        }
    }
    free(buf);
    gzclose(f);
    return rc;
}

static int read_vocab(const char *path, sd_tokenizer_t *t, char *err, size_t err_size)
{
    FILE *f = fopen(path, "rb");
    char *line = NULL;
    size_t cap = 0, tok_cap = 0;
    ssize_t got;
    if (!f) {
        set_err(err, err_size, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    /* As in OnnxStream, the id of a token is its line index. */
    while ((got = getline(&line, &cap, f)) >= 0) {
        size_t n = strip_eol(line);
        (void)got;
        if (t->n_tokens == tok_cap) {
            size_t nc = tok_cap ? tok_cap * 2 : 65536;
            char **nt = realloc(t->tokens, nc * sizeof(*nt));
            if (!nt)
                break;
            t->tokens = nt;
            tok_cap = nc;
        }
        if (!(t->tokens[t->n_tokens] = str_dup_n(line, n)))
            break;
        t->n_tokens++;
    }
    free(line);
    if (!feof(f)) {
        set_err(err, err_size, "cannot read '%s' (read error or out of memory)", path);
        fclose(f);
        return -1;
    }
    fclose(f);
    if (t->n_tokens < 514) {
        set_err(err, err_size, "'%s' has %zu lines; expected a CLIP vocabulary (49408 tokens, one per line)",
                path, t->n_tokens);
        return -1;
    }
    return 0;
}

/* Derives the vocabulary from the merges as the reference does: byte tokens, byte tokens + </w>, one
 * token per merge, then the two special tokens. */
static int build_vocab_from_merges(sd_tokenizer_t *t, const struct merge_list *m)
{
    int32_t byte_cp[256];
    unsigned char order[256];
    size_t i;
    t->tokens = calloc(512 + m->n + 2, sizeof(*t->tokens));
    if (!t->tokens)
        return -1;
    /* Unfilled slots stay NULL, so a failure part-way leaves nothing for destroy to trip on. */
    t->n_tokens = 512 + m->n + 2;
    bytes_to_unicode(byte_cp, order);
    for (i = 0; i < 256; i++) {
        char u[8];
        size_t n = utf8_put(byte_cp[order[i]], u);
        u[n] = 0;
        if (!(t->tokens[i] = str_dup_n(u, n)) || !(t->tokens[256 + i] = str_cat(u, EOW)))
            return -1;
    }
    for (i = 0; i < m->n; i++)
        if (!(t->tokens[512 + i] = str_cat(m->left[i], m->right[i])))
            return -1;
    if (!(t->tokens[512 + m->n] = str_dup_n("<|startoftext|>", 15)) ||
        !(t->tokens[513 + m->n] = str_dup_n("<|endoftext|>", 13)))
        return -1;
    return 0;
}

/* Resolves merges and byte tokens to ids; `source` names the files for error messages. */
static int finish(sd_tokenizer_t *t, const struct merge_list *m, const char *source, char *err, size_t err_size)
{
    int32_t byte_cp[256];
    unsigned char order[256];
    size_t i, cap = 16;
    bytes_to_unicode(byte_cp, order);

    if (str_map_init(&t->vocab, t->n_tokens))
        goto oom;
    for (i = 0; i < t->n_tokens; i++)
        str_map_insert(t, (int32_t)i);

    t->bos = str_map_find(t, "<|startoftext|>", 15);
    t->eos = str_map_find(t, "<|endoftext|>", 13);
    if (t->bos < 0 || t->eos < 0) {
        set_err(err, err_size, "%s: the vocabulary has no <|startoftext|>/<|endoftext|> tokens", source);
        return -1;
    }
    for (i = 0; i < 256; i++) {
        char u[16];
        size_t n = utf8_put(byte_cp[i], u);
        memcpy(u + n, EOW, 5);
        t->byte_id[i] = str_map_find(t, u, n);
        t->byte_eow_id[i] = str_map_find(t, u, n + 4);
        if (t->byte_id[i] < 0 || t->byte_eow_id[i] < 0) {
            set_err(err, err_size, "%s: the vocabulary lacks the byte token for byte 0x%02zx", source, i);
            return -1;
        }
    }

    t->merge_left = malloc(m->n * sizeof(*t->merge_left));
    t->merge_right = malloc(m->n * sizeof(*t->merge_right));
    while (cap < m->n * 2)
        cap *= 2;
    t->pairs = malloc(cap * sizeof(*t->pairs));
    if (!t->merge_left || !t->merge_right || !t->pairs)
        goto oom;
    for (i = 0; i < cap; i++)
        t->pairs[i].key = UINT64_MAX;
    t->pair_mask = cap - 1;

    for (i = 0; i < m->n; i++) {
        int32_t l = str_map_find(t, m->left[i], strlen(m->left[i]));
        int32_t r = str_map_find(t, m->right[i], strlen(m->right[i]));
        char *joined = str_cat(m->left[i], m->right[i]);
        int32_t res;
        uint64_t key;
        size_t h;
        if (!joined)
            goto oom;
        res = str_map_find(t, joined, strlen(joined));
        free(joined);
        if (l < 0 || r < 0 || res < 0) {
            set_err(err, err_size, "%s: merge %zu ('%s' '%s') uses a token missing from the vocabulary", source,
                    i + 1, m->left[i], m->right[i]);
            return -1;
        }
        t->merge_left[i] = l;
        t->merge_right[i] = r;
        key = ((uint64_t)(uint32_t)l << 32) | (uint32_t)r;
        /* A repeated pair takes its later rank, as dict(zip(merges, ranks)) does. */
        for (h = pair_hash(key) & t->pair_mask;; h = (h + 1) & t->pair_mask) {
            if (t->pairs[h].key == UINT64_MAX || t->pairs[h].key == key) {
                t->pairs[h].key = key;
                t->pairs[h].rank = (int32_t)i;
                t->pairs[h].result = res;
                break;
            }
        }
    }
    t->n_merges = m->n;
    return 0;
oom:
    set_err(err, err_size, "%s: out of memory", source);
    return -1;
}

sd_tokenizer_t *sd_tokenizer_create(const char *path, char *err, size_t err_size)
{
    struct stat st;
    struct merge_list merges = {0};
    sd_tokenizer_t *t;
    char source[4200];

    if (!path || !*path) {
        set_err(err, err_size, "tokenizer path is empty (expected a folder with vocab.txt and merges.txt, or "
                "bpe_simple_vocab_16e6.txt.gz)");
        return NULL;
    }
    if (stat(path, &st) != 0) {
        set_err(err, err_size, "tokenizer path '%s': %s (expected a folder with vocab.txt and merges.txt, or "
                "bpe_simple_vocab_16e6.txt.gz)", path, strerror(errno));
        return NULL;
    }
    t = calloc(1, sizeof(*t));
    if (!t) {
        set_err(err, err_size, "out of memory");
        return NULL;
    }
    if (S_ISDIR(st.st_mode)) {
        char vocab_path[4096], merges_path[4096];
        const char *missing;
        size_t limit;
        int n1 = snprintf(vocab_path, sizeof(vocab_path), "%s/vocab.txt", path);
        int n2 = snprintf(merges_path, sizeof(merges_path), "%s/merges.txt", path);
        if (n1 < 0 || n2 < 0 || (size_t)n1 >= sizeof(vocab_path) || (size_t)n2 >= sizeof(merges_path)) {
            set_err(err, err_size, "tokenizer path '%s' is too long", path);
            goto fail;
        }
        snprintf(source, sizeof(source), "tokenizer folder '%s'", path);
        missing = access(vocab_path, R_OK) != 0    ? vocab_path
                  : access(merges_path, R_OK) != 0 ? merges_path
                                                   : NULL;
        if (missing) {
            set_err(err, err_size, "cannot read '%s': %s (a tokenizer folder must hold vocab.txt and merges.txt)",
                    missing, strerror(errno));
            goto fail;
        }
        if (read_vocab(vocab_path, t, err, err_size))
            goto fail;
        /* CLIP's vocabulary holds one token per used merge; merges beyond that are not part of the model. */
        limit = t->n_tokens - 514;
        if (read_merges(merges_path, 0, limit, &merges, err, err_size))
            goto fail;
    } else {
        snprintf(source, sizeof(source), "'%s'", path);
        if (read_merges(path, 1, CLIP_MERGES, &merges, err, err_size))
            goto fail;
        if (build_vocab_from_merges(t, &merges)) {
            set_err(err, err_size, "%s: out of memory", source);
            goto fail;
        }
    }
    if (finish(t, &merges, source, err, err_size))
        goto fail;
    merge_list_free(&merges);
    return t;
fail:
    merge_list_free(&merges);
    sd_tokenizer_destroy(t);
    return NULL;
}

void sd_tokenizer_destroy(sd_tokenizer_t *t)
{
    size_t i;
    if (!t)
        return;
    for (i = 0; i < t->n_tokens; i++)
        free(t->tokens[i]);
    free(t->tokens);
    free(t->vocab.slots);
    free(t->merge_left);
    free(t->merge_right);
    free(t->pairs);
    free(t);
}

size_t sd_tokenizer_vocab_size(const sd_tokenizer_t *t)
{
    return t->n_tokens;
}

const char *sd_tokenizer_token(const sd_tokenizer_t *t, int32_t id)
{
    return (id >= 0 && (size_t)id < t->n_tokens) ? t->tokens[id] : NULL;
}

size_t sd_tokenizer_merge_count(const sd_tokenizer_t *t)
{
    return t->n_merges;
}

int sd_tokenizer_merge(const sd_tokenizer_t *t, size_t rank, int32_t *left, int32_t *right)
{
    if (rank >= t->n_merges)
        return -1;
    *left = t->merge_left[rank];
    *right = t->merge_right[rank];
    return 0;
}

/* ---------------------------------------------------------------- encoding */

struct id_buf {
    int32_t *v;
    size_t n, cap;
};

static int id_reserve(struct id_buf *b, size_t extra)
{
    if (b->n + extra > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        int32_t *v;
        while (cap < b->n + extra)
            cap *= 2;
        v = realloc(b->v, cap * sizeof(*v));
        if (!v)
            return -1;
        b->v = v;
        b->cap = cap;
    }
    return 0;
}

/* BPE over one pre-token's bytes: repeatedly merge every occurrence (left to right) of the lowest-ranked
 * adjacent pair, exactly as the reference's loop does. Appends the resulting ids to `out`. */
static int bpe_word(const sd_tokenizer_t *t, const unsigned char *bytes, size_t n, struct id_buf *out)
{
    int32_t *w;
    size_t len = n, i;
    if (id_reserve(out, n))
        return -1;
    w = out->v + out->n;
    for (i = 0; i + 1 < n; i++)
        w[i] = t->byte_id[bytes[i]];
    w[n - 1] = t->byte_eow_id[bytes[n - 1]];
    while (len > 1) {
        const struct pair_slot *best = NULL;
        size_t j, k;
        for (i = 0; i + 1 < len; i++) {
            const struct pair_slot *p = pair_find(t, w[i], w[i + 1]);
            if (p && (!best || p->rank < best->rank))
                best = p;
        }
        if (!best)
            break;
        for (j = 0, k = 0; j < len; k++) {
            uint64_t key = j + 1 < len ? (((uint64_t)(uint32_t)w[j] << 32) | (uint32_t)w[j + 1]) : UINT64_MAX;
            if (key == best->key) {
                w[k] = best->result;
                j += 2;
            } else {
                w[k] = w[j++];
            }
        }
        len = k;
    }
    out->n += len;
    return 0;
}

static int match_literal(const int32_t *s, size_t n, const char *lit)
{
    size_t i, m = strlen(lit);
    if (m > n)
        return 0;
    for (i = 0; i < m; i++)
        if (s[i] != (unsigned char)lit[i])
            return 0;
    return (int)m;
}

/* Length of a contraction ('s 't 're 've 'm 'll 'd) at s, or 0. */
static size_t contraction(const int32_t *s, size_t n)
{
    static const char *const forms[] = {"'s", "'t", "'re", "'ve", "'m", "'ll", "'d"};
    size_t k;
    for (k = 0; k < sizeof(forms) / sizeof(forms[0]); k++) {
        int m = match_literal(s, n, forms[k]);
        if (m)
            return (size_t)m;
    }
    return 0;
}

/* Cleans, pre-tokenizes and BPE-encodes `len` bytes of text, appending ids to `out`. */
static int encode_text(const sd_tokenizer_t *t, const char *text, size_t len, struct id_buf *out)
{
    struct cp_buf cps = {0};
    unsigned char *bytes = NULL;
    size_t i = 0, bytes_cap = 0;
    int rc = -1;
    if (clean_text(text, len, &cps))
        goto done;
    while (i < cps.n) {
        const int32_t *s = cps.v + i;
        size_t rest = cps.n - i, m, k, nb;
        int cls = classify(s[0]);
        int special;
        if (cls == CLASS_SPACE) {
            i++;
            continue;
        }
        if ((special = match_literal(s, rest, "<|startoftext|>")) != 0 ||
            (special = match_literal(s, rest, "<|endoftext|>")) != 0) {
            if (id_reserve(out, 1))
                goto done;
            out->v[out->n++] = special == 15 ? t->bos : t->eos;
            i += (size_t)special;
            continue;
        }
        if ((m = contraction(s, rest)) == 0) {
            m = 1;
            if (cls != CLASS_NUMBER)
                while (m < rest && classify(s[m]) == cls)
                    m++;
        }
        if (bytes_cap < m * 4) {
            unsigned char *nb2 = realloc(bytes, m * 4);
            if (!nb2)
                goto done;
            bytes = nb2;
            bytes_cap = m * 4;
        }
        for (k = 0, nb = 0; k < m; k++)
            nb += utf8_put(s[k], (char *)bytes + nb);
        if (bpe_word(t, bytes, nb, out))
            goto done;
        i += m;
    }
    rc = 0;
done:
    free(cps.v);
    free(bytes);
    return rc;
}

int sd_tokenizer_encode(const sd_tokenizer_t *t, const char *text, int32_t **ids, size_t *count, char *err,
                        size_t err_size)
{
    struct id_buf out = {0};
    *ids = NULL;
    *count = 0;
    if (encode_text(t, text, strlen(text), &out)) {
        free(out.v);
        set_err(err, err_size, "tokenizer: out of memory");
        return -1;
    }
    if (out.n == 0) {
        free(out.v);
        out.v = NULL;
    }
    *ids = out.v;
    *count = out.n;
    return 0;
}

/* ---------------------------------------------------------------- emphasis and chunks */

struct segment {
    size_t start, len; /* in the literal-text buffer */
    double weight;
};

struct seg_list {
    struct segment *v;
    size_t n, cap;
    char *text;
    size_t text_len;
};

static int seg_add(struct seg_list *l, const char *s, size_t n)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct segment *v = realloc(l->v, cap * sizeof(*v));
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    memcpy(l->text + l->text_len, s, n);
    l->v[l->n].start = l->text_len;
    l->v[l->n].len = n;
    l->v[l->n].weight = 1.0;
    l->text_len += n;
    l->n++;
    return 0;
}

static void seg_scale(struct seg_list *l, size_t from, double factor)
{
    for (; from < l->n; from++)
        l->v[from].weight *= factor;
}

static int is_ws_ascii(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Matches `:\s*([+-]?[.\d]+)\s*\)` at p; returns its length and the weight, or 0. */
static size_t match_weight(const char *p, double *weight)
{
    const char *q = p + 1, *num;
    char buf[64], *end;
    size_t n;
    while (is_ws_ascii(*q))
        q++;
    num = q;
    if (*q == '+' || *q == '-')
        q++;
    if (!((*q >= '0' && *q <= '9') || *q == '.'))
        return 0;
    while ((*q >= '0' && *q <= '9') || *q == '.')
        q++;
    n = (size_t)(q - num);
    while (is_ws_ascii(*q))
        q++;
    if (*q != ')' || n >= sizeof(buf))
        return 0;
    memcpy(buf, num, n);
    buf[n] = 0;
    *weight = strtod(buf, &end);
    /* "1.2.3" is not a number; the text is then kept literally rather than guessed at. */
    if (*end != 0)
        return 0;
    return (size_t)(q + 1 - p);
}

/* A1111's parse_prompt_attention: literal text segments with their weights, equal neighbours merged. */
static int parse_attention(const char *prompt, struct seg_list *l)
{
    size_t len = strlen(prompt), i = 0, n_round = 0, n_square = 0, k;
    size_t *round = malloc((len + 1) * sizeof(*round));
    size_t *square = malloc((len + 1) * sizeof(*square));
    int rc = -1;
    l->text = malloc(len + 1);
    if (!round || !square || !l->text)
        goto done;
    while (i < len) {
        char c = prompt[i];
        double w;
        size_t m;
        if (c == '\\') {
            char d = prompt[i + 1];
            if (d == '(' || d == ')' || d == '[' || d == ']' || d == '\\') {
                if (seg_add(l, prompt + i + 1, 1))
                    goto done;
                i += 2;
            } else {
                i++; /* a lone backslash is dropped, as in A1111 */
            }
        } else if (c == '(') {
            round[n_round++] = l->n;
            i++;
        } else if (c == '[') {
            square[n_square++] = l->n;
            i++;
        } else if (c == ':' && n_round > 0 && (m = match_weight(prompt + i, &w)) != 0) {
            seg_scale(l, round[--n_round], w);
            i += m;
        } else if (c == ')' && n_round > 0) {
            seg_scale(l, round[--n_round], 1.1);
            i++;
        } else if (c == ']' && n_square > 0) {
            seg_scale(l, square[--n_square], 1 / 1.1);
            i++;
        } else if (c == ':' || c == ')' || c == ']') {
            if (seg_add(l, prompt + i, 1))
                goto done;
            i++;
        } else {
            size_t j = i;
            while (j < len && prompt[j] != '\\' && prompt[j] != '(' && prompt[j] != ')' && prompt[j] != '[' &&
                   prompt[j] != ']' && prompt[j] != ':')
                j++;
            if (seg_add(l, prompt + i, j - i))
                goto done;
            i = j;
        }
    }
    for (k = 0; k < n_round; k++)
        seg_scale(l, round[k], 1.1);
    for (k = 0; k < n_square; k++)
        seg_scale(l, square[k], 1 / 1.1);
    /* Merge neighbours of equal weight: "a (b) c" must tokenize "a " and " c" apart but "a" ":" "b" together. */
    if (l->n > 1) {
        size_t out = 0;
        for (k = 1; k < l->n; k++) {
            if (l->v[k].weight == l->v[out].weight && l->v[out].start + l->v[out].len == l->v[k].start)
                l->v[out].len += l->v[k].len;
            else
                l->v[++out] = l->v[k];
        }
        l->n = out + 1;
    }
    rc = 0;
done:
    free(round);
    free(square);
    return rc;
}

int sd_tokenizer_encode_chunks(const sd_tokenizer_t *t, const char *prompt, sd_token_chunks_t *out, char *err,
                               size_t err_size)
{
    struct seg_list segs = {0};
    struct id_buf ids = {0};
    float *weights = NULL;
    size_t weights_cap = 0, s, c, total;
    int rc = -1;

    out->count = 0;
    out->ids = NULL;
    out->weights = NULL;
    if (parse_attention(prompt, &segs))
        goto oom;
    for (s = 0; s < segs.n; s++) {
        size_t before = ids.n, k;
        if (encode_text(t, segs.text + segs.v[s].start, segs.v[s].len, &ids))
            goto oom;
        if (ids.n > weights_cap) {
            float *nw = realloc(weights, ids.cap * sizeof(*nw));
            if (!nw)
                goto oom;
            weights = nw;
            weights_cap = ids.cap;
        }
        for (k = before; k < ids.n; k++)
            weights[k] = (float)segs.v[s].weight;
    }

    total = ids.n;
    out->count = total == 0 ? 1 : (total + SD_TOKENIZER_CHUNK_TOKENS - 1) / SD_TOKENIZER_CHUNK_TOKENS;
    out->ids = malloc(out->count * SD_TOKENIZER_CONTEXT * sizeof(*out->ids));
    out->weights = malloc(out->count * SD_TOKENIZER_CONTEXT * sizeof(*out->weights));
    if (!out->ids || !out->weights)
        goto oom;
    for (c = 0; c < out->count; c++) {
        int32_t *ci = out->ids + c * SD_TOKENIZER_CONTEXT;
        float *cw = out->weights + c * SD_TOKENIZER_CONTEXT;
        size_t first = c * SD_TOKENIZER_CHUNK_TOKENS, k, n;
        n = total - first < SD_TOKENIZER_CHUNK_TOKENS ? total - first : SD_TOKENIZER_CHUNK_TOKENS;
        if (total == 0)
            n = 0;
        for (k = 0; k < SD_TOKENIZER_CONTEXT; k++) {
            ci[k] = t->eos; /* SD 1.x pads with <|endoftext|> (SD_TOKEN_PAD) */
            cw[k] = 1.0f;
        }
        ci[0] = t->bos;
        for (k = 0; k < n; k++) {
            ci[1 + k] = ids.v[first + k];
            cw[1 + k] = weights[first + k];
        }
        ci[1 + n] = t->eos;
    }
    rc = 0;
    goto done;
oom:
    set_err(err, err_size, "tokenizer: out of memory");
    sd_token_chunks_free(out);
done:
    free(segs.v);
    free(segs.text);
    free(ids.v);
    free(weights);
    return rc;
}

void sd_token_chunks_free(sd_token_chunks_t *chunks)
{
    if (!chunks)
        return;
    free(chunks->ids);
    free(chunks->weights);
    chunks->ids = NULL;
    chunks->weights = NULL;
    chunks->count = 0;
}
