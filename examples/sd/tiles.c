#include "tiles.h"

int sd_tiles_axis(int size, int tile, int overlap, int *starts, int max) {
    if (tile < 1 || overlap < 0 || overlap >= tile || size < 1 || max < 1) return -1;
    if (tile >= size) {
        starts[0] = 0;
        return 1;
    }
    const int stride = tile - overlap;
    int count = 0;
    for (int s = 0;; s += stride) {
        if (count == max) return -1;
        if (s + tile >= size) {
            starts[count++] = size - tile; /* the last tile ends at the edge */
            return count;
        }
        starts[count++] = s;
    }
}

int sd_tiles_overlap_after(const int *starts, int count, int tile, int k) {
    if (k + 1 >= count) return 0;
    int o = starts[k] + tile - starts[k + 1];
    return o > 0 ? o : 0;
}

float sd_tile_weight(int i, int len, int ramp_before, int ramp_after) {
    /* Cell centres at i + 0.5: the weights of two tiles overlapping by r cells then sum to 1 across the
     * overlap, and no cell gets weight 0 (which would divide by zero at a single-tile edge). */
    float w = 1.0f;
    if (ramp_before > 0 && i < ramp_before) w = ((float)i + 0.5f) / (float)ramp_before;
    int from_end = len - 1 - i;
    if (ramp_after > 0 && from_end < ramp_after) {
        float v = ((float)from_end + 0.5f) / (float)ramp_after;
        if (v < w) w = v;
    }
    return w;
}

void sd_tile_accumulate(float *acc, float *wsum, int channels, int ih, int iw, const float *tile, int th, int tw,
                        int y0, int x0, int ramp_top, int ramp_bottom, int ramp_left, int ramp_right) {
    for (int y = 0; y < th; ++y) {
        const int iy = y0 + y;
        if (iy < 0 || iy >= ih) continue;
        const float wy = sd_tile_weight(y, th, ramp_top, ramp_bottom);
        for (int x = 0; x < tw; ++x) {
            const int ix = x0 + x;
            if (ix < 0 || ix >= iw) continue;
            const float w = wy * sd_tile_weight(x, tw, ramp_left, ramp_right);
            const size_t pix = (size_t)iy * (size_t)iw + (size_t)ix;
            wsum[pix] += w;
            for (int c = 0; c < channels; ++c)
                acc[(size_t)c * ih * iw + pix] += w * tile[((size_t)c * th + (size_t)y) * (size_t)tw + (size_t)x];
        }
    }
}

void sd_tile_finish(float *acc, const float *wsum, int channels, int ih, int iw) {
    const size_t plane = (size_t)ih * (size_t)iw;
    for (int c = 0; c < channels; ++c)
        for (size_t p = 0; p < plane; ++p)
            if (wsum[p] > 0) acc[(size_t)c * plane + p] /= wsum[p];
}
