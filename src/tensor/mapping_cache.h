// Page-granular anonymous mappings for big buffers (tensors and XNNPACK's packed weights), with a small
// process-wide cache of recently freed mappings.
//
// Big buffers get their own mapping so that freeing one returns its memory to the system (through malloc,
// glibc keeps big freed blocks in the heap and RSS follows the largest tensors ever freed). But a fresh
// mapping costs a page fault and a cleared page per 4 KiB touched: in an SD UNet run, where every op
// allocates its outputs and (when weights stream) packs its weights anew, that was ~15 % of the CPU time,
// spent in the kernel. Keeping up to a budget of freed mappings for reuse removes most of it while bounding
// the extra resident memory by that budget. Sizes differ from op to op, so idle mappings are split to fit a
// smaller request and joined again with their neighbours when freed: reusing only whole mappings of nearly
// the same size left most requests to fresh pages.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxstream {

// Buffers of this size and more get their own mapping: glibc's own starting mmap threshold. With 1 MiB, the
// many 128 KiB-1 MiB tensors of a mid-size model went to the heap, where their freed blocks stayed resident
// in between live ones: YOLOv8n's RSS wandered by 8 MB from run to run in one process and peaked 7 MB higher.
constexpr size_t kDirectMapBytes = size_t(128) << 10;
// AddressSanitizer checks bounds only on its own heap: under it every buffer goes through malloc, so an
// access past a big tensor is reported instead of landing in a neighbouring mapping.
#if defined(__SANITIZE_ADDRESS__)
#define ONNXSTREAM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONNXSTREAM_ASAN 1
#endif
#endif
#ifdef ONNXSTREAM_ASAN
constexpr bool kUseDirectMaps = false;
#else
constexpr bool kUseDirectMaps = true;
#endif

struct Mapping {
    void *base = nullptr;
    size_t bytes = 0; // the mapping's real size (page multiple, >= the size asked for)
};

// A mapping of `bytes` rounded up to pages: the smallest idle one that holds it (a bigger one is split, its
// tail staying idle), or a new one. Contents are unspecified. base == nullptr when the system refuses.
// reuse_idle false: always a new one, for memory kept across runs (a piece split from a big idle mapping
// would stay between its neighbours, and the big tensor that mapping served would need new pages).
Mapping map_pages(size_t bytes, bool reuse_idle = true);
// Give a mapping back: joined with the idle ranges it borders and cached while the idle bytes stay within
// the budget (whole mappings unmapped, oldest first), else unmapped.
void unmap_pages(const Mapping &mapping);

// Idle bytes the cache may hold (0 = unmap at once). Process-wide: models in one process share it, and the
// memory modes set it when a run starts (min keeps it small, max-speed large).
void set_mapping_cache_budget(uint64_t bytes);
uint64_t mapping_cache_idle_bytes();

// A run's scope. While a run is on, idle mappings may also exceed the budget as far as in-use + idle bytes
// stay within the most the run has had in use: memory the process holds already, so its peak does not
// move (at the peak itself idle is within the budget, as without a run), while a model whose big
// activations are freed and allocated op after op reuses their pages instead of faulting in new ones
// (the full-size VAE decoder spent 1.5 s of a 15 s run there). begin sets the budget, as
// set_mapping_cache_budget.
//
// The end of the last run trims the idle bytes back to the budget, unless every run of the scope was
// `owner`'s with keep_for_next_run: then they stay, within the same high-water mark, for owner's next run,
// whose first ops find their pages touched already instead of faulting in the run's activations anew (a
// model run again and again, as a UNet's denoising steps). Anything else's run, or
// release_mapping_cache_owner(owner), trims them back to the budget.
void begin_mapping_cache_run(uint64_t budget, const void *owner = nullptr, bool keep_for_next_run = false);
void end_mapping_cache_run();
// Give back the pages kept for owner's next run (the owner, a model, is going away).
void release_mapping_cache_owner(const void *owner);

} // namespace onnxstream
