/*
 * image.c - see image.h.
 */
#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Larger images are certainly a caller bug, and the limit keeps width*height*3 far from overflowing. */
#define SD_IMAGE_MAX_SIDE 65536

static void set_err(char *err, size_t err_size, const char *fmt, ...)
{
    va_list ap;
    if (!err || err_size == 0) return;
    va_start(ap, fmt);
    vsnprintf(err, err_size, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------------------------------------------- */
/* parameters text                                                                                       */

char *sd_image_format_parameters(const sd_image_params_t *p)
{
    const char *prompt, *neg, *sampler;
    char tail[512];
    size_t len;
    char *out;
    int n;

    if (!p) return NULL;
    prompt = p->prompt ? p->prompt : "";
    neg = p->negative_prompt ? p->negative_prompt : "";
    sampler = p->sampler ? p->sampler : "";

    /* Sampler and model names are short identifiers, so a fixed buffer holds the last line; prompts are
     * not bounded and are measured instead. */
    n = snprintf(tail, sizeof tail, "Steps: %d, Sampler: %.100s, CFG scale: %g, Seed: %llu, Size: %dx%d%s%.200s",
                 p->steps, sampler, p->cfg_scale, (unsigned long long)p->seed, p->width, p->height,
                 (p->model && p->model[0]) ? ", Model: " : "", (p->model && p->model[0]) ? p->model : "");
    if (n < 0) return NULL;

    len = strlen(prompt) + 1 + (neg[0] ? strlen("Negative prompt: ") + strlen(neg) + 1 : 0) + strlen(tail) + 1;
    out = (char *)malloc(len);
    if (!out) return NULL;
    if (neg[0])
        snprintf(out, len, "%s\nNegative prompt: %s\n%s", prompt, neg, tail);
    else
        snprintf(out, len, "%s\n%s", prompt, tail);
    return out;
}

/* ---------------------------------------------------------------------------------------------------- */
/* pixel conversion                                                                                      */

void sd_image_from_nchw(const float *nchw, int width, int height, uint8_t *rgb)
{
    size_t plane = (size_t)width * (size_t)height;
    size_t i;
    int c;

    for (c = 0; c < 3; c++) {
        const float *src = nchw + (size_t)c * plane;
        for (i = 0; i < plane; i++) {
            float v = src[i] * 0.5f + 0.5f;
            /* Written so NaN fails both comparisons' "keep" branch and ends up as 0. */
            if (!(v > 0.0f)) v = 0.0f;
            if (v > 1.0f) v = 1.0f;
            rgb[i * 3 + (size_t)c] = (uint8_t)floorf(v * 255.0f + 0.5f);
        }
    }
}

/* ---------------------------------------------------------------------------------------------------- */
/* write-to-temporary-then-rename                                                                        */

typedef struct TempFile {
    char *tmp_path;
    FILE *fp;
} TempFile;

/* Creates a fresh file next to `path` (same folder, so rename() is atomic). O_EXCL plus a pid/counter suffix
 * avoids clobbering anything, without mkstemp's 0600 mode, so the final file gets the usual umask mode. */
static onnxstream_status_t temp_open(const char *path, TempFile *t, char *err, size_t err_size)
{
    size_t cap = strlen(path) + 64;
    int attempt;

    t->fp = NULL;
    t->tmp_path = (char *)malloc(cap);
    if (!t->tmp_path) {
        set_err(err, err_size, "out of memory writing '%s'", path);
        return ONNXSTREAM_ERR_OUT_OF_MEMORY;
    }
    for (attempt = 0; attempt < 1000; attempt++) {
        int fd;
        snprintf(t->tmp_path, cap, "%s.tmp-%ld-%d", path, (long)getpid(), attempt);
        fd = open(t->tmp_path, O_WRONLY | O_CREAT | O_EXCL, 0666);
        if (fd < 0) {
            if (errno == EEXIST) continue;
            set_err(err, err_size, "cannot write '%s': %s%s", path, strerror(errno),
                    errno == ENOENT ? " (does its folder exist?)" : "");
            free(t->tmp_path);
            t->tmp_path = NULL;
            return ONNXSTREAM_ERR_IO;
        }
        t->fp = fdopen(fd, "wb");
        if (!t->fp) {
            set_err(err, err_size, "cannot write '%s': %s", path, strerror(errno));
            close(fd);
            unlink(t->tmp_path);
            free(t->tmp_path);
            t->tmp_path = NULL;
            return ONNXSTREAM_ERR_IO;
        }
        return ONNXSTREAM_OK;
    }
    set_err(err, err_size, "cannot write '%s': too many stale temporary files next to it", path);
    free(t->tmp_path);
    t->tmp_path = NULL;
    return ONNXSTREAM_ERR_IO;
}

static void temp_abort(TempFile *t)
{
    if (t->fp) fclose(t->fp);
    if (t->tmp_path) {
        unlink(t->tmp_path);
        free(t->tmp_path);
    }
    t->fp = NULL;
    t->tmp_path = NULL;
}

/* Flushes and syncs before renaming so that "the target exists" implies "the target is complete", even
 * after a crash; a full disk shows up here as a failed fflush/fclose. */
static onnxstream_status_t temp_commit(const char *path, TempFile *t, char *err, size_t err_size)
{
    int failed = 0;
    int saved_errno = 0;

    if (fflush(t->fp) != 0 || ferror(t->fp)) {
        failed = 1;
        saved_errno = errno;
    } else if (fsync(fileno(t->fp)) != 0 && errno != EINVAL && errno != EROFS) {
        failed = 1;
        saved_errno = errno;
    }
    if (fclose(t->fp) != 0 && !failed) {
        failed = 1;
        saved_errno = errno;
    }
    t->fp = NULL;
    if (!failed && rename(t->tmp_path, path) != 0) {
        failed = 1;
        saved_errno = errno;
    }
    if (failed) {
        set_err(err, err_size, "cannot write '%s': %s", path, strerror(saved_errno));
        temp_abort(t);
        return ONNXSTREAM_ERR_IO;
    }
    free(t->tmp_path);
    t->tmp_path = NULL;
    return ONNXSTREAM_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* libpng error handling                                                                                 */

typedef struct PngErr {
    jmp_buf jmp;
    char msg[256];
} PngErr;

static void png_error_cb(png_structp png, png_const_charp msg)
{
    PngErr *e = (PngErr *)png_get_error_ptr(png);
    snprintf(e->msg, sizeof e->msg, "%s", msg ? msg : "unknown libpng error");
    longjmp(e->jmp, 1);
}

/* Warnings (e.g. a bad CRC in an ancillary chunk) do not stop decoding and must not print. */
static void png_warning_cb(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static int is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80) return 0;
    return 1;
}

onnxstream_status_t sd_png_write(const char *path, const uint8_t *rgb, int width, int height,
                                 const char *parameters, char *err, size_t err_size)
{
    TempFile t;
    PngErr perr;
    png_structp png;
    png_infop info;
    png_text text;
    onnxstream_status_t st;
    int y;

    if (!path || !rgb) {
        set_err(err, err_size, "sd_png_write: %s is NULL", !path ? "path" : "rgb");
        return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    }
    if (width <= 0 || height <= 0 || width > SD_IMAGE_MAX_SIDE || height > SD_IMAGE_MAX_SIDE) {
        set_err(err, err_size, "cannot write '%s': image size %dx%d is not within 1..%d", path, width, height,
                SD_IMAGE_MAX_SIDE);
        return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    }

    st = temp_open(path, &t, err, err_size);
    if (st != ONNXSTREAM_OK) return st;

    perr.msg[0] = '\0';
    png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &perr, png_error_cb, png_warning_cb);
    info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        if (png) png_destroy_write_struct(&png, NULL);
        temp_abort(&t);
        set_err(err, err_size, "cannot write '%s': out of memory creating the PNG writer", path);
        return ONNXSTREAM_ERR_OUT_OF_MEMORY;
    }
    /* Nothing assigned between here and the longjmp target is read afterwards, so no volatile is needed. */
    if (setjmp(perr.jmp)) {
        png_destroy_write_struct(&png, &info);
        temp_abort(&t);
        set_err(err, err_size, "cannot write '%s': libpng: %s", path, perr.msg);
        return ONNXSTREAM_ERR_IO;
    }

    png_init_io(png, t.fp);
    png_set_IHDR(png, info, (png_uint_32)width, (png_uint_32)height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (parameters) {
        memset(&text, 0, sizeof text);
        text.compression = is_ascii(parameters) ? PNG_TEXT_COMPRESSION_NONE : PNG_ITXT_COMPRESSION_NONE;
        text.key = (png_charp) "parameters";
        text.text = (png_charp)parameters;
        text.text_length = strlen(parameters);
        png_set_text(png, info, &text, 1);
    }
    /* No tIME chunk: a fixed seed must give a byte-identical file on every run. */
    png_write_info(png, info);
    for (y = 0; y < height; y++) png_write_row(png, rgb + (size_t)y * (size_t)width * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);

    return temp_commit(path, &t, err, err_size);
}

onnxstream_status_t sd_png_read(const char *path, uint8_t **rgb, int *width, int *height, char **parameters,
                                char *err, size_t err_size)
{
    FILE *fp;
    unsigned char sig[8];
    PngErr perr;
    png_structp png;
    png_infop info;
    /* Assigned after setjmp and freed on the longjmp path, hence volatile. */
    uint8_t *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;
    char *volatile found = NULL;
    png_uint_32 w, h, y;
    int color_type, bit_depth;
    png_textp texts = NULL;
    int num_texts = 0, i;

    if (rgb) *rgb = NULL;
    if (width) *width = 0;
    if (height) *height = 0;
    if (parameters) *parameters = NULL;
    if (!path || !rgb || !width || !height) {
        set_err(err, err_size, "sd_png_read: a required argument is NULL");
        return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    }

    fp = fopen(path, "rb");
    if (!fp) {
        set_err(err, err_size, "cannot read '%s': %s", path, strerror(errno));
        return ONNXSTREAM_ERR_IO;
    }
    if (fread(sig, 1, sizeof sig, fp) != sizeof sig || png_sig_cmp(sig, 0, sizeof sig) != 0) {
        fclose(fp);
        set_err(err, err_size, "cannot read '%s': not a PNG file", path);
        return ONNXSTREAM_ERR_IO;
    }

    perr.msg[0] = '\0';
    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &perr, png_error_cb, png_warning_cb);
    info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        if (png) png_destroy_read_struct(&png, NULL, NULL);
        fclose(fp);
        set_err(err, err_size, "cannot read '%s': out of memory creating the PNG reader", path);
        return ONNXSTREAM_ERR_OUT_OF_MEMORY;
    }
    if (setjmp(perr.jmp)) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(fp);
        free(pixels);
        free(rows);
        free(found);
        set_err(err, err_size, "cannot read '%s': libpng: %s", path, perr.msg);
        return ONNXSTREAM_ERR_IO;
    }

    png_init_io(png, fp);
    png_set_sig_bytes(png, sizeof sig);
    png_read_info(png, info);
    png_get_IHDR(png, info, &w, &h, &bit_depth, &color_type, NULL, NULL, NULL);
    if (w > SD_IMAGE_MAX_SIDE || h > SD_IMAGE_MAX_SIDE) png_error(png, "image too large");

    png_set_expand(png);
    png_set_strip_16(png);
    png_set_strip_alpha(png);
    if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t)w * 3) png_error(png, "unexpected row size after conversion");

    pixels = (uint8_t *)malloc((size_t)w * (size_t)h * 3);
    rows = (png_bytep *)malloc(sizeof(png_bytep) * (size_t)h);
    if (!pixels || !rows) png_error(png, "out of memory");
    for (y = 0; y < h; y++) rows[y] = pixels + (size_t)y * (size_t)w * 3;
    png_read_image(png, rows);
    /* Text chunks may also follow the image data; reading the end into the same info collects them. */
    png_read_end(png, info);

    if (parameters && png_get_text(png, info, &texts, &num_texts) > 0) {
        for (i = 0; i < num_texts; i++) {
            if (texts[i].key && strcmp(texts[i].key, "parameters") == 0 && texts[i].text) {
                size_t n = strlen(texts[i].text);
                char *copy = (char *)malloc(n + 1);
                if (!copy) png_error(png, "out of memory");
                memcpy(copy, texts[i].text, n + 1);
                free(found);
                found = copy;
            }
        }
    }

    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    free(rows);
    *rgb = pixels;
    *width = (int)w;
    *height = (int)h;
    if (parameters) *parameters = found;
    return ONNXSTREAM_OK;
}

