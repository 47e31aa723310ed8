/* Tests of the CLIP tokenizer. argv[1] is the shared-data folder (holding data/clip/). */
#include "tokenizer.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int encode_equals(const sd_tokenizer_t *tok, const char *text, const int32_t *want, size_t want_n)
{
    int32_t *ids = NULL;
    size_t n = 0, i;
    int ok;
    char err[256];
    if (sd_tokenizer_encode(tok, text, &ids, &n, err, sizeof(err)) != 0) {
        printf("  encode error: %s\n", err);
        return 0;
    }
    ok = n == want_n && (n == 0 || memcmp(ids, want, n * sizeof(*ids)) == 0);
    if (!ok) {
        printf("  prompt: %s\n  got: ", text);
        for (i = 0; i < n; i++)
            printf(" %d", ids[i]);
        printf("\n  want:");
        for (i = 0; i < want_n; i++)
            printf(" %d", want[i]);
        printf("\n");
    }
    free(ids);
    return ok;
}

/* Every prompt of tokens.tsv must encode to exactly its reference ids. Returns the number of prompts. */
static int check_reference(const sd_tokenizer_t *tok, const char *tsv_path, const char *label)
{
    FILE *f = fopen(tsv_path, "r");
    char *line = NULL;
    size_t cap = 0;
    int prompts = 0, good = 0;
    char what[512];
    if (!f) {
        check(0, "open tokens.tsv");
        return 0;
    }
    while (getline(&line, &cap, f) >= 0) {
        char *tab = strchr(line, '\t'), *p, *end;
        int32_t want[512];
        size_t n = 0;
        if (line[0] == '#' || !tab)
            continue;
        *tab = 0;
        for (p = tab + 1;; p = end) {
            long v = strtol(p, &end, 10);
            if (end == p || n == 512)
                break;
            want[n++] = (int32_t)v;
        }
        prompts++;
        if (encode_equals(tok, line, want, n))
            good++;
        else {
            snprintf(what, sizeof(what), "%s: reference ids for \"%s\"", label, line);
            check(0, what);
        }
    }
    free(line);
    fclose(f);
    printf("%s: %d/%d reference prompts identical\n", label, good, prompts);
    check(prompts == 20 && good == prompts, "all 20 reference prompts");
    return prompts;
}

static int near(float a, float b)
{
    return fabsf(a - b) < 1e-5f;
}

/* Finds the weight of the first token equal to `id` in chunk 0, or NAN. */
static float weight_of(const sd_token_chunks_t *c, int32_t id)
{
    int k;
    for (k = 1; k < SD_TOKENIZER_CONTEXT; k++)
        if (c->ids[k] == id)
            return c->weights[k];
    return NAN;
}

static int32_t single_id(const sd_tokenizer_t *tok, const char *word)
{
    int32_t *ids = NULL, id = -1;
    size_t n = 0;
    if (sd_tokenizer_encode(tok, word, &ids, &n, NULL, 0) == 0 && n == 1)
        id = ids[0];
    free(ids);
    return id;
}

