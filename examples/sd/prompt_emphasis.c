/* A1111-style prompt emphasis; see prompt_emphasis.h. */
#include "prompt_emphasis.h"

#include <stdlib.h>
#include <string.h>

static int seg_add(struct sd_prompt_segments *l, const char *s, size_t n)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        struct sd_prompt_segment *v = realloc(l->v, cap * sizeof(*v));
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

static void seg_scale(struct sd_prompt_segments *l, size_t from, double factor)
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

int sd_parse_prompt_attention(const char *prompt, struct sd_prompt_segments *l)
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
