#include "exec/memory_mode.h"

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

MemorySettings memory_settings(onnxstream_memory_mode_t mode, onnxstream_provider_kind_t explicit_provider,
                               uint64_t explicit_prefetch_bytes, onnxstream_attention_t explicit_attention,
                               int explicit_slices, uint64_t explicit_chunk_bytes) {
    MemorySettings m;
    // Figures: full-size fp16 SD 1.5 UNet, 2 threads, warm page cache, ONNX Runtime 4.0 s per run in the same
    // script run (docs/benchmarks.md). Weights stream in 4 MiB output-channel chunks in every mode: besides
    // bounding memory, a chunk's packed weights stay in the CPU caches while the GEMM sweeps all pixels, which
    // made chunked runs faster than whole-weight ones even with everything in RAM (4.2 vs 5.4 s). The mapping
    // cache budget decides most of the rest: freshly mapped pages cost a fault and a clear each (min with an
    // 8 MiB cache: 6.3 s; 12 MiB: 4.8 s at 82 MB RSS; 32 MiB: 4.0 s at 104 MB).
    switch (mode) {
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
        break;
    }
    if (explicit_provider != ONNXSTREAM_PROVIDER_AUTO) m.provider = explicit_provider;
    if (explicit_prefetch_bytes) m.prefetch_bytes = explicit_prefetch_bytes;
    if (explicit_attention != ONNXSTREAM_ATTENTION_AUTO) m.run.attention = algo_of(explicit_attention);
    if (explicit_slices > 0) m.run.attention_slices = explicit_slices;
    if (explicit_chunk_bytes == UINT64_MAX) m.run.weight_chunk_bytes = 0;
    else if (explicit_chunk_bytes) m.run.weight_chunk_bytes = explicit_chunk_bytes;
    return m;
}

const char *memory_mode_name(onnxstream_memory_mode_t mode) {
    switch (mode) {
    case ONNXSTREAM_MEMORY_MIN: return "min";
    case ONNXSTREAM_MEMORY_MAX_SPEED: return "max-speed";
    default: return "balanced";
    }
}

} // namespace onnxstream
