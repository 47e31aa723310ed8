#include "tile_cache.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "status.h"

/* File layout: the 8-byte magic, then channels, h, w as little-endian uint32, then the floats. The
 * floats are in host order: a cache is for resuming on the machine that wrote it. */
static const char tile_magic[8] = {'S', 'D', 'T', 'I', 'L', 'E', '1', '\0'};
enum { TILE_HEADER = 20, TILE_MAX_SIDE = 1 << 14 };

uint64_t sd_tile_key(const float *latent, size_t count, const char *decoder_path) {
    uint64_t h = 14695981039346656037ull;
    const unsigned char *p = (const unsigned char *)latent;
    for (size_t i = 0; i < count * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
    for (const char *c = decoder_path ? decoder_path : ""; *c; ++c) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h;
}

int sd_tile_cache_path(char *out, size_t size, const char *dir, int ty, int tx, uint64_t key) {
    int n = snprintf(out, size, "%s/tile_%d_%d_%016llx.f32", dir, ty, tx, (unsigned long long)key);
    return n < 0 || (size_t)n >= size ? -1 : 0;
}

onnxstream_status_t sd_prepare_folder(const char *dir, const char *what, char *err, size_t err_size) {
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return ONNXSTREAM_OK;
        return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "%s %s is not a folder", what, dir);
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "cannot create the %s folder %s: %s", what, dir,
                       strerror(errno));
    return ONNXSTREAM_OK;
}

static uint32_t get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_u32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

float *sd_tile_cache_load(const char *path, int channels, int *h, int *w) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    unsigned char head[TILE_HEADER];
    float *data = NULL;
    if (fread(head, 1, sizeof head, fp) == sizeof head && memcmp(head, tile_magic, sizeof tile_magic) == 0) {
        uint32_t c = get_u32(head + 8), th = get_u32(head + 12), tw = get_u32(head + 16);
        if ((int)c == channels && th >= 1 && tw >= 1 && th <= TILE_MAX_SIDE && tw <= TILE_MAX_SIDE) {
            size_t n = (size_t)c * th * tw;
            data = malloc(n * sizeof(float));
            /* Exactly n floats and nothing after them: anything else is not a tile this code wrote. */
            if (data && (fread(data, sizeof(float), n, fp) != n || fgetc(fp) != EOF)) {
                free(data);
                data = NULL;
            }
            if (data) {
                *h = (int)th;
                *w = (int)tw;
            }
        }
    }
    fclose(fp);
    return data;
}

onnxstream_status_t sd_tile_cache_store(const char *path, const float *tile, int channels, int h, int w, char *err,
                                        size_t err_size) {
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "tile cache path too long: %s", path);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    unsigned char head[TILE_HEADER];
    memcpy(head, tile_magic, sizeof tile_magic);
    put_u32(head + 8, (uint32_t)channels);
    put_u32(head + 12, (uint32_t)h);
    put_u32(head + 16, (uint32_t)w);
    size_t n = (size_t)channels * h * w;
    int ok = fwrite(head, 1, sizeof head, fp) == sizeof head && fwrite(tile, sizeof(float), n, fp) == n;
    ok = fclose(fp) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        return sd_fail(err, err_size, ONNXSTREAM_ERR_IO, "cannot write the tile %s: %s", path, strerror(e));
    }
    return ONNXSTREAM_OK;
}
