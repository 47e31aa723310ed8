#include "weights/packed_store.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <random>
#include <sys/mman.h>
#include <unistd.h>
#include <vector>

#include "onnxstream.h"
#include "util/error.h"
#include "util/hash64.h"
#include "weights/cache_file_io.h"
#include "weights/cache_format.h"
#include "xnnpack/init.h"

namespace onnxstream {

namespace {
constexpr char kMagic[8] = {'O', 'S', 'P', 'A', 'C', 'K', 'W', '1'};
constexpr uint32_t kFormatVersion = 1;
constexpr uint64_t kPage = 4096; // entries start on this boundary: every supported target's page size divides it

struct Header {
    char magic[8];
    uint32_t version;
    uint32_t header_bytes;
    uint64_t identity;
    uint64_t count;
    uint64_t index_offset;
    uint64_t index_hash;
    uint64_t file_bytes;
    uint64_t header_hash; // of the bytes before it
};

struct IndexEntry {
    uint64_t key, offset, bytes;
};

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

uint64_t header_hash(const Header &h) { return hash_bytes(&h, offsetof(Header, header_hash)); }

std::string errno_text() { return std::strerror(errno); }
} // namespace

uint64_t packed_store_identity(uint64_t cache_content_hash, uint64_t cache_file_bytes) {
    Hash64 h;
    h.update_u64(kFormatVersion);
    h.update_u64(cache_content_hash);
    h.update_u64(cache_file_bytes);
    h.update_str(weight_cache::xnnpack_identity());
    h.update_str(xnn::cpu_fingerprint());
    h.update_u64(ONNXSTREAM_VERSION);
    return h.digest();
}

PackedStoreFile::PackedStoreFile(std::string path, uint64_t identity, bool keep_pages_mapped, uint64_t copy_pool_bytes)
    : path_(std::move(path)), identity_(identity), keep_pages_mapped_(keep_pages_mapped),
      copy_entries_(copy_pool_bytes > 0 && !keep_pages_mapped), copy_pool_(copy_pool_bytes) {
    std::string reason;
    if (open_existing(reason)) return;
    stats_.rebuild_reason = reason;
    start_building();
}

PackedStoreFile::~PackedStoreFile() {
    keep_pages_mapped_ = false; // the store goes: so do its mappings
    for (auto &[key, e] : entries_) {
        e.holds = 0;
        if (e.copy_capacity || !(whole_file_ && e.in_file)) drop_entry(e); // the whole file's mapping goes below
    }
    if (whole_file_) ::munmap(whole_file_, static_cast<size_t>(whole_file_bytes_));
    if (fd_ >= 0) ::close(fd_);
    if (building_ && !temp_path_.empty()) ::unlink(temp_path_.c_str()); // never completed: nobody can use it
}

bool PackedStoreFile::open_existing(std::string &reason) {
    weight_cache::Fd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return false; // no file yet: nothing to explain
    uint64_t size = 0;
    int64_t mtime = 0;
    if (!weight_cache::stat_file(path_, size, mtime)) {
        reason = "not a regular file";
        return false;
    }
    Header h;
    if (size < kPage || !weight_cache::pread_all(fd.get(), &h, sizeof h, 0)) {
        reason = "truncated header";
        return false;
    }
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.header_hash != header_hash(h)) {
        reason = "not a packed-weights file, or a damaged header";
        return false;
    }
    if (h.version != kFormatVersion) {
        reason = cat("format version ", h.version, ", this build writes ", kFormatVersion);
        return false;
    }
    if (h.identity != identity_) {
        reason = "packed for another weights cache, XNNPACK library, CPU or engine version";
        return false;
    }
    if (h.file_bytes != size || h.count > (size / sizeof(IndexEntry)) || h.index_offset > size ||
        h.count * sizeof(IndexEntry) != size - h.index_offset) {
        reason = "truncated or extended after it was written";
        return false;
    }
    std::vector<IndexEntry> index(static_cast<size_t>(h.count));
    if (!weight_cache::pread_all(fd.get(), index.data(), h.count * sizeof(IndexEntry), h.index_offset) ||
        hash_bytes(index.data(), index.size() * sizeof(IndexEntry)) != h.index_hash) {
        reason = "damaged index";
        return false;
    }
    for (const IndexEntry &ie : index) {
        if (ie.offset % kPage != 0 || ie.offset < kPage || ie.bytes > h.index_offset ||
            ie.offset > h.index_offset - ie.bytes || ie.bytes > std::numeric_limits<size_t>::max()) {
            reason = "an entry outside the file";
            return false;
        }
        Entry e;
        e.offset = ie.offset;
        e.bytes = ie.bytes;
        e.in_file = true;
        entries_[ie.key] = e;
    }
    fd_ = ::dup(fd.get());
    if (fd_ < 0) {
        entries_.clear();
        reason = cat("cannot duplicate its descriptor: ", errno_text());
        return false;
    }
    ::fcntl(fd_, F_SETFD, FD_CLOEXEC);
    stats_.entries = h.count;
    stats_.file_bytes = size;
    map_whole_file(size);
    return true;
}

