/*
 * test_image.c - PNG write/read round trip with the parameters chunk, error paths that must leave no file,
 * the float -> byte conversion, latents files, and decoding a real PNG from the shared data folder.
 * Usage: test_sd_image SHARED_FOLDER
 */
#include "image.h"
#include "check.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static void join(char *out, size_t size, const char *name)
{
    snprintf(out, size, "%s/%s", tmpdir, name);
}

/* Number of entries in the temp folder, to prove failed writes leave no temporary files behind. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static unsigned char *slurp(const char *path, long *size)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf;
    long n = file_size(path);
    *size = 0;
    if (!f || n < 0) {
        if (f) fclose(f);
        return NULL;
    }
    buf = (unsigned char *)malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = n;
    return buf;
}

static int contains(const unsigned char *hay, long n, const char *needle)
{
    long k = (long)strlen(needle), i;
    for (i = 0; i + k <= n; i++)
        if (memcmp(hay + i, needle, (size_t)k) == 0) return 1;
    return 0;
}

static void test_format_parameters(void)
{
    sd_image_params_t p;
    char *s;
    memset(&p, 0, sizeof p);
    p.prompt = "a photo of an astronaut riding a horse on mars";
    p.negative_prompt = "blurry, low quality";
    p.steps = 20;
    p.sampler = "euler_a";
    p.cfg_scale = 7.5;
    p.seed = 18446744073709551615ull;
    p.width = 512;
    p.height = 768;
    p.model = "stable-diffusion-1.5";
    s = sd_image_format_parameters(&p);
    CHECK(s && strcmp(s, "a photo of an astronaut riding a horse on mars\nNegative prompt: blurry, low quality\n"
                         "Steps: 20, Sampler: euler_a, CFG scale: 7.5, Seed: 18446744073709551615, Size: 512x768, "
                         "Model: stable-diffusion-1.5") == 0);
    free(s);

    p.negative_prompt = "";
    p.model = NULL;
    p.cfg_scale = 7;
    p.seed = 42;
    s = sd_image_format_parameters(&p);
    CHECK(s && strcmp(s, "a photo of an astronaut riding a horse on mars\n"
                         "Steps: 20, Sampler: euler_a, CFG scale: 7, Seed: 42, Size: 512x768") == 0);
    free(s);
    CHECK(sd_image_format_parameters(NULL) == NULL);
}

static void test_conversion(void)
{
    /* 2x1 image, planes R, G, B. */
    float nchw[6] = {-1.0f, 1.0f, 0.0f, NAN, 2.0f, -3.0f};
    uint8_t rgb[6];
    float more[3] = {-0.5f, 0.5f, 0.9f}; /* 63.75 -> 64, 191.25 -> 191, 242.25 -> 242 */
    uint8_t one[3];
    sd_image_from_nchw(nchw, 2, 1, rgb);
    /* pixel 0 = (R[0], G[0], B[0]) = (-1, 0, 2) */
    CHECK(rgb[0] == 0 && rgb[1] == 128 && rgb[2] == 255);
    /* pixel 1 = (1, NaN, -3) */
    CHECK(rgb[3] == 255 && rgb[4] == 0 && rgb[5] == 0);
    sd_image_from_nchw(more, 1, 1, one);
    CHECK(one[0] == 64 && one[1] == 191 && one[2] == 242);
}

static void make_gradient(uint8_t *rgb, int w, int h)
{
    int x, y;
    for (y = 0; y < h; y++)
        for (x = 0; x < w; x++) {
            uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            p[0] = (uint8_t)(x * 255 / (w - 1));
            p[1] = (uint8_t)(y * 255 / (h - 1));
            p[2] = (uint8_t)((x * 7 + y * 13) & 255);
        }
}

static void roundtrip(const char *name, const char *parameters, const char *chunk)
{
    enum { W = 67, H = 45 };
    uint8_t src[W * H * 3];
    uint8_t *back = NULL;
    char *text = NULL;
    char path[512], err[512];
    int w = 0, h = 0;
    unsigned char *bytes;
    long n;

    make_gradient(src, W, H);
    join(path, sizeof path, name);
    CHECK(sd_png_write(path, src, W, H, parameters, err, sizeof err) == ONNXSTREAM_OK);
    CHECK(sd_png_read(path, &back, &w, &h, &text, err, sizeof err) == ONNXSTREAM_OK);
    CHECK(w == W && h == H);
    CHECK(back && memcmp(back, src, sizeof src) == 0);
    if (parameters)
        CHECK(text && strcmp(text, parameters) == 0);
    else
        CHECK(text == NULL);
    bytes = slurp(path, &n);
    CHECK(bytes != NULL);
    if (bytes && chunk) CHECK(contains(bytes, n, chunk) && contains(bytes, n, "parameters"));
    /* Same input, same bytes: no timestamps in the file. */
    if (bytes) {
        char path2[600];
        unsigned char *bytes2;
        long n2;
        snprintf(path2, sizeof path2, "%s.again.png", path);
        CHECK(sd_png_write(path2, src, W, H, parameters, err, sizeof err) == ONNXSTREAM_OK);
        bytes2 = slurp(path2, &n2);
        CHECK(bytes2 && n2 == n && memcmp(bytes, bytes2, (size_t)n) == 0);
        free(bytes2);
        unlink(path2);
    }
    free(bytes);
    free(back);
    free(text);
    unlink(path);
}

