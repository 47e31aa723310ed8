// How many output channels one XNNPACK GEMM operator should compute when its weight is big, shared by the
// float32 fully connected products (matmul_gemm.cpp) and convolutions (conv.cpp).
#pragma once

#include <algorithm>
#include <cstddef>

#include "xnnpack/init.h"

namespace onnxstream {

// The output channels per operator for `rows` output rows (a product's rows, a convolution's pixels) of
// `reduction` products each (K; a convolution's kernel height x width x input channels) over `channels`
// output channels: all of them, or fewer when their float32 weight is bigger than half of `l2_bytes` (a
// thread's level-2 cache, cpu_l2_bytes_per_thread(); 0: unknown, never fewer) and there are more rows
// than one kernel tile.
//
// Why: XNNPACK hands each thread a range of row tiles (7 rows on x86 AVX-512) and runs every tile across
// all of an operator's output channels, so each tile reads the operator's whole packed weight again, from
// L3 or DRAM when it does not fit in L2. In blocks that fit, a thread reads a block's weight from memory
// once and its other tiles find it in L2 (the figures: docs/benchmarks.md, "Output channels in blocks").
// Blocks are equal, whole multiples of 32 channels: XNNPACK's widest float32 tile (AVX-512, 2024 API).
inline size_t output_channel_block(size_t rows, size_t reduction, size_t channels, size_t l2_bytes) {
    constexpr size_t kRowsOfOneTile = 8, kGrain = 32;
    const size_t budget = l2_bytes / 2, row_bytes = reduction * sizeof(float);
    if (rows <= kRowsOfOneTile || budget == 0 || row_bytes == 0 || channels <= kGrain || channels <= budget / row_bytes)
        return channels;
    const size_t widest = std::max(kGrain, budget / row_bytes / kGrain * kGrain);
    const size_t blocks = (channels + widest - 1) / widest;
    return std::min(channels, ((channels + blocks - 1) / blocks + kGrain - 1) / kGrain * kGrain);
}

// The input channels per operator of a convolution whose reduction (kernel height x width x `channels`
// input channels) is long: all of them, or equal parts, whole multiples of 16 channels, whose partial sums
// the caller adds. Parts whose 32-column panel of float32 weights (XNNPACK's widest tile, see above) fills
// at most a quarter of `l2_bytes`; 0 (unknown) or a short reduction: never split.
//
// Why: XNNPACK's GEMM kernels run the whole reduction for each tile of rows, so a tile's weight panel
// streams from L3 when it is long. Split, the panel stays in L2 for every tile of the operator: 3 x 3 over
// 1280-2560 channels ran 1.3-1.6x faster in 448-channel parts (docs/benchmarks.md, "Long reductions in
// parts"), where whole 1 x 1 convolutions over 1280 channels lost from splitting.
inline size_t input_channel_part(size_t taps, size_t channels, size_t l2_bytes) {
    constexpr size_t kGrain = 16, kPanelBytesPerReduction = 32 * sizeof(float);
    const size_t longest = l2_bytes / 4 / kPanelBytesPerReduction; // reduction per part
    if (taps == 0 || longest == 0 || taps * channels <= longest || channels <= kGrain) return channels;
    const size_t parts = (taps * channels + longest - 1) / longest;
    return std::min(channels, ((channels + parts - 1) / parts + kGrain - 1) / kGrain * kGrain);
}

// The blocks of output_channel_block (`block` channels) made a whole multiple of `threads` in number, for
// running them spread among the threads, each block by one thread: then each thread reads only its own
// blocks' weights, where XNNPACK's own split of one operator hands every thread row tiles of the same block.
// Equal multiples of 32 channels, never wider than `block`.
inline size_t spread_channel_block(size_t channels, size_t block, size_t threads) {
    constexpr size_t kGrain = 32;
    if (threads <= 1 || block == 0 || block >= channels) return block;
    const size_t count = (channels + block - 1) / block;
    const size_t spread = (count + threads - 1) / threads * threads;
    return std::min(block, std::max(kGrain, ((channels + spread - 1) / spread + kGrain - 1) / kGrain * kGrain));
}

// The level-2 cache bytes per thread that output_channel_block plans with: cpuinfo's on x86, where the
// blocks were measured; 0 (operators whole, as before) on other CPUs, ARM boards included, until measured
// there: their L2 is shared by four cores and several times smaller, so blocks would be narrow and many.
inline size_t channel_block_l2_bytes() {
#if defined(__x86_64__) || defined(__i386__)
    return cpu_l2_bytes_per_thread();
#else
    return 0;
#endif
}

} // namespace onnxstream