namespace {
// The size of a page-table leaf one level up (2 MiB with 4 KiB pages): Linux maps a large page-cache folio
// of that size with one entry when the mapping's address and file offset agree modulo it.
uint64_t pmd_bytes() {
    uint64_t bytes = 0;
    if (FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r")) {
        unsigned long long v = 0;
        if (std::fscanf(f, "%llu", &v) == 1) bytes = v;
        std::fclose(f);
    }
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    if (bytes < page || bytes > (1ull << 30) || (bytes & (bytes - 1)) != 0) bytes = 2ull << 20;
    return bytes;
}
} // namespace

void PackedStoreFile::map_whole_file(uint64_t size) {
    // One mapping of the whole file, its start aligned to a PMD, so that the kernel can map the page cache's
    // large folios (ext4 and XFS make them; MADV_HUGEPAGE asks for them when the file is read) a PMD at a
    // time: a fault per 2 MiB instead of one per 64 KiB of fault-around, and fewer TLB misses in the GEMMs.
    // Entries are slices of it; one that is let go has its pages dropped (MADV_DONTNEED), which takes a
    // PMD that it shares with another entry out too: that one faults it back in. In a 32-bit address space,
    // where a model's file may not fit beside its other mappings, each entry keeps a mapping of its own.
    if (sizeof(void *) < 8) return;
    const uint64_t align = pmd_bytes();
    if (size > std::numeric_limits<size_t>::max() - align) return;
    const size_t reserve = static_cast<size_t>(size + align);
    void *r = ::mmap(nullptr, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r == MAP_FAILED) return;
    const uintptr_t start = reinterpret_cast<uintptr_t>(r);
    const uintptr_t aligned = (start + align - 1) / align * align;
    void *p = ::mmap(reinterpret_cast<void *>(aligned), static_cast<size_t>(size), PROT_READ, MAP_SHARED | MAP_FIXED,
                     fd_, 0);
    if (p == MAP_FAILED) {
        ::munmap(r, reserve);
        return;
    }
    // The reservation's slack before and after the file's mapping.
    if (aligned > start) ::munmap(r, aligned - start);
    const uintptr_t end = aligned + static_cast<uintptr_t>(size), reserve_end = start + reserve;
    if (reserve_end > end) ::munmap(reinterpret_cast<void *>(end), reserve_end - end);
#ifdef MADV_HUGEPAGE
    ::madvise(p, static_cast<size_t>(size), MADV_HUGEPAGE);
#endif
    whole_file_ = static_cast<unsigned char *>(p);
    whole_file_bytes_ = size;
}

void PackedStoreFile::start_building() {
    std::random_device rd;
    temp_path_ = cat(path_, ".tmp.", ::getpid(), ".", std::hex, (uint64_t(rd()) << 32) ^ rd());
    fd_ = ::open(temp_path_.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0) {
        stats_.error = cat("cannot create ", temp_path_, ": ", errno_text());
        temp_path_.clear();
        return;
    }
    building_ = true;
    stats_.built = true;
    end_ = kPage;
}

void PackedStoreFile::map_entry(Entry &e) {
    if (e.address) return;
    if (whole_file_ && e.in_file) {
        e.address = whole_file_ + e.offset;
        return;
    }
    // No MAP_POPULATE, which faults every page in before the op: XNNPACK's kernels fault the pages in as
    // they read them, and Linux's fault-around maps 16 cached pages per fault, which costs less (the figures:
    // docs/benchmarks.md, "Packed weights"). Pages not in the page cache are read at their first fault
    // either way. MADV_WILLNEED on the mapping cost as much as MAP_POPULATE saved.
    void *p = ::mmap(nullptr, static_cast<size_t>(e.bytes), PROT_READ, MAP_SHARED, fd_,
                     static_cast<off_t>(e.offset));
    if (p == MAP_FAILED) fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "cannot map packed weights from ", path_, ": ", errno_text());
    e.address = p;
}

// Reads an in_file entry into a block of the pool; false (nothing changed) when no block can be had or the
// read fails, and the entry is then mapped.
bool PackedStoreFile::copy_entry(Entry &e) {
    uint64_t capacity = 0;
    void *block = copy_pool_.take(e.bytes, capacity);
    if (!block) return false;
    if (!weight_cache::pread_all(fd_, block, e.bytes, e.offset)) {
        copy_pool_.give_back(block, capacity);
        return false;
    }
    e.address = block;
    e.copy_capacity = capacity;
    ++stats_.copied;
    return true;
}

void PackedStoreFile::drop_entry(Entry &e) {
    if (!e.address || e.holds > 0) return;
    if (e.copy_capacity) {
        copy_pool_.give_back(e.address, e.copy_capacity);
        e.copy_capacity = 0;
    } else if (e.in_file) {
        if (keep_pages_mapped_) return;
        if (whole_file_) ::madvise(e.address, static_cast<size_t>(e.bytes), MADV_DONTNEED);
        else ::munmap(e.address, static_cast<size_t>(e.bytes));
    } else {
        std::free(e.address);
    }
    e.address = nullptr;
}

