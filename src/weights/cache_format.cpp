#include "weights/cache_format.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>

#include "util/checked.h"
#include "util/error.h"
#include "util/hash64.h"
#include "weights/cache_file_io.h"

namespace onnxstream::weight_cache {

namespace {

// --- little binary encoder/decoder for the header and index ------------------------------------------

struct Writer {
    std::vector<uint8_t> bytes;
    void raw(const void *p, size_t n) {
        const uint8_t *b = static_cast<const uint8_t *>(p);
        bytes.insert(bytes.end(), b, b + n);
    }
    void u32(uint32_t v) { raw(&v, 4); }
    void u64(uint64_t v) { raw(&v, 8); }
    void str(const std::string &s) {
        u64(s.size());
        raw(s.data(), s.size());
    }
};

// Every read is bounds-checked; a failed read latches ok = false and yields zeros.
struct Reader {
    const uint8_t *p;
    size_t n, pos = 0;
    bool ok = true;
    Reader(const void *data, size_t size) : p(static_cast<const uint8_t *>(data)), n(size) {}
    bool raw(void *dst, size_t k) {
        if (!ok || k > n - pos) {
            ok = false;
            std::memset(dst, 0, k);
            return false;
        }
        std::memcpy(dst, p + pos, k);
        pos += k;
        return true;
    }
    uint32_t u32() {
        uint32_t v;
        raw(&v, 4);
        return v;
    }
    uint64_t u64() {
        uint64_t v;
        raw(&v, 8);
        return v;
    }
    std::string str() {
        uint64_t len = u64();
        if (!ok || len > n - pos) {
            ok = false;
            return {};
        }
        std::string s(reinterpret_cast<const char *>(p + pos), static_cast<size_t>(len));
        pos += static_cast<size_t>(len);
        return s;
    }
};

} // namespace

uint64_t stored_bytes(const Entry &e) {
    return checked::bytes_or_fail(e.shape, dtype_size(e.stored_dtype()), "cached weight " + e.file);
}

std::vector<uint8_t> encode_header(const Header &h) {
    Writer w;
    w.raw(kMagic, sizeof kMagic);
    w.u32(kEndianMark);
    w.u32(h.format);
    w.u32(h.engine);
    w.u32(h.layout);
    w.u64(h.file_size);
    w.u64(h.index_offset);
    w.u64(h.index_size);
    w.u64(h.index_hash);
    w.u64(h.content_hash);
    w.u64(h.text_hash);
    w.u64(hash_bytes(w.bytes.data(), w.bytes.size()));
    w.bytes.resize(kHeaderBytes, 0);
    return w.bytes;
}

bool decode_header(const uint8_t *bytes, Header &h, std::string &reason) {
    Reader r(bytes, kHeaderBytes);
    char magic[8];
    r.raw(magic, 8);
    if (std::memcmp(magic, kMagic, 8) != 0) {
        reason = "not a weights cache file (bad magic)";
        return false;
    }
    uint32_t endian = r.u32();
    h.format = r.u32();
    h.engine = r.u32();
    h.layout = r.u32();
    h.file_size = r.u64();
    h.index_offset = r.u64();
    h.index_size = r.u64();
    h.index_hash = r.u64();
    h.content_hash = r.u64();
    h.text_hash = r.u64();
    const size_t hashed = r.pos;
    uint64_t header_hash = r.u64();
    if (header_hash != hash_bytes(bytes, hashed)) {
        reason = "header checksum mismatch";
        return false;
    }
    if (endian != kEndianMark) {
        reason = "written on a machine of another byte order";
        return false;
    }
    if (h.format != kWeightCacheFormatVersion || h.layout != kWeightCacheLayoutVersion) {
        reason = cat("cache format ", h.format, ".", h.layout, ", this engine writes ", kWeightCacheFormatVersion,
                     ".", kWeightCacheLayoutVersion);
        return false;
    }
    if (h.engine != ONNXSTREAM_VERSION) {
        reason = cat("built by engine version ", h.engine, ", this is ", ONNXSTREAM_VERSION);
        return false;
    }
    return true;
}

std::vector<uint8_t> encode_index(const std::string &identity, const std::vector<SourceFile> &sources,
                                  const std::vector<Entry> &entries) {
    Writer idx;
    idx.str(identity);
    idx.u64(sources.size());
    for (const SourceFile &s : sources) {
        idx.str(s.name);
        idx.u64(s.size);
        idx.u64(static_cast<uint64_t>(s.mtime_ns));
    }
    idx.u64(entries.size());
    for (const Entry &e : entries) {
        idx.str(e.file);
        idx.u32(e.wanted == Layout::OHWI ? 1 : 0);
        idx.u32(static_cast<uint32_t>(e.src_dtype));
        idx.u32(static_cast<uint32_t>(e.prep));
        idx.u32(static_cast<uint32_t>(e.shape.size()));
        for (int64_t d : e.shape) idx.u64(static_cast<uint64_t>(d));
        idx.str(e.source);
        idx.u64(e.offset);
        idx.u64(e.bytes);
    }
    return idx.bytes;
}

bool decode_index(const std::vector<uint8_t> &index, uint64_t data_end, const std::string &identity,
                  std::unordered_map<std::string, Entry> &entries, std::vector<SourceFile> &sources,
                  std::string &reason) {
    Reader r(index.data(), index.size());
    if (r.str() != identity) {
        reason = r.ok ? "XNNPACK library changed" : "index truncated";
        return false;
    }
    uint64_t n_sources = r.u64();
    for (uint64_t i = 0; r.ok && i < n_sources && i < index.size(); ++i) {
        SourceFile s;
        s.name = r.str();
        s.size = r.u64();
        s.mtime_ns = static_cast<int64_t>(r.u64());
        sources.push_back(std::move(s));
    }
    uint64_t n_entries = r.u64();
    for (uint64_t i = 0; r.ok && i < n_entries && i < index.size(); ++i) {
        Entry e;
        e.file = r.str();
        uint32_t wanted = r.u32(), dtype = r.u32(), prep = r.u32(), rank = r.u32();
        if (!r.ok || wanted > 1 || !dtype_valid(static_cast<int>(dtype)) || prep > 2 || rank > 16) {
            reason = "index entry malformed";
            return false;
        }
        e.wanted = wanted ? Layout::OHWI : Layout::Plain;
        e.src_dtype = static_cast<DType>(dtype);
        e.prep = static_cast<Prep>(prep);
        uint64_t numel = 1;
        for (uint32_t k = 0; k < rank; ++k) {
            int64_t d = static_cast<int64_t>(r.u64());
            if (d < 0 || (d > 0 && numel > (uint64_t(1) << 48) / static_cast<uint64_t>(d))) {
                reason = "index entry malformed";
                return false;
            }
            numel *= static_cast<uint64_t>(d);
            e.shape.push_back(d);
        }
        e.source = r.str();
        e.offset = r.u64();
        e.bytes = r.u64();
        if (!r.ok) break;
        if (e.bytes != stored_bytes(e) || e.offset % kEntryAlign != 0 || e.offset < kDataStart ||
            e.offset > data_end || data_end - e.offset < e.bytes + kEntrySlack) {
            reason = cat("index entry for ", e.file, " out of bounds");
            return false;
        }
        std::string key = entry_key(e.file, e.wanted);
        entries.emplace(std::move(key), std::move(e));
    }
    if (!r.ok || r.pos != index.size() || sources.size() != n_sources || entries.size() != n_entries) {
        reason = "index truncated or malformed";
        return false;
    }
    return true;
}

// There is no XNNPACK version API in the header we build against: identify the loaded library by
// where xnn_initialize lives and that file's size and mtime. Looked up by name so this file does not
// include <xnnpack.h>.
std::string xnnpack_identity() {
    std::string id = cat("layout=", kWeightCacheLayoutVersion);
    void *sym = ::dlsym(RTLD_DEFAULT, "xnn_initialize");
    Dl_info info;
    std::string path;
    if (sym && ::dladdr(sym, &info) && info.dli_fname) path = info.dli_fname;
    else path = "/proc/self/exe";
    char resolved[PATH_MAX];
    if (::realpath(path.c_str(), resolved)) path = resolved;
    uint64_t size = 0;
    int64_t mtime = 0;
    stat_file(path, size, mtime);
    return cat(id, ";xnnpack=", path, ";size=", size, ";mtime_ns=", mtime);
}

} // namespace onnxstream::weight_cache
