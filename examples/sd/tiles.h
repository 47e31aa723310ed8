/*
 * Tiled VAE decoding: the latent is cut into overlapping tiles that a decoder built for the tile size
 * decodes one at a time, and the decoded tiles are blended back into the image with linear ramps across
 * the overlaps. Peak memory is then the decoder's working set at tile size (a quarter of it for 32x32
 * tiles of a 64x64 latent), at the price of (small) seams where the tiles' GroupNorm statistics differ.
 *
 * Pure functions over caller-owned buffers: no allocation, no I/O.
 */
#ifndef SD_TILES_H
#define SD_TILES_H

#include <stddef.h>

/* Most tiles along one axis (a 256-latent axis cut into 8-wide tiles overlapping by 1 needs 37). */
#define SD_TILES_MAX_PER_AXIS 64

/*
 * Start offsets of tiles of `tile` cells covering an axis of `size` cells, neighbours overlapping by at
 * least `overlap` cells (the last tile is moved back to end at `size`, so overlaps can be larger).
 * Returns the number of tiles (1 when tile >= size, with start 0), or -1 when tile < 1, overlap < 0,
 * overlap >= tile, or more than `max` tiles would be needed.
 */
int sd_tiles_axis(int size, int tile, int overlap, int *starts, int max);

/*
 * Blend weight of cell `i` (0-based) of a tile of `len` cells whose first/last `ramp_before`/`ramp_after`
 * cells overlap a neighbour: rises linearly over the leading ramp and falls over the trailing one, 1
 * elsewhere (a ramp of 0 means an image edge: full weight). Always > 0.
 */
float sd_tile_weight(int i, int len, int ramp_before, int ramp_after);

/*
 * Adds a decoded tile (planar `channels` x th x tw floats) into the accumulators of an image of
 * `channels` x ih x iw floats at (y0, x0): acc += w * tile, wsum += w (wsum is ih x iw, shared by the
 * channels). The ramps are the overlaps with the previous/next tile along each axis (0 at image edges).
 */
void sd_tile_accumulate(float *acc, float *wsum, int channels, int ih, int iw, const float *tile, int th, int tw,
                        int y0, int x0, int ramp_top, int ramp_bottom, int ramp_left, int ramp_right);

/* acc /= wsum, in place: the blended image. */
void sd_tile_finish(float *acc, const float *wsum, int channels, int ih, int iw);

/* Overlap (in cells) between tile k and tile k+1 along an axis, or 0 when k is the last tile. */
int sd_tiles_overlap_after(const int *starts, int count, int tile, int k);

#endif