static void check_emphasis(const sd_tokenizer_t *tok)
{
    sd_token_chunks_t c = {0};
    char err[256];
    int32_t cat = single_id(tok, "cat"), dog = single_id(tok, "dog"), red = single_id(tok, "red");
    int32_t paren = single_id(tok, "(");

    check(cat > 0 && dog > 0 && red > 0 && paren > 0, "single-token words");
    check(sd_tokenizer_encode_chunks(tok, "a (cat) and a dog", &c, err, sizeof(err)) == 0, "chunks (cat)");
    check(near(weight_of(&c, cat), 1.1f) && near(weight_of(&c, dog), 1.0f), "(cat) weight 1.1");
    sd_token_chunks_free(&c);

    check(sd_tokenizer_encode_chunks(tok, "((cat)) dog", &c, err, sizeof(err)) == 0, "chunks ((cat))");
    check(near(weight_of(&c, cat), 1.21f) && near(weight_of(&c, dog), 1.0f), "((cat)) weight 1.21");
    sd_token_chunks_free(&c);

    check(sd_tokenizer_encode_chunks(tok, "[cat] dog", &c, err, sizeof(err)) == 0, "chunks [cat]");
    check(near(weight_of(&c, cat), 1.0f / 1.1f), "[cat] weight 1/1.1");
    sd_token_chunks_free(&c);

    check(sd_tokenizer_encode_chunks(tok, "(red cat:1.3), dog", &c, err, sizeof(err)) == 0, "chunks (x:1.3)");
    check(near(weight_of(&c, cat), 1.3f) && near(weight_of(&c, red), 1.3f) && near(weight_of(&c, dog), 1.0f),
          "(red cat:1.3) weight 1.3");
    sd_token_chunks_free(&c);

    check(sd_tokenizer_encode_chunks(tok, "((cat:0.5)) dog", &c, err, sizeof(err)) == 0, "chunks nested");
    check(near(weight_of(&c, cat), 0.55f), "((cat:0.5)) weight 0.55");
    sd_token_chunks_free(&c);

    check(sd_tokenizer_encode_chunks(tok, "\\(cat\\) dog", &c, err, sizeof(err)) == 0, "chunks escaped");
    check(near(weight_of(&c, cat), 1.0f) && near(weight_of(&c, paren), 1.0f), "escaped brackets are literal");
    sd_token_chunks_free(&c);

    check(sd_tokenizer_encode_chunks(tok, "(cat dog", &c, err, sizeof(err)) == 0, "chunks unbalanced");
    check(near(weight_of(&c, cat), 1.1f) && near(weight_of(&c, dog), 1.1f), "unclosed ( weights to the end");
    sd_token_chunks_free(&c);

    /* Plain text must tokenize exactly as sd_tokenizer_encode does. */
    {
        int32_t *ids = NULL;
        size_t n = 0, k;
        int same;
        const char *p = "a photo of an astronaut riding a horse on mars";
        sd_tokenizer_encode(tok, p, &ids, &n, NULL, 0);
        check(sd_tokenizer_encode_chunks(tok, p, &c, err, sizeof(err)) == 0 && c.count == 1, "plain chunk");
        same = c.ids[0] == SD_TOKEN_BOS && c.ids[n + 1] == SD_TOKEN_EOS;
        for (k = 0; k < n; k++)
            same = same && c.ids[k + 1] == ids[k] && c.weights[k + 1] == 1.0f;
        for (k = n + 2; k < SD_TOKENIZER_CONTEXT; k++)
            same = same && c.ids[k] == SD_TOKEN_PAD && c.weights[k] == 1.0f;
        check(same, "plain prompt: BOS, ids, EOS, padding with 49407 to 77");
        free(ids);
        sd_token_chunks_free(&c);
    }

    check(sd_tokenizer_encode_chunks(tok, "", &c, err, sizeof(err)) == 0 && c.count == 1 &&
              c.ids[0] == SD_TOKEN_BOS && c.ids[1] == SD_TOKEN_EOS && c.ids[76] == SD_TOKEN_PAD,
          "empty prompt is one chunk");
    sd_token_chunks_free(&c);
}

static void check_chunking(const sd_tokenizer_t *tok)
{
    sd_token_chunks_t c = {0};
    char prompt[2048] = "";
    int i, ok = 1;
    int32_t cat = single_id(tok, "cat");
    /* 200 single-token words -> 75 + 75 + 50 */
    for (i = 0; i < 200; i++)
        strcat(prompt, "cat ");
    check(sd_tokenizer_encode_chunks(tok, prompt, &c, NULL, 0) == 0 && c.count == 3, "200 tokens -> 3 chunks");
    if (c.count == 3) {
        for (i = 0; i < 3; i++) {
            const int32_t *ci = c.ids + i * SD_TOKENIZER_CONTEXT;
            int k, n = i < 2 ? 75 : 50;
            ok = ok && ci[0] == SD_TOKEN_BOS && ci[n + 1] == SD_TOKEN_EOS;
            for (k = 1; k <= n; k++)
                ok = ok && ci[k] == cat;
            for (k = n + 2; k < SD_TOKENIZER_CONTEXT; k++)
                ok = ok && ci[k] == SD_TOKEN_PAD;
        }
    }
    check(ok, "chunk layout: BOS + 75 + EOS, last chunk padded");
    sd_token_chunks_free(&c);

    prompt[0] = 0;
    for (i = 0; i < 75; i++)
        strcat(prompt, "cat ");
    check(sd_tokenizer_encode_chunks(tok, prompt, &c, NULL, 0) == 0 && c.count == 1 && c.ids[76] == SD_TOKEN_EOS,
          "75 tokens fit one chunk");
    sd_token_chunks_free(&c);
}

