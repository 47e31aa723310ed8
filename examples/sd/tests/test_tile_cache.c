/* The decoded-tile cache: what is stored reads back bit for bit, keys tell latents and decoders apart, and
 * files that are not whole tiles (cut short, wrong channels, trailing bytes, another format) read as absent,
 * so the tile is decoded again rather than blended as garbage. */
#include "tile_cache.h"
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *fp = fopen(path, "wb");
    if (fp) {
        fwrite(data, 1, n, fp);
        fclose(fp);
    }
}

int main(void) {
    char dir[] = "/tmp/sd_tile_cache_XXXXXX";
    if (!mkdtemp(dir)) {
        printf("FAIL: mkdtemp\n");
        return 1;
    }
    char err[512], path[4200], sub[4200];
    snprintf(sub, sizeof sub, "%s/tiles", dir);
    check(sd_prepare_folder(sub, "tile cache", err, sizeof err) == ONNXSTREAM_OK, "a missing cache folder is created");
    check(sd_prepare_folder(sub, "tile cache", err, sizeof err) == ONNXSTREAM_OK, "an existing cache folder is used");

    float latent[16], tile[3 * 4 * 6];
    for (int i = 0; i < 16; ++i) latent[i] = (float)i * 0.25f - 1.0f;
    for (int i = 0; i < 72; ++i) tile[i] = (float)i / 7.0f - 3.0f;
    uint64_t key = sd_tile_key(latent, 16, "models/vae_decoder_fp32_l16");
    check(key == sd_tile_key(latent, 16, "models/vae_decoder_fp32_l16"), "the key is a function of its inputs");
    check(key != sd_tile_key(latent, 16, "models/vae_decoder_qu8_l16"), "another decoder gives another key");
    latent[5] = -latent[5];
    check(key != sd_tile_key(latent, 16, "models/vae_decoder_fp32_l16"), "another latent value gives another key");

    check(sd_tile_cache_path(path, sizeof path, sub, 2, 3, 0x0123456789abcdefull) == 0 &&
              strstr(path, "/tile_2_3_0123456789abcdef.f32") != NULL,
          "tile file named by position and key");
    char tiny[8];
    check(sd_tile_cache_path(tiny, sizeof tiny, sub, 0, 0, key) == -1, "a path that does not fit is refused");

    int h = 0, w = 0;
    check(sd_tile_cache_load(path, 3, &h, &w) == NULL, "an absent tile reads as absent");
    check(sd_tile_cache_store(path, tile, 3, 4, 6, err, sizeof err) == ONNXSTREAM_OK, "a tile is stored");
    float *back = sd_tile_cache_load(path, 3, &h, &w);
    check(back && h == 4 && w == 6 && memcmp(back, tile, sizeof tile) == 0, "a stored tile reads back bit for bit");
    free(back);
    check(sd_tile_cache_load(path, 4, &h, &w) == NULL, "a tile of another channel count reads as absent");

    /* Damaged files: each reads as absent. */
    FILE *fp = fopen(path, "rb");
    unsigned char whole[20 + sizeof tile + 1];
    size_t n = fp ? fread(whole, 1, sizeof whole, fp) : 0;
    if (fp) fclose(fp);
    check(n == 20 + sizeof tile, "the file is a 20-byte header and the floats");
    write_bytes(path, whole, n - 4);
    check(sd_tile_cache_load(path, 3, &h, &w) == NULL, "a tile cut short reads as absent");
    whole[n] = 0;
    write_bytes(path, whole, n + 1);
    check(sd_tile_cache_load(path, 3, &h, &w) == NULL, "a tile with trailing bytes reads as absent");
    whole[0] = 'X';
    write_bytes(path, whole, n);
    check(sd_tile_cache_load(path, 3, &h, &w) == NULL, "a file without the magic reads as absent");
    whole[0] = 'S';
    whole[12] = 0xff, whole[13] = 0xff, whole[14] = 0xff, whole[15] = 0x7f;
    write_bytes(path, whole, n);
    check(sd_tile_cache_load(path, 3, &h, &w) == NULL, "a header with a huge height reads as absent");

    /* Overwriting a damaged tile leaves a whole one and no temporary file. */
    check(sd_tile_cache_store(path, tile, 3, 4, 6, err, sizeof err) == ONNXSTREAM_OK, "a damaged tile is rewritten");
    back = sd_tile_cache_load(path, 3, &h, &w);
    check(back && memcmp(back, tile, sizeof tile) == 0, "the rewritten tile reads back");
    free(back);
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    check(access(tmp, F_OK) != 0, "no temporary file is left behind");

    write_bytes(path, "x", 1);
    check(sd_prepare_folder(path, "tile cache", err, sizeof err) == ONNXSTREAM_ERR_IO && strstr(err, "is not a folder"),
          "a cache path that is a file is refused with a message");
    char missing[4300];
    snprintf(missing, sizeof missing, "%s/no/such/parent/t.f32", dir);
    check(sd_tile_cache_store(missing, tile, 3, 4, 6, err, sizeof err) == ONNXSTREAM_ERR_IO && strstr(err, "cannot"),
          "an unwritable tile path gives ONNXSTREAM_ERR_IO with a message");

    remove(path);
    rmdir(sub);
    rmdir(dir);
    return check_summary();
}
