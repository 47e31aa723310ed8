/*
 * Decoded-tile cache for tiled VAE decoding (`sd --tile-cache DIR`): each decoded tile is kept as a file,
 * and a later run with the same latent tile and decoder reads it instead of decoding again. A decode that
 * is stopped part way (a board that reboots, an emulated run killed at a time limit) then resumes at the
 * first tile it had not finished.
 *
 * A tile file is named after the tile's position and a 64-bit hash of its latent values and the decoder
 * folder, so tiles of another latents file or decoder are never mistaken for this one's. Files are written
 * to a temporary name and renamed, so a stopped run leaves whole tiles or none.
 */
#ifndef SD_TILE_CACHE_H
#define SD_TILE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "onnxstream.h"

/* FNV-1a over the latent tile's float bits and the decoder folder's path. */
uint64_t sd_tile_key(const float *latent, size_t count, const char *decoder_path);

/* DIR/tile_<ty>_<tx>_<key as 16 hex digits>.f32 into out; returns 0, or -1 when it does not fit. */
int sd_tile_cache_path(char *out, size_t size, const char *dir, int ty, int tx, uint64_t key);

/* Creates DIR when missing (its parent must exist); `what` names it in messages ("tile cache"). */
onnxstream_status_t sd_prepare_folder(const char *dir, const char *what, char *err, size_t err_size);

/*
 * Reads a cached tile: a malloc'd array of `channels` x h x w floats with *h and *w set, or NULL when the
 * file is absent or is not a whole tile file of `channels` channels (it is then decoded again and
 * overwritten).
 */
float *sd_tile_cache_load(const char *path, int channels, int *h, int *w);

/* Writes a decoded tile (planar channels x h x w floats) to path through a temporary file. */
onnxstream_status_t sd_tile_cache_store(const char *path, const float *tile, int channels, int h, int w, char *err,
                                        size_t err_size);

#endif