static void check_errors(const char *shared)
{
    char err[512] = "", path[4096];
    sd_tokenizer_t *t;
    FILE *f;

    t = sd_tokenizer_create("/nonexistent/tokenizer", err, sizeof(err));
    check(!t && strstr(err, "/nonexistent/tokenizer") != NULL, "missing path gives an error naming it");

    snprintf(path, sizeof(path), "/tmp/sd_tok_empty_%ld.txt.gz", (long)getpid());
    f = fopen(path, "wb");
    if (f)
        fclose(f);
    err[0] = 0;
    t = sd_tokenizer_create(path, err, sizeof(err));
    check(!t && err[0] != 0, "empty vocab file gives an error");
    sd_tokenizer_destroy(t);

    f = fopen(path, "wb");
    if (f) {
        fputs("#version: 0.2\nthis line has three parts\n", f);
        fclose(f);
    }
    err[0] = 0;
    t = sd_tokenizer_create(path, err, sizeof(err));
    check(!t && strstr(err, "line 2") != NULL, "corrupt merges file gives an error naming the line");
    sd_tokenizer_destroy(t);

    /* A truncated gzip stream. */
    {
        char src[4096];
        FILE *in;
        unsigned char buf[20000];
        size_t n;
        snprintf(src, sizeof(src), "%s/data/clip/bpe_simple_vocab_16e6.txt.gz", shared);
        in = fopen(src, "rb");
        n = in ? fread(buf, 1, sizeof(buf), in) : 0;
        if (in)
            fclose(in);
        f = fopen(path, "wb");
        if (f) {
            fwrite(buf, 1, n, f);
            fclose(f);
        }
        err[0] = 0;
        t = sd_tokenizer_create(path, err, sizeof(err));
        check(!t && err[0] != 0, "truncated .gz gives an error");
        sd_tokenizer_destroy(t);
    }
    remove(path);

    /* A folder without the files. */
    snprintf(path, sizeof(path), "/tmp/sd_tok_emptydir_%ld", (long)getpid());
    mkdir(path, 0700);
    err[0] = 0;
    t = sd_tokenizer_create(path, err, sizeof(err));
    check(!t && strstr(err, "vocab.txt") != NULL, "folder without vocab.txt gives an error naming it");
    rmdir(path);
}

/* Writes vocab.txt + merges.txt in OnnxStream's layout from a loaded tokenizer. */
static int write_onnxstream_folder(const sd_tokenizer_t *tok, const char *dir)
{
    char path[4096];
    FILE *f;
    size_t i;
    mkdir(dir, 0700);
    snprintf(path, sizeof(path), "%s/vocab.txt", dir);
    if (!(f = fopen(path, "w")))
        return -1;
    for (i = 0; i < sd_tokenizer_vocab_size(tok); i++)
        fprintf(f, "%s\n", sd_tokenizer_token(tok, (int32_t)i));
    fclose(f);
    snprintf(path, sizeof(path), "%s/merges.txt", dir);
    if (!(f = fopen(path, "w")))
        return -1;
    fprintf(f, "#version: 0.2\n");
    for (i = 0; i < sd_tokenizer_merge_count(tok); i++) {
        int32_t l, r;
        sd_tokenizer_merge(tok, i, &l, &r);
        fprintf(f, "%s %s\n", sd_tokenizer_token(tok, l), sd_tokenizer_token(tok, r));
    }
    fclose(f);
    return 0;
}

static void remove_folder(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/vocab.txt", dir);
    remove(path);
    snprintf(path, sizeof(path), "%s/merges.txt", dir);
    remove(path);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    char gz[4096], tsv[4096], dir[256], err[512] = "";
    sd_tokenizer_t *tok, *tok2;
    if (argc < 2) {
        printf("usage: %s SHARED_DATA_FOLDER\n0 passed, 1 failed\n", argv[0]);
        return 1;
    }
    snprintf(gz, sizeof(gz), "%s/data/clip/bpe_simple_vocab_16e6.txt.gz", argv[1]);
    snprintf(tsv, sizeof(tsv), "%s/data/clip/tokens.tsv", argv[1]);

    tok = sd_tokenizer_create(gz, err, sizeof(err));
    check(tok != NULL, "load bpe_simple_vocab_16e6.txt.gz");
    if (!tok) {
        printf("  %s\n", err);
        return check_summary();
    }
    check(sd_tokenizer_vocab_size(tok) == 49408, "vocab size 49408");
    check(sd_tokenizer_token(tok, 49406) && strcmp(sd_tokenizer_token(tok, 49406), "<|startoftext|>") == 0,
          "49406 is <|startoftext|>");
    check(sd_tokenizer_token(tok, 320) && strcmp(sd_tokenizer_token(tok, 320), "a</w>") == 0, "320 is a</w>");

    check_reference(tok, tsv, "gz");
    {
        static const int32_t want_special[] = {49406, 320, 49407};
        check(encode_equals(tok, "<|startoftext|>a<|endoftext|>", want_special, 3), "special tokens in text");
    }
    check_emphasis(tok);
    check_chunking(tok);
    check_errors(argv[1]);

    snprintf(dir, sizeof(dir), "/tmp/sd_tok_onnxstream_%ld", (long)getpid());
    check(write_onnxstream_folder(tok, dir) == 0, "write vocab.txt + merges.txt");
    tok2 = sd_tokenizer_create(dir, err, sizeof(err));
    check(tok2 != NULL, "load vocab.txt + merges.txt folder");
    if (!tok2)
        printf("  %s\n", err);
    else {
        check(sd_tokenizer_vocab_size(tok2) == 49408 && sd_tokenizer_merge_count(tok2) == 48894,
              "folder: 49408 tokens, 48894 merges");
        check_reference(tok2, tsv, "vocab.txt+merges.txt");
    }
    sd_tokenizer_destroy(tok2);
    remove_folder(dir);

    sd_tokenizer_destroy(tok);
    return check_summary();
}
