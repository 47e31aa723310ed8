#include "capi/model_options.h"

namespace onnxstream {

namespace {
constexpr uint64_t MiB = 1ull << 20;

AttentionAlgo algo_of(onnxstream_attention_t a) {
    switch (a) {
    case ONNXSTREAM_ATTENTION_FULL: return AttentionAlgo::Full;
    case ONNXSTREAM_ATTENTION_SLICED: return AttentionAlgo::Sliced;
    case ONNXSTREAM_ATTENTION_FLASH: return AttentionAlgo::Flash;
    default: return AttentionAlgo::Auto;
    }
}
} // namespace

ModelOptions model_options_from(const onnxstream_model_options_t &o) {
    ModelOptions m;
    // Figures: full-size fp16 SD 1.5 UNet, 2 threads, warm page cache, ONNX Runtime 4.0 s per run in the same
    // script run (docs/benchmarks.md). Weights stream in 4 MiB output-channel chunks in every mode: besides
    // bounding memory, a chunk's packed weights stay in the CPU caches while the GEMM sweeps all pixels, which
    // made chunked runs faster than whole-weight ones even with everything in RAM (4.2 vs 5.4 s). The mapping
    // cache budget decides most of the rest: freshly mapped pages cost a fault and a clear each (min with an
    // 8 MiB cache: 6.3 s; 12 MiB: 4.8 s at 82 MB RSS; 32 MiB: 4.0 s at 104 MB).
    switch (o.memory_mode) {
    case ONNXSTREAM_MEMORY_MIN:
        // Nothing read ahead, nothing kept: peak = the biggest op's activations + one weight chunk.
        m.provider = ONNXSTREAM_PROVIDER_NOCACHE;
        m.prefetch_bytes = 16 * MiB;
        m.run.weight_chunk_bytes = 4 * MiB;
        m.run.attention = AttentionAlgo::Flash;
        m.run.attention_block_bytes = 1 * MiB;
        m.mapping_cache_bytes = 12 * MiB;
        break;
    case ONNXSTREAM_MEMORY_MAX_SPEED:
        m.provider = ONNXSTREAM_PROVIDER_RAM;
        m.prefetch_bytes = 64 * MiB;
        m.run.weight_chunk_bytes = 4 * MiB;
        m.run.attention_block_bytes = 0;
        m.mapping_cache_bytes = 256 * MiB;
        m.keep_run_pages = true;
        break;
    case ONNXSTREAM_MEMORY_BALANCED:
    default:
        // No read-ahead thread: with the weights in the page cache it only adds memory (4.2 s at 175 MB with
        // the prefetch provider, 4.3 s at 104 MB without); choose ONNXSTREAM_PROVIDER_PREFETCH for slow storage.
        m.provider = ONNXSTREAM_PROVIDER_NOCACHE;
        m.prefetch_bytes = 64 * MiB;
        m.run.weight_chunk_bytes = 4 * MiB;
        m.run.attention = AttentionAlgo::Flash;
        m.run.attention_block_bytes = 64 * MiB;
        m.mapping_cache_bytes = 32 * MiB;
        // The run's activation pages stay for the next run (the peak does not move; between runs the process
        // holds them): the full-size VAE decoder faulted in 1.1 GB of fresh pages per run without.
        m.keep_run_pages = true;
        m.kept_kernel_bytes = 24 * MiB;
        // Weights of up to 64 KiB from the weights cache keep their pages between runs (weights/weight_cache.h).
        m.kept_small_weight_bytes = 64 * 1024;
        // On x86-64, packed weights are read into reused blocks (up to 6 MiB of them free: one and a half
        // weight chunks) rather than mapped and dropped op by op: measured on a 2-vCPU VM, where faulting
        // mapped pages back in was the slower way (docs/benchmarks.md, "Packed weights copied into reused
        // blocks"). ARM boards map them: the copy doubles the memory traffic where bandwidth is scarce, and
        // it has not been measured there.
#if defined(__x86_64__)
        m.packed_copy_pool_bytes = 6 * MiB;
#endif
        break;
    }
    // The user's explicit choices: AUTO / 0 mean "from the mode"; weight_chunk_bytes UINT64_MAX = never chunk,
    // kept_kernel_bytes UINT64_MAX = keep none.
    if (o.provider != ONNXSTREAM_PROVIDER_AUTO) m.provider = static_cast<onnxstream_provider_kind_t>(o.provider);
    if (o.prefetch_bytes) m.prefetch_bytes = o.prefetch_bytes;
    if (o.attention != ONNXSTREAM_ATTENTION_AUTO) m.run.attention = algo_of(static_cast<onnxstream_attention_t>(o.attention));
    if (o.attention_slices > 0) m.run.attention_slices = o.attention_slices;
    if (o.kept_kernel_bytes == UINT64_MAX) m.kept_kernel_bytes = 0;
    else if (o.kept_kernel_bytes) m.kept_kernel_bytes = o.kept_kernel_bytes;
    if (o.weight_chunk_bytes == UINT64_MAX) m.run.weight_chunk_bytes = 0;
    else if (o.weight_chunk_bytes) m.run.weight_chunk_bytes = o.weight_chunk_bytes;
    m.threads = static_cast<size_t>(o.threads);
    m.run.nhwc_layout = (o.flags & ONNXSTREAM_FLAG_NCHW_ONLY) == 0;
    m.profile = (o.flags & ONNXSTREAM_FLAG_PROFILE) != 0;
    m.run.spin_workers = (o.flags & ONNXSTREAM_FLAG_SPIN_WORKERS) != 0;
    m.run.int8_weight_arithmetic = (o.flags & ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS) == 0;
    if (o.cache_path) m.cache_path = o.cache_path;
    m.max_bytes = o.max_bytes;
    m.arithmetic = static_cast<onnxstream_arithmetic_t>(o.arithmetic);
    return m;
}

} // namespace onnxstream
