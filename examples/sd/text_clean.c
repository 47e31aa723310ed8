/* CLIP's text cleaning; see text_clean.h. */
#include "text_clean.h"

#include <stdlib.h>
#include <string.h>

#include "unicode.h"

/* ---------------------------------------------------------------- text cleaning */

static int cp_push(struct sd_cp_buf *b, int32_t c)
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

static int cp_push_str(struct sd_cp_buf *b, const char *s)
{
    for (; *s; s++)
        if (cp_push(b, (unsigned char)*s))
            return -1;
    return 0;
}

/* The parts of ftfy.fix_text that change CLIP tokens: control characters removed, curly quotes
 * straightened, Latin ligatures expanded, full-width ASCII folded. */
static int ftfy_subset(const int32_t *in, size_t n, struct sd_cp_buf *out)
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
static int html_unescape(const int32_t *in, size_t n, struct sd_cp_buf *out)
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

int sd_clean_text(const char *text, size_t len, struct sd_cp_buf *out)
{
    struct sd_cp_buf a = {0}, b = {0};
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    int pending_space = 0, rc = -1;

    while (i < len) {
        int32_t c;
        i += sd_utf8_get(s + i, len - i, &c);
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
        if (sd_is_space(c)) {
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
        } else if (cp_push(out, (c & SD_INVALID_BYTE_FLAG) ? c : sd_lower_cp(c))) {
            goto done;
        }
    }
    rc = 0;
done:
    free(a.v);
    free(b.v);
    return rc;
}
