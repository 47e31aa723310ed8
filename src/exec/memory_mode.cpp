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
    switch (mode) {
    case ONNXSTREAM_MEMORY_MIN:
        // Nothing read ahead, nothing kept: peak = the biggest op's activations + one weight chunk.
        m.provider = ONNXSTREAM_PROVIDER_NOCACHE;
        m.prefetch_bytes = 16 * MiB;
        m.run.weight_chunk_bytes = 4 * MiB;
        m.run.attention = AttentionAlgo::Flash;
        m.run.attention_block_bytes = 1 * MiB;
        m.mapping_cache_bytes = 8 * MiB;
        break;
    case ONNXSTREAM_MEMORY_MAX_SPEED:
        m.provider = ONNXSTREAM_PROVIDER_RAM;
        m.prefetch_bytes = 64 * MiB;
        m.run.weight_chunk_bytes = 0;
        m.run.attention_block_bytes = 0;
        m.mapping_cache_bytes = 256 * MiB;
        break;
    case ONNXSTREAM_MEMORY_BALANCED:
    default:
        m.provider = ONNXSTREAM_PROVIDER_PREFETCH;
        m.prefetch_bytes = 64 * MiB;
        m.run.weight_chunk_bytes = 32 * MiB;
        m.run.attention_block_bytes = 64 * MiB;
        m.mapping_cache_bytes = 64 * MiB;
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
