// The memory modes (onnxstream_memory_mode_t): what each one means for the weights provider, read-ahead,
// weight chunking and attention, with the user's explicit choices taking precedence.
#pragma once

#include <cstdint>

#include "onnxstream.h"
#include "ops/op.h"

namespace onnxstream {

struct MemorySettings {
    onnxstream_provider_kind_t provider = ONNXSTREAM_PROVIDER_PREFETCH;
    uint64_t prefetch_bytes = 0;
    uint64_t mapping_cache_bytes = 0; // freed big mappings kept for reuse (src/tensor/mapping_cache.h)
    RunOptions run;
};

// explicit_*: the user's values (AUTO / 0 = "from the mode"; weight_chunk_bytes UINT64_MAX = never chunk).
MemorySettings memory_settings(onnxstream_memory_mode_t mode, onnxstream_provider_kind_t explicit_provider,
                               uint64_t explicit_prefetch_bytes, onnxstream_attention_t explicit_attention,
                               int explicit_slices, uint64_t explicit_chunk_bytes);

const char *memory_mode_name(onnxstream_memory_mode_t mode); // "min", "balanced", "max-speed"

} // namespace onnxstream
