/* Tiled decoding's geometry and blending. The reference is arithmetic that does not depend on the blend
 * code: tiles cut from one known image must blend back to exactly that image (the weights of overlapping
 * tiles are normalised, so any consistent tiles reproduce it), and the weights across an overlap must sum
 * to the same value everywhere (no seam brighter or darker than its neighbours). */
#include "tiles.h"
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_axis(void) {
    int s[SD_TILES_MAX_PER_AXIS];
    int n = sd_tiles_axis(64, 32, 8, s, SD_TILES_MAX_PER_AXIS);
    check(n == 3 && s[0] == 0 && s[1] == 24 && s[2] == 32, "64 cells, tiles of 32 overlapping 8: 0,24,32");
    check(sd_tiles_overlap_after(s, n, 32, 0) == 8 && sd_tiles_overlap_after(s, n, 32, 1) == 24 &&
              sd_tiles_overlap_after(s, n, 32, 2) == 0,
          "overlaps 8, 24 (the last tile moved back to the edge), 0");
    n = sd_tiles_axis(32, 32, 8, s, SD_TILES_MAX_PER_AXIS);
    check(n == 1 && s[0] == 0, "one tile when the tile covers the axis");
    n = sd_tiles_axis(20, 32, 8, s, SD_TILES_MAX_PER_AXIS);
    check(n == 1 && s[0] == 0, "one tile when the tile is larger than the axis");
    n = sd_tiles_axis(96, 32, 16, s, SD_TILES_MAX_PER_AXIS);
    check(n == 5 && s[4] == 64, "96 cells, stride 16: five tiles, the last at 64");
    check(sd_tiles_axis(64, 8, 8, s, SD_TILES_MAX_PER_AXIS) == -1, "overlap >= tile is rejected");
    check(sd_tiles_axis(64, 0, 0, s, SD_TILES_MAX_PER_AXIS) == -1, "tile 0 is rejected");
    check(sd_tiles_axis(1000, 8, 7, s, SD_TILES_MAX_PER_AXIS) == -1, "too many tiles is rejected, not overrun");
    for (int k = 0; k + 1 < n; ++k) check(s[k] < s[k + 1], "starts increase");
}

static void test_weights(void) {
    /* Two tiles of 16 overlapping by 6: weights across the overlap sum to 1. */
    int ok = 1;
    for (int i = 0; i < 6; ++i) {
        float a = sd_tile_weight(10 + i, 16, 0, 6), b = sd_tile_weight(i, 16, 6, 0);
        if (fabsf(a + b - 1.0f) > 1e-6f || a <= 0 || b <= 0) ok = 0;
    }
    check(ok, "weights of two overlapping tiles sum to 1 across the overlap");
    check(sd_tile_weight(0, 16, 0, 0) == 1.0f && sd_tile_weight(15, 16, 0, 0) == 1.0f, "edges get full weight");
    check(sd_tile_weight(0, 16, 4, 4) > 0, "no cell has weight 0");
}

/* Cut an image into tiles at the given scale and blend them back: must reproduce the image. */
static void test_roundtrip(int lat, int tile, int overlap, int scale) {
    const int c = 3, ih = lat * scale, iw = lat * scale;
    float *img = malloc(sizeof(float) * c * ih * iw), *acc = calloc((size_t)c * ih * iw, sizeof(float));
    float *wsum = calloc((size_t)ih * iw, sizeof(float)), *t = malloc(sizeof(float) * c * tile * scale * tile * scale);
    for (int i = 0; i < c * ih * iw; ++i) img[i] = sinf(0.37f * (float)i) * 0.8f + 0.1f * (float)(i % 7);
    int s[SD_TILES_MAX_PER_AXIS];
    int n = sd_tiles_axis(lat, tile, overlap, s, SD_TILES_MAX_PER_AXIS);
    int th = (tile < lat ? tile : lat) * scale;
    for (int ty = 0; ty < n; ++ty)
        for (int tx = 0; tx < n; ++tx) {
            int y0 = s[ty] * scale, x0 = s[tx] * scale;
            for (int ch = 0; ch < c; ++ch)
                for (int y = 0; y < th; ++y)
                    for (int x = 0; x < th; ++x)
                        t[(ch * th + y) * th + x] = img[(ch * ih + y0 + y) * iw + x0 + x];
            int up = ty > 0 ? sd_tiles_overlap_after(s, n, tile, ty - 1) * scale : 0;
            int down = sd_tiles_overlap_after(s, n, tile, ty) * scale;
            int left = tx > 0 ? sd_tiles_overlap_after(s, n, tile, tx - 1) * scale : 0;
            int right = sd_tiles_overlap_after(s, n, tile, tx) * scale;
            sd_tile_accumulate(acc, wsum, c, ih, iw, t, th, th, y0, x0, up, down, left, right);
        }
    sd_tile_finish(acc, wsum, c, ih, iw);
    double worst = 0;
    int nans = 0;
    /* Not fmax: it drops NaNs (a NaN pixel would pass), and GCC 12's aarch64 vectoriser crashes on that reduction
       at -O3. */
    for (int i = 0; i < c * ih * iw; ++i) {
        const double d = fabs((double)acc[i] - (double)img[i]);
        if (d != d) ++nans;
        else if (d > worst) worst = d;
    }
    char what[160];
    snprintf(what, sizeof what,
             "latent %d, tiles %d overlap %d, x%d: blended tiles reproduce the image (max err %g, %d NaN)", lat, tile,
             overlap, scale, worst, nans);
    check(nans == 0 && worst < 1e-5, what);
    free(img);
    free(acc);
    free(wsum);
    free(t);
}

int main(void) {
    test_axis();
    test_weights();
    test_roundtrip(16, 8, 2, 4);
    test_roundtrip(64, 32, 8, 8);
    test_roundtrip(20, 8, 3, 2);
    test_roundtrip(8, 16, 4, 2);
    return check_summary();
}