void PackedStoreFile::idle(uint64_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end() || keep_pages_mapped_) return;
    const Entry &e = it->second;
    // A shared read-only mapping of the file: dropping its pages takes them out of this process's RSS
    // and leaves them in the page cache; the operator's next run faults them back in, as a fresh
    // mapping's first run does, without the unmapping and mapping again. (Kept operators map their
    // entries: a copy would have to stay.)
    if (e.in_file && e.address && !e.copy_capacity) ::madvise(e.address, static_cast<size_t>(e.bytes), MADV_DONTNEED);
}

const void *PackedStoreFile::acquire(uint64_t key, size_t) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    Entry &e = it->second;
    if (!e.address) {
        if (!e.in_file) return nullptr; // a memory copy that was let go: pack again
        // An operator kept between runs maps its entry, whose pages idle() then drops after each run; a
        // copy would stay in RSS.
        const bool copy = copy_entries_ && !building_ && !KernelKeepingScope::active();
        if (!(copy && copy_entry(e))) map_entry(e);
    }
    ++e.holds;
    if (e.in_file) {
        ++stats_.mapped;
        stats_.mapped_bytes += e.bytes;
    }
    return e.address;
}

const void *PackedStoreFile::insert(uint64_t key, const void *data, size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry &e = entries_[key];
    if (e.address) { // a copy in memory already (released ones have none)
        ++e.holds;
        return e.address;
    }
    e = Entry();
    e.bytes = bytes;
    if (building_) {
        try {
            weight_cache::pwrite_all(fd_, data, bytes, end_, temp_path_);
            e.offset = end_;
            e.in_file = true;
            end_ = round_up(end_ + bytes, kPage);
            map_entry(e);
            ++e.holds;
            ++stats_.stored;
            stats_.stored_bytes += bytes;
            return e.address;
        } catch (const Error &err) { // disk full, say: keep packing in memory, and never rename this file
            stats_.error = err.what();
            building_ = false;
            ::unlink(temp_path_.c_str());
            e = Entry();
            e.bytes = bytes;
        }
    }
    void *copy = std::aligned_alloc(128, static_cast<size_t>(round_up(bytes ? bytes : 1, 128)));
    if (!copy) {
        entries_.erase(key);
        fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "cannot keep ", bytes, " bytes of packed weights");
    }
    std::memcpy(copy, data, bytes);
    e.address = copy;
    e.holds = 1;
    ++stats_.in_memory;
    return copy;
}

void PackedStoreFile::release(uint64_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.holds == 0) return;
    Entry &e = it->second;
    if (--e.holds == 0) {
        drop_entry(e);
        if (!e.in_file && !e.address) entries_.erase(it);
    }
}

void PackedStoreFile::run_completed() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!building_ || stats_.stored == 0) return;
    std::vector<IndexEntry> index;
    for (const auto &[key, e] : entries_)
        if (e.in_file) index.push_back({key, e.offset, e.bytes});
    std::sort(index.begin(), index.end(), [](const IndexEntry &a, const IndexEntry &b) { return a.offset < b.offset; });
    Header h;
    std::memset(&h, 0, sizeof h);
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.version = kFormatVersion;
    h.header_bytes = sizeof h;
    h.identity = identity_;
    h.count = index.size();
    h.index_offset = end_;
    h.index_hash = hash_bytes(index.data(), index.size() * sizeof(IndexEntry));
    h.file_bytes = end_ + index.size() * sizeof(IndexEntry);
    h.header_hash = header_hash(h);
    try {
        weight_cache::pwrite_all(fd_, index.data(), index.size() * sizeof(IndexEntry), end_, temp_path_);
        weight_cache::pwrite_all(fd_, &h, sizeof h, 0, temp_path_);
        if (::fsync(fd_) != 0) fail(ONNXSTREAM_ERR_IO, "cannot sync ", temp_path_, ": ", errno_text());
        if (::rename(temp_path_.c_str(), path_.c_str()) != 0)
            fail(ONNXSTREAM_ERR_IO, "cannot rename ", temp_path_, " to ", path_, ": ", errno_text());
    } catch (const Error &err) {
        stats_.error = err.what();
        ::unlink(temp_path_.c_str());
        building_ = false;
        return;
    }
    // Make the rename durable; a failure here only risks a rebuild after a crash.
    const size_t slash = path_.rfind('/');
    const std::string folder = slash == std::string::npos ? "." : path_.substr(0, slash + 1);
    weight_cache::Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() >= 0) ::fsync(dir.get());
    building_ = false;
    temp_path_.clear();
    stats_.entries = h.count;
    stats_.file_bytes = h.file_bytes;
}

PackedStoreStats PackedStoreFile::stats() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

} // namespace onnxstream
