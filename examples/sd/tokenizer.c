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

#include "prompt_emphasis.h"
#include "text_clean.h"
#include "unicode.h"

/* SD's tokenizer keeps the first 49152 - 256 - 2 merges of the published list. */
#define CLIP_MERGES 48894
#define EOW "</w>"

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
        size_t n = sd_utf8_put(byte_cp[order[i]], u);
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
        size_t n = sd_utf8_put(byte_cp[i], u);
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
    struct sd_cp_buf cps = {0};
    unsigned char *bytes = NULL;
    size_t i = 0, bytes_cap = 0;
    int rc = -1;
    if (sd_clean_text(text, len, &cps))
        goto done;
    while (i < cps.n) {
        const int32_t *s = cps.v + i;
        size_t rest = cps.n - i, m, k, nb;
        int cls = sd_char_class(s[0]);
        int special;
        if (cls == SD_CHAR_SPACE) {
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
            if (cls != SD_CHAR_NUMBER)
                while (m < rest && sd_char_class(s[m]) == cls)
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
            nb += sd_utf8_put(s[k], (char *)bytes + nb);
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

/* ---------------------------------------------------------------- chunks */

int sd_tokenizer_encode_chunks(const sd_tokenizer_t *t, const char *prompt, sd_token_chunks_t *out, char *err,
                               size_t err_size)
{
    struct sd_prompt_segments segs = {0};
    struct id_buf ids = {0};
    float *weights = NULL;
    size_t weights_cap = 0, s, c, total;
    int rc = -1;

    out->count = 0;
    out->ids = NULL;
    out->weights = NULL;
    if (sd_parse_prompt_attention(prompt, &segs))
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
