// The packed-weights file beside the persistent weights cache ("<cache>.xnnpack"): XNNPACK's packed
// weights (xnnpack/weights_cache.h) as the first complete run of a model made them, mapped read-only by
// every later run and process instead of being packed again.
//
// Layout: a header page, then one page-aligned entry per packed operator, then the index (key, offset,
// size per entry). The header carries the identity of everything the bytes depend on (the prepared cache
// they were packed from, the XNNPACK library, this CPU's kernels, the engine version), the file size and
// checksums of itself and of the index; a file that does not match is rebuilt, never served. Like the
// weights cache it is built in a temporary file beside its path (unique per process) and renamed into
// place once complete, so readers only ever open whole files, and it is never modified once renamed.
//
// Memory. An entry is mapped when an operator takes it and its pages dropped when the last one lets it go
// (unless keep_pages_mapped, as max-speed asks): RSS holds the packed weights of the ops running, the pages
// stay in the page cache and are shared between processes. With a copy pool (balanced), an entry is read
// into a block of memory that is used again for the next entry instead: mapping pages in and dropping them
// again on every run costs a page fault per 16 pages and a TLB flush per entry, which on a virtual machine
// can take longer than the product itself, where a copy from the page cache into pages the process already
// has runs at memory speed (docs/benchmarks.md, "Packed weights copied"). Operators kept between runs
// (exec/kept_kernels.h) map their entries all the same, so that their pages leave RSS after each run (idle).
// Entries a finished file lacks (a shape the first run did not meet) are kept in memory while an operator
// holds them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "weights/buffer_pool.h"
#include "xnnpack/weights_cache.h"

namespace onnxstream {

struct PackedStoreStats {
    bool built = false;         // this process writes (wrote) the file
    std::string rebuild_reason; // why an existing file was not used (empty when none existed or it was used)
    std::string error;          // why the file could not be written (the store then packs in memory)
    uint64_t entries = 0, file_bytes = 0;
    uint64_t mapped = 0, mapped_bytes = 0; // acquisitions served from the file (mapped or copied)
    uint64_t copied = 0;                   // of which read into a pooled block
    uint64_t stored = 0, stored_bytes = 0; // packed weights written to the file
    uint64_t in_memory = 0;                // packed weights kept in memory (not in the file)
};

class PackedStoreFile : public xnn::PackedStore {
public:
    // Opens `path` when it is a complete file for `identity`, else prepares to build it. Never throws for
    // an unusable file or folder: the reason is in stats(), and the store then keeps entries in memory.
    // copy_pool_bytes: read entries into pooled blocks, keeping up to that many bytes of free blocks
    // (0: map them). Ignored with keep_pages_mapped.
    PackedStoreFile(std::string path, uint64_t identity, bool keep_pages_mapped, uint64_t copy_pool_bytes = 0);
    ~PackedStoreFile() override;

    const void *acquire(uint64_t key, size_t bytes) override;
    const void *insert(uint64_t key, const void *data, size_t bytes) override;
    void release(uint64_t key) override;
    void idle(uint64_t key) override;

    // After a complete run: a store being built writes its index and renames the file into place, so the
    // next process maps what this one packed. Later entries stay in memory.
    void run_completed();
    PackedStoreStats stats() const;
    const std::string &path() const { return path_; }

private:
    struct Entry {
        uint64_t offset = 0, bytes = 0;
        bool in_file = false;
        void *address = nullptr; // the mapping (in_file) or the memory copy, while held or kept
        uint64_t holds = 0;
        uint64_t copy_capacity = 0; // address is a block of the copy pool (an in_file entry read into it)
    };
    bool open_existing(std::string &reason);
    void start_building();
    void map_whole_file(uint64_t size);
    void map_entry(Entry &e);
    bool copy_entry(Entry &e);
    void drop_entry(Entry &e);

    std::string path_, temp_path_;
    uint64_t identity_;
    bool keep_pages_mapped_;
    bool copy_entries_;
    BufferPool copy_pool_;
    int fd_ = -1;          // the file entries are mapped from (the finished file, or the one being built)
    bool building_ = false;
    unsigned char *whole_file_ = nullptr; // a finished file's mapping, when the address space allows
    uint64_t whole_file_bytes_ = 0;
    uint64_t end_ = 0;     // where the next entry goes while building
    mutable std::mutex mutex_;
    std::unordered_map<uint64_t, Entry> entries_;
    PackedStoreStats stats_;
};

// The identity a packed-weights file must carry for a model whose prepared cache has `cache_identity`
// (its content hash and size): that, plus the XNNPACK library, this CPU and the engine version.
uint64_t packed_store_identity(uint64_t cache_content_hash, uint64_t cache_file_bytes);

} // namespace onnxstream
