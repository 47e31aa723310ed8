"""The tiled VAE decode's arithmetic written independently of `sd` (examples/sd/tiles.c documents the same
scheme): where the tiles start, their linear blend weights, and the blended picture. The tests and benchmarks
decode each tile with ONNX Runtime and blend them here to get the reference for `sd --tiled-decode`."""
import numpy as np


def tile_starts(size, tile, overlap):
    """Start cells of the tiles along an axis of `size` latent cells: a step of tile - overlap, the last tile
    flush with the end."""
    starts = [0]
    while starts[-1] + tile < size:
        starts.append(min(starts[-1] + tile - overlap, size - tile))
    return starts


def ramp(i, n, before, after):
    """Blend weight of cell i of n: linear over the overlaps with the neighbours, cell centres at i + 0.5."""
    w = np.ones(n)
    idx = np.arange(n) + 0.5
    if before:
        w = np.minimum(w, np.where(idx < before, idx / before, 1.0))
    if after:
        w = np.minimum(w, np.where(n - idx < after, (n - idx) / after, 1.0))
    return w


def blend(decoded, starts, tile, size):
    """decoded: {(y, x): the decoder's (3, tile*scale, tile*scale) output of the latent tile at cells (y, x)} of
    a square latent of `size` cells. Returns the blended picture as uint8 (H, W, 3), rounded as sd rounds."""
    scale = next(iter(decoded.values())).shape[1] // tile
    acc = np.zeros((3, size * scale, size * scale))
    wsum = np.zeros((size * scale, size * scale))

    def overlap(a, b):  # pixels shared by tiles a < b along an axis, 0 when either does not exist
        return max(0, starts[a] + tile - starts[b]) * scale if 0 <= a < b < len(starts) else 0

    for (y, x), out in decoded.items():
        k, j = starts.index(y), starts.index(x)
        w = np.outer(ramp(0, tile * scale, overlap(k - 1, k), overlap(k, k + 1)),
                     ramp(0, tile * scale, overlap(j - 1, j), overlap(j, j + 1)))
        ys, xs = slice(y * scale, (y + tile) * scale), slice(x * scale, (x + tile) * scale)
        acc[:, ys, xs] += out.astype(np.float64) * w
        wsum[ys, xs] += w
    img = np.clip(acc / wsum * 0.5 + 0.5, 0, 1)
    return np.floor(img * 255 + 0.5).astype(np.uint8).transpose(1, 2, 0)