/* ---------------------------------------------------------------------------------------------------- */
/* latents                                                                                               */

size_t sd_latents_count(int width, int height)
{
    if (width <= 0 || height <= 0) return 0;
    return (size_t)4 * (size_t)(width / 8) * (size_t)(height / 8);
}

/* Byte order is fixed explicitly (not by memcpy of the host float) so files move between big- and
 * little-endian machines. */
static void float_to_le(float f, unsigned char *b)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    b[0] = (unsigned char)(u & 0xff);
    b[1] = (unsigned char)((u >> 8) & 0xff);
    b[2] = (unsigned char)((u >> 16) & 0xff);
    b[3] = (unsigned char)((u >> 24) & 0xff);
}

static float le_to_float(const unsigned char *b)
{
    uint32_t u = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#define SD_LATENTS_CHUNK 4096

onnxstream_status_t sd_latents_save(const char *path, const float *data, size_t count, char *err,
                                    size_t err_size)
{
    unsigned char buf[SD_LATENTS_CHUNK * 4];
    TempFile t;
    onnxstream_status_t st;
    size_t done = 0;

    if (!path || (!data && count > 0)) {
        set_err(err, err_size, "sd_latents_save: %s is NULL", !path ? "path" : "data");
        return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    }
    st = temp_open(path, &t, err, err_size);
    if (st != ONNXSTREAM_OK) return st;
    while (done < count) {
        size_t n = count - done < SD_LATENTS_CHUNK ? count - done : SD_LATENTS_CHUNK;
        size_t i;
        for (i = 0; i < n; i++) float_to_le(data[done + i], buf + i * 4);
        if (fwrite(buf, 4, n, t.fp) != n) {
            set_err(err, err_size, "cannot write '%s': %s", path, strerror(errno));
            temp_abort(&t);
            return ONNXSTREAM_ERR_IO;
        }
        done += n;
    }
    return temp_commit(path, &t, err, err_size);
}

onnxstream_status_t sd_latents_load(const char *path, float *data, size_t count, char *err, size_t err_size)
{
    unsigned char buf[SD_LATENTS_CHUNK * 4];
    struct stat sb;
    FILE *fp;
    size_t done = 0;

    if (!path || (!data && count > 0)) {
        set_err(err, err_size, "sd_latents_load: %s is NULL", !path ? "path" : "data");
        return ONNXSTREAM_ERR_INVALID_ARGUMENT;
    }
    fp = fopen(path, "rb");
    if (!fp) {
        set_err(err, err_size, "cannot read latents '%s': %s", path, strerror(errno));
        return ONNXSTREAM_ERR_IO;
    }
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(fp);
        set_err(err, err_size, "cannot read latents '%s': not a regular file", path);
        return ONNXSTREAM_ERR_IO;
    }
    if ((unsigned long long)sb.st_size != (unsigned long long)count * 4) {
        unsigned long long vals = (unsigned long long)sb.st_size / 4;
        unsigned long long side = 0;
        char hint[96] = "";
        /* Latents of a square image are 4*s*s floats; naming that size makes a wrong --size obvious. */
        if (sb.st_size % 16 == 0) {
            side = (unsigned long long)sqrt((double)(vals / 4));
            while (side * side < vals / 4) side++;
            while (side * side > vals / 4) side--;
            if (side > 0 && side * side * 4 == vals)
                snprintf(hint, sizeof hint, " (the file looks like the latents of a %llux%llu image)", side * 8,
                         side * 8);
        }
        fclose(fp);
        set_err(err, err_size,
                "latents file '%s' has %lld bytes, expected %llu (%llu raw little-endian float32 values)%s", path,
                (long long)sb.st_size, (unsigned long long)count * 4, (unsigned long long)count, hint);
        return ONNXSTREAM_ERR_IO;
    }
    while (done < count) {
        size_t n = count - done < SD_LATENTS_CHUNK ? count - done : SD_LATENTS_CHUNK;
        size_t i;
        if (fread(buf, 4, n, fp) != n) {
            fclose(fp);
            set_err(err, err_size, "cannot read latents '%s': file ended early", path);
            return ONNXSTREAM_ERR_IO;
        }
        for (i = 0; i < n; i++) {
            float f = le_to_float(buf + i * 4);
            if (isnan(f) || isinf(f)) {
                fclose(fp);
                set_err(err, err_size, "latents file '%s' holds a non-finite value at index %llu", path,
                        (unsigned long long)(done + i));
                return ONNXSTREAM_ERR_IO;
            }
            data[done + i] = f;
        }
        done += n;
    }
    fclose(fp);
    return ONNXSTREAM_OK;
}
