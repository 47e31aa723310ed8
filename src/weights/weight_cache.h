// Persistent weights cache: one file holding every weight of a model already prepared for its op (the
// layout spec.wanted asks for, float16 widened to float32 where every consumer widens anyway), served
// zero-copy from a read-only shared mapping. The pages are file-backed: shared between processes that
// use the same cache, not counted as anonymous memory, and dropped (not swapped) under pressure.
//
// Identity. A cache file is used only when all of these match, otherwise it is rebuilt:
// - the cache format version and the prepared-layout version (kWeightCacheFormatVersion,
//   kWeightCacheLayoutVersion in cache_format.h);
// - the engine version (ONNXSTREAM_VERSION);
// - the XNNPACK identity: the 2022 header has no version API, so it is the resolved path, size and
//   mtime of the object that defines xnn_initialize (dladdr), i.e. the installed libXNNPACK (or this
//   executable when XNNPACK is linked statically). A library upgrade therefore rebuilds the cache;
// - the hash of model.txt's text;
// - for every weight file read: its name (including which of the "_nchw"/"_nhwc" twins is used), size
//   and mtime in nanoseconds, re-checked with stat() on open. Modifying or touching a weight rebuilds.
// The content hash (model.txt + every weight's bytes, hashed while building) is stored as the key of
// record; it is not re-verified on open, which would mean reading the whole model.
//
// Integrity. The header and the index carry checksums, the file size is recorded and every entry is
// bounds-checked, so a truncated, corrupt or foreign file is detected and rebuilt, never served.
// Weight bytes themselves are not checksummed (that would page in the whole file at start-up). The
// file must never be modified in place while mapped (truncating a mapped file makes reads fault);
// this code only ever replaces it by rename. Stale temporary files of a crashed builder
// ("<cache>.tmp.<pid>.<random>") are left for the user to delete.
//
// Building is streamed with bounded memory: one weight at a time is fetched from the inner provider,
// prepared, appended to a temporary file beside the cache (unique name per process) and dropped. The
// file is fsync'ed and renamed over the cache path, then the folder is fsync'ed, so readers only ever
// open complete files; processes building the same cache concurrently each write their own temporary
// file and the last rename wins. A builder serves from its own file's mapping, so it is never affected
// by another process replacing the path.
//
// Errors: a cache that cannot be written (folder missing or read-only, disk full) is an IO error naming
// the path, raised when the provider is made. A cache was asked for explicitly, and silently running
// without it would hide the misconfiguration and the per-run cost it was meant to remove. An existing
// valid cache in a read-only folder is used as is.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "weights/provider.h"

namespace onnxstream {

struct WeightCacheStats {
    bool built = false;          // this provider (re)built the file rather than opening it
    std::string rebuild_reason;  // why an existing file was not used (empty when none existed or it was used)
    uint64_t setup_us = 0;       // open + validate, or the whole build (read, prepare, write, fsync, rename)
    uint64_t build_bytes_read = 0;  // weight-file bytes the inner provider read while building
    uint64_t file_bytes = 0;     // size of the cache file
    uint64_t entries = 0;        // prepared weights stored (one per distinct file + layout)
    uint64_t widened = 0;        // float16 weights stored as float32
    uint64_t content_hash = 0;   // model.txt + every weight's bytes, as hashed when the file was built
    std::atomic<uint64_t> served{0}, served_bytes{0}; // fetches answered from the mapping
    std::atomic<uint64_t> passed{0};                  // fetches the cache does not hold, passed to inner
};

struct WeightCacheOptions {
    // false: when a served weight is released, its pages are dropped from this process's mapping
    // (madvise DONTNEED; they stay in the page cache), so RSS holds only the weights in use, at the
    // cost of minor page faults when they are used again. true: pages stay mapped between runs (no
    // faults, but RSS grows to the whole file as it is touched; the pages are still file-backed).
    bool keep_pages_mapped = false;
    // With keep_pages_mapped false: a served weight of at most this many bytes keeps its pages mapped all
    // the same (a bias, a norm's scale, a shape). Their pages add little to RSS, while dropping them costs a
    // system call and a TLB flush on the process's other cores, per weight and run, which for the SD 1.5
    // text encoder's 220 small weights was a measurable part of its run (docs/benchmarks.md, "Small weights
    // keep their pages").
    uint64_t kept_small_weight_bytes = 0;
};

class WeightCacheProvider : public WeightsProvider {
public:
    const WeightCacheStats &stats() const { return stats_; }

protected:
    WeightCacheStats stats_;
};

// Open the cache at cache_path for `graph` (parsed from model_text, weights in `folder`), or build it
// from `inner` when it is missing, stale or damaged. `inner` must be file-based (folder non-empty); it
// also answers fetches the cache does not hold (a reference the graph does not make). bytes_read()
// counts the weight bytes read while building plus the mapped bytes served (paged in from the cache
// file as ops touch them, as the mmap provider counts them); read_us() counts only real reads.
// fetch_rows serves row ranges zero-copy from the same mapping. Throws IO (unwritable cache,
// unreadable weights), INVALID_ARGUMENT (empty folder or path); `inner` is destroyed on a throw.
std::unique_ptr<WeightCacheProvider> make_weight_cache_provider(std::unique_ptr<WeightsProvider> inner,
                                                                const std::string &cache_path,
                                                                const Graph &graph,
                                                                const std::string &model_text,
                                                                const std::string &folder,
                                                                const WeightCacheOptions &options = {});

} // namespace onnxstream