static void test_png_roundtrip(void)
{
    sd_image_params_t p;
    char *s;
    memset(&p, 0, sizeof p);
    p.prompt = "a caf\xc3\xa9 in \xe6\x9d\xb1\xe4\xba\xac at night \xf0\x9f\x8c\x83, (masterpiece:1.2)";
    p.negative_prompt = "na\xc3\xafve, ugly";
    p.steps = 30;
    p.sampler = "dpm++2m karras";
    p.cfg_scale = 6.5;
    p.seed = 123456789012345ull;
    p.width = 67;
    p.height = 45;
    s = sd_image_format_parameters(&p);
    CHECK(s != NULL);
    roundtrip("utf8.png", s, "iTXt");
    free(s);

    p.prompt = "plain ascii prompt";
    p.negative_prompt = NULL;
    s = sd_image_format_parameters(&p);
    roundtrip("ascii.png", s, "tEXt");
    free(s);

    roundtrip("notext.png", NULL, NULL);
}

static void test_png_errors(void)
{
    uint8_t px[4 * 4 * 3];
    char path[512], err[512], dir[512];
    uint8_t *rgb = (uint8_t *)1;
    int w = 1, h = 1, before;
    char *text = (char *)1;
    FILE *f;

    memset(px, 7, sizeof px);
    before = count_entries(tmpdir);

    /* A folder that does not exist: an IO error naming the file, and nothing created. */
    join(path, sizeof path, "no/such/folder/out.png");
    err[0] = '\0';
    CHECK(sd_png_write(path, px, 4, 4, "x", err, sizeof err) == ONNXSTREAM_ERR_IO);
    CHECK(strstr(err, "no/such/folder/out.png") != NULL);
    CHECK(file_size(path) < 0);
    CHECK(count_entries(tmpdir) == before);

    /* The target is a folder: the rename fails after the whole PNG was written; the temporary file must go. */
    join(dir, sizeof dir, "adir.png");
    CHECK(mkdir(dir, 0755) == 0);
    before = count_entries(tmpdir);
    CHECK(sd_png_write(dir, px, 4, 4, "x", err, sizeof err) == ONNXSTREAM_ERR_IO);
    CHECK(count_entries(tmpdir) == before);
    CHECK(count_entries(dir) == 0);
    rmdir(dir);

    /* Bad arguments. */
    join(path, sizeof path, "bad.png");
    CHECK(sd_png_write(path, px, 0, 4, NULL, err, sizeof err) == ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK(sd_png_write(path, NULL, 4, 4, NULL, err, sizeof err) == ONNXSTREAM_ERR_INVALID_ARGUMENT);
    CHECK(sd_png_write(path, px, 4, 4, NULL, NULL, 0) == ONNXSTREAM_OK);
    CHECK(file_size(path) > 0);

    /* Reading: a truncated PNG, a non-PNG, a missing file. Outputs are reset on failure. */
    {
        long n;
        unsigned char *bytes = slurp(path, &n);
        char cut[512];
        join(cut, sizeof cut, "cut.png");
        f = fopen(cut, "wb");
        CHECK(f && bytes && fwrite(bytes, 1, (size_t)(n - 20), f) == (size_t)(n - 20));
        if (f) fclose(f);
        free(bytes);
        CHECK(sd_png_read(cut, &rgb, &w, &h, &text, err, sizeof err) == ONNXSTREAM_ERR_IO);
        CHECK(rgb == NULL && w == 0 && h == 0 && text == NULL);
        CHECK(strstr(err, "cut.png") != NULL);
        unlink(cut);
    }
    unlink(path);

    join(path, sizeof path, "notpng.png");
    f = fopen(path, "wb");
    if (f) {
        fputs("this is not a png file at all", f);
        fclose(f);
    }
    CHECK(sd_png_read(path, &rgb, &w, &h, NULL, err, sizeof err) == ONNXSTREAM_ERR_IO);
    CHECK(strstr(err, "not a PNG") != NULL);
    unlink(path);

    join(path, sizeof path, "missing.png");
    CHECK(sd_png_read(path, &rgb, &w, &h, NULL, err, sizeof err) == ONNXSTREAM_ERR_IO);
    CHECK(strstr(err, "missing.png") != NULL);
}

static void test_latents(void)
{
    size_t count = sd_latents_count(512, 512);
    float *a, *b;
    size_t i;
    char path[512], err[512];
    unsigned char *bytes;
    long n;
    FILE *f;
    int before;

    CHECK(count == 4 * 64 * 64);
    CHECK(sd_latents_count(512, 768) == 4 * 64 * 96);
    CHECK(sd_latents_count(0, 512) == 0);

    a = (float *)malloc(count * sizeof(float));
    b = (float *)malloc(count * sizeof(float));
    CHECK(a && b);
    if (!a || !b) {
        free(a);
        free(b);
        return;
    }
    for (i = 0; i < count; i++) a[i] = (float)sin((double)i * 0.37) * 3.0f + (float)i * 1e-7f;
    a[0] = 1.0f;
    a[1] = -0.0f;
    a[2] = 1e-38f;

    join(path, sizeof path, "lat.bin");
    CHECK(sd_latents_save(path, a, count, err, sizeof err) == ONNXSTREAM_OK);
    CHECK(file_size(path) == (long)(count * 4));
    bytes = slurp(path, &n);
    /* 1.0f little-endian = 00 00 80 3f: the byte order is fixed whatever the host. */
    CHECK(bytes && bytes[0] == 0x00 && bytes[1] == 0x00 && bytes[2] == 0x80 && bytes[3] == 0x3f);
    CHECK(sd_latents_load(path, b, count, err, sizeof err) == ONNXSTREAM_OK);
    CHECK(memcmp(a, b, count * sizeof(float)) == 0);

    /* Truncated by 3 bytes: an error giving actual and expected sizes. */
    {
        char cut[512];
        join(cut, sizeof cut, "lat_cut.bin");
        f = fopen(cut, "wb");
        CHECK(f && bytes && fwrite(bytes, 1, (size_t)n - 3, f) == (size_t)n - 3);
        if (f) fclose(f);
        err[0] = '\0';
        CHECK(sd_latents_load(cut, b, count, err, sizeof err) == ONNXSTREAM_ERR_IO);
        CHECK(strstr(err, "65533 bytes") != NULL && strstr(err, "expected 65536") != NULL);
        unlink(cut);
    }
    /* The latents of a 256x256 image given where 512x512 was expected: the message says so. */
    {
        char small[512];
        join(small, sizeof small, "lat_256.bin");
        CHECK(sd_latents_save(small, a, sd_latents_count(256, 256), err, sizeof err) == ONNXSTREAM_OK);
        CHECK(sd_latents_load(small, b, count, err, sizeof err) == ONNXSTREAM_ERR_IO);
        CHECK(strstr(err, "256x256") != NULL);
        unlink(small);
    }
    /* A NaN inside. */
    {
        char bad[512];
        a[100] = NAN;
        join(bad, sizeof bad, "lat_nan.bin");
        CHECK(sd_latents_save(bad, a, count, err, sizeof err) == ONNXSTREAM_OK);
        CHECK(sd_latents_load(bad, b, count, err, sizeof err) == ONNXSTREAM_ERR_IO);
        CHECK(strstr(err, "index 100") != NULL);
        unlink(bad);
    }
    free(bytes);
    unlink(path);

    /* Missing file / missing folder. */
    join(path, sizeof path, "nope.bin");
    CHECK(sd_latents_load(path, b, count, err, sizeof err) == ONNXSTREAM_ERR_IO);
    before = count_entries(tmpdir);
    join(path, sizeof path, "nodir/lat.bin");
    CHECK(sd_latents_save(path, a, count, err, sizeof err) == ONNXSTREAM_ERR_IO);
    CHECK(count_entries(tmpdir) == before);
    CHECK(sd_latents_load(NULL, b, count, err, sizeof err) == ONNXSTREAM_ERR_INVALID_ARGUMENT);

    free(a);
    free(b);
}

static void test_real_png(const char *shared)
{
    char path[1024], err[512];
    uint8_t *rgb = NULL;
    int w = 0, h = 0;
    double sum = 0.0, sq = 0.0, mean, sd;
    size_t i, n;

    snprintf(path, sizeof path, "%s/data/images/astronaut_horse_512.png", shared);
    CHECK(sd_png_read(path, &rgb, &w, &h, NULL, err, sizeof err) == ONNXSTREAM_OK);
    if (!rgb) {
        fprintf(stderr, "%s\n", err);
        return;
    }
    CHECK(w == 512 && h == 512);
    n = (size_t)w * h * 3;
    for (i = 0; i < n; i++) {
        sum += rgb[i];
        sq += (double)rgb[i] * rgb[i];
    }
    mean = sum / (double)n;
    sd = sqrt(sq / (double)n - mean * mean);
    /* A natural photo: neither black, white nor flat. */
    CHECK(mean > 30.0 && mean < 225.0);
    CHECK(sd > 15.0);
    fprintf(stderr, "astronaut_horse_512.png: mean %.1f, stddev %.1f\n", mean, sd);
    free(rgb);
}

int main(int argc, char **argv)
{
    const char *base = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/sd_image_test_XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        printf("0 passed, 1 failed\n");
        return 1;
    }

    test_format_parameters();
    test_conversion();
    test_png_roundtrip();
    test_png_errors();
    test_latents();
    if (argc > 1)
        test_real_png(argv[1]);
    else {
        check(0, "a shared data folder given as argv[1]");
    }

    CHECK(count_entries(tmpdir) == 0);
    rmdir(tmpdir);
    return check_summary();
}
