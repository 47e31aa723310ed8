#include "weights/weight_cache.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <functional>
#include <limits>
#include <fcntl.h>
#include <map>
#include <random>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "tensor/half.h"
#include "util/checked.h"
#include "util/error.h"
#include "weights/weight_files.h"

namespace onnxstream {

namespace {

// Bump when the file layout (header, index encoding) changes.
constexpr uint32_t kWeightCacheFormatVersion = 1;
// Bump when what "prepared" means changes (which weights are widened, transposed, dequantized), i.e.
// whenever the bytes an op receives from the cache would differ.
constexpr uint32_t kWeightCacheLayoutVersion = 2;
constexpr char kMagic[8] = {'O', 'S', 'W', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kEndianMark = 0x01020304u;
constexpr uint64_t kDataStart = 4096; // header page; data starts page-aligned
constexpr uint64_t kHeaderBytes = 96;
// Weights are aligned like tensors and followed by kTensorPadding readable bytes, so served tensors
// are padded (XNNPACK may read XNN_EXTRA_BYTES past its inputs) and need no copy in the executor.
constexpr uint64_t kEntryAlign = kTensorAlignment;
constexpr uint64_t kEntrySlack = kTensorPadding;

// The widening ops read a float16 weight in these input slots by converting it to float32 when they
// run (Conv/ConvTranspose through as_f32, Gemm for B and C whatever A's dtype): storing float32 saves
// that conversion on every run and gives the same values. MatMul is left out: with float16 activations
// it converts B with to_f32 unconditionally, which would misread a float32 B.
bool widening_slot(const std::string &op, size_t slot) {
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm") return slot == 1 || slot == 2;
    if (op == "GegluFeedForward") return slot >= 1 && slot <= 4; // weight_f32 / bias_f32 take either dtype
    return op == "MatMul" && slot == 1;
}

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

uint64_t us_since(std::chrono::steady_clock::time_point t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count());
}

// XXH64 (streaming): fast enough to hash every weight byte while building.
class Hash64 {
public:
    explicit Hash64(uint64_t seed = 0) {
        v_[0] = seed + P1 + P2;
        v_[1] = seed + P2;
        v_[2] = seed;
        v_[3] = seed - P1;
        seed_ = seed;
    }
    void update(const void *data, size_t len) {
        const uint8_t *p = static_cast<const uint8_t *>(data);
        total_ += len;
        if (buf_len_ + len < 32) {
            if (len) std::memcpy(buf_ + buf_len_, p, len);
            buf_len_ += len;
            return;
        }
        if (buf_len_) {
            size_t take = 32 - buf_len_;
            std::memcpy(buf_ + buf_len_, p, take);
            stripe(buf_);
            p += take;
            len -= take;
            buf_len_ = 0;
        }
        while (len >= 32) {
            stripe(p);
            p += 32;
            len -= 32;
        }
        if (len) std::memcpy(buf_, p, len);
        buf_len_ = len;
    }
    void update_u64(uint64_t v) { update(&v, sizeof v); }
    void update_str(const std::string &s) {
        update_u64(s.size());
        update(s.data(), s.size());
    }
    uint64_t digest() const {
        uint64_t h;
        if (total_ >= 32) {
            h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
            for (uint64_t v : v_) h = (h ^ round(0, v)) * P1 + P4;
        } else {
            h = seed_ + P5;
        }
        h += total_;
        const uint8_t *p = buf_;
        size_t len = buf_len_;
        for (; len >= 8; p += 8, len -= 8) h = rotl(h ^ round(0, read64(p)), 27) * P1 + P4;
        if (len >= 4) {
            uint32_t k;
            std::memcpy(&k, p, 4);
            h = rotl(h ^ (static_cast<uint64_t>(k) * P1), 23) * P2 + P3;
            p += 4;
            len -= 4;
        }
        for (; len; ++p, --len) h = rotl(h ^ (*p * P5), 11) * P1;
        h ^= h >> 33;
        h *= P2;
        h ^= h >> 29;
        h *= P3;
        h ^= h >> 32;
        return h;
    }

private:
    static constexpr uint64_t P1 = 11400714785074694791ULL, P2 = 14029467366897019727ULL,
                              P3 = 1609587929392839161ULL, P4 = 9650029242287828579ULL,
                              P5 = 2870177450012600261ULL;
    static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
    static uint64_t round(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
    static uint64_t read64(const uint8_t *p) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    void stripe(const uint8_t *p) {
        for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], read64(p + 8 * i));
    }
    uint64_t v_[4], seed_, total_ = 0;
    uint8_t buf_[32];
    size_t buf_len_ = 0;
};

uint64_t hash_bytes(const void *p, size_t n) {
    Hash64 h;
    h.update(p, n);
    return h.digest();
}

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

// --- what the cache stores ---------------------------------------------------------------------------

enum class Prep : uint32_t { AsIs = 0, WidenF16 = 1, DequantizeToF32 = 2 };

struct Entry {
    std::string file;  // as referenced in model.txt
    Layout wanted = Layout::Plain;
    DType src_dtype = DType::F32; // as model.txt declares it
    Shape shape;
    Prep prep = Prep::AsIs;
    std::string source; // base name of the file actually read (the "_nhwc" twin or the file itself)
    uint64_t offset = 0, bytes = 0;

    DType stored_dtype() const { return prep == Prep::AsIs ? src_dtype : DType::F32; }
};

struct SourceFile {
    std::string name;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
};

std::string entry_key(const std::string &file, Layout wanted) {
    return file + '\0' + (wanted == Layout::OHWI ? 'O' : 'P');
}

std::string join_path(const std::string &folder, const std::string &file) {
    return folder.back() == '/' ? folder + file : folder + "/" + file;
}

std::string base_name(const std::string &path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool stat_file(const std::string &path, uint64_t &size, int64_t &mtime_ns) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    size = static_cast<uint64_t>(st.st_size);
    mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
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

// The cache's entries for a graph: one per distinct (file, wanted), in first-use order, with how each
// is prepared. A float16 file is widened only when every reference to it, in any layout, is a slot
// that widens it anyway; then all its entries are float32 and no op sees a dtype it does not expect.
std::vector<Entry> plan_entries(const Graph &graph) {
    std::map<std::string, bool> widen; // by file
    for (const Node &node : graph.nodes())
        for (size_t i = 0; i < node.inputs.size(); ++i) {
            const NodeInput &in = node.inputs[i];
            if (in.kind != NodeInput::Weight) continue;
            bool ok = in.weight.dtype == DType::F16 && !in.weight.quant.present &&
                      widening_slot(node.line->type, i);
            auto it = widen.find(in.weight.file);
            if (it == widen.end()) widen.emplace(in.weight.file, ok);
            else it->second = it->second && ok;
        }
    std::vector<Entry> entries;
    std::set<std::string> seen;
    for (const Node &node : graph.nodes())
        for (const NodeInput &in : node.inputs) {
            if (in.kind != NodeInput::Weight) continue;
            if (!seen.insert(entry_key(in.weight.file, in.weight.wanted)).second) continue;
            Entry e;
            e.file = in.weight.file;
            e.wanted = in.weight.wanted;
            e.src_dtype = in.weight.dtype;
            e.shape = in.weight.shape;
            // Quantized weights stay quantized: no op consumer is selected for Prep::DequantizeToF32 yet
            // (the hook for one that would dequantize on every run; write_prepared handles per-tensor
            // parameters, a per-channel consumer must extend it).
            e.prep = widen[in.weight.file] ? Prep::WidenF16 : Prep::AsIs;
            entries.push_back(std::move(e));
        }
    return entries;
}

WeightSpec spec_of(const Entry &e, const QuantParams &quant) {
    WeightSpec s;
    s.file = e.file;
    s.dtype = e.src_dtype;
    s.shape = e.shape;
    s.quant = quant;
    s.wanted = e.wanted;
    return s;
}

uint64_t stored_bytes(const Entry &e) {
    return checked::bytes_or_fail(e.shape, dtype_size(e.stored_dtype()), "cached weight " + e.file);
}

// --- file I/O helpers --------------------------------------------------------------------------------

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

void pwrite_all(int fd, const void *data, uint64_t n, uint64_t offset, const std::string &path) {
    const uint8_t *p = static_cast<const uint8_t *>(data);
    while (n) {
        ssize_t w = ::pwrite(fd, p, static_cast<size_t>(std::min<uint64_t>(n, 1u << 30)), static_cast<off_t>(offset));
        if (w < 0) {
            if (errno == EINTR) continue;
            fail(ONNXSTREAM_ERR_IO, "cannot write weights cache file ", path, ": ", std::strerror(errno));
        }
        p += w;
        n -= static_cast<uint64_t>(w);
        offset += static_cast<uint64_t>(w);
    }
}

bool pread_all(int fd, void *data, uint64_t n, uint64_t offset) {
    uint8_t *p = static_cast<uint8_t *>(data);
    while (n) {
        ssize_t r = ::pread(fd, p, static_cast<size_t>(std::min<uint64_t>(n, 1u << 30)), static_cast<off_t>(offset));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<uint64_t>(r);
        offset += static_cast<uint64_t>(r);
    }
    return true;
}

struct Mapping {
    void *base = nullptr;
    size_t bytes = 0;
    ~Mapping() {
        if (base) ::munmap(base, bytes);
    }
};

// nullptr with errno set on failure; ENOMEM when the file cannot fit the address space (32-bit builds).
std::shared_ptr<Mapping> map_file(int fd, uint64_t bytes) {
    if (bytes > std::numeric_limits<size_t>::max()) {
        errno = ENOMEM;
        return nullptr;
    }
    auto m = std::make_shared<Mapping>();
    void *p = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return nullptr;
    m->base = p;
    m->bytes = static_cast<size_t>(bytes);
    return m;
}

// --- the provider ------------------------------------------------------------------------------------

struct Header {
    uint32_t format = 0, engine = 0, layout = 0;
    uint64_t file_size = 0, index_offset = 0, index_size = 0, index_hash = 0, content_hash = 0, text_hash = 0;
};

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

class CacheProvider : public WeightCacheProvider {
public:
    CacheProvider(std::unique_ptr<WeightsProvider> inner, const std::string &path, const Graph &graph,
                  const std::string &model_text, const std::string &folder, const WeightCacheOptions &options)
        : inner_(std::move(inner)), path_(path), options_(options) {
        if (folder.empty())
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "the weights cache ", path,
                 " needs a model loaded from a folder (weights read from files)");
        if (path.empty()) fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "the weights cache path is empty");
        folder_ = folder;
        inner_->set_folder(folder);
        // QuantParams of each referenced file, to hand back on served tensors.
        for (const Node &node : graph.nodes())
            for (const NodeInput &in : node.inputs)
                if (in.kind == NodeInput::Weight) quant_.emplace(in.weight.file, in.weight.quant);

        auto start = std::chrono::steady_clock::now();
        std::vector<Entry> wanted = plan_entries(graph);
        text_hash_ = hash_bytes(model_text.data(), model_text.size());
        xnn_id_ = xnnpack_identity();
        for (Entry &e : wanted) e.source = base_name(resolve_weight_file(folder_, spec_of(e, {})).path);

        std::string reason;
        if (!open_existing(wanted, reason)) {
            stats_.rebuild_reason = reason;
            build(std::move(wanted), model_text);
            stats_.built = true;
        }
        stats_.setup_us = us_since(start);
        stats_.entries = entries_.size();
        for (const auto &kv : entries_) stats_.widened += kv.second.prep == Prep::WidenF16;
        stats_.content_hash = content_hash_;
    }

    void set_folder(const std::string &folder) override {
        // The cache is bound to the folder it was validated against; Model re-sets the same one.
        if (!folder.empty()) inner_->set_folder(folder);
    }
    void validate(const WeightSpec &spec) override {
        if (!find(spec)) inner_->validate(spec);
    }

    Tensor fetch(const WeightSpec &spec, const Allocator &alloc) override {
        const Entry *e = find(spec);
        if (!e) return pass([&] { return inner_->fetch(spec, alloc); });
        return serve(*e, spec, e->offset, e->bytes, e->shape);
    }

    Tensor fetch_rows(const WeightSpec &spec, int64_t begin, int64_t end, const Allocator &alloc) override {
        const Entry *e = find(spec);
        if (!e) return pass([&] { return inner_->fetch_rows(spec, begin, end, alloc); });
        if (e->shape.empty() || begin < 0 || end > e->shape[0] || begin >= end)
            fail(ONNXSTREAM_ERR_INTERNAL, "weight rows [", begin, ", ", end, ") out of range for ", e->file, " ",
                 shape_str(e->shape));
        // Rows along dim 0 are contiguous in Plain and OHWI alike.
        const uint64_t row_bytes = e->bytes / static_cast<uint64_t>(e->shape[0]);
        Shape part = e->shape;
        part[0] = end - begin;
        return serve(*e, spec, e->offset + row_bytes * static_cast<uint64_t>(begin),
                     row_bytes * static_cast<uint64_t>(end - begin), part);
    }

private:
    template <typename Fn> Tensor pass(Fn &&read) {
        stats_.passed += 1;
        uint64_t b0 = inner_->bytes_read(), t0 = inner_->read_us();
        Tensor t = read();
        bytes_read_ += inner_->bytes_read() - b0;
        read_us_ += inner_->read_us() - t0;
        return t;
    }

    // A zero-copy tensor over [offset, offset + bytes) of the mapping. Whatever follows in the file is
    // readable (more rows, or the entry's slack), so the storage is padded.
    Tensor serve(const Entry &e, const WeightSpec &spec, uint64_t offset, uint64_t bytes, const Shape &shape) {
        uint8_t *p = static_cast<uint8_t *>(map_->base) + offset;
        std::shared_ptr<Mapping> keep = map_;
        std::function<void()> release = [keep]() {};
        if (!options_.keep_pages_mapped && bytes > 0) {
            // Dropping a page another live tensor shares is harmless: it faults back in from the page cache.
            const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
            const uint64_t first = offset / page * page, last = align_up(offset + bytes, page);
            release = [keep, first, last]() {
                ::madvise(static_cast<uint8_t *>(keep->base) + first, static_cast<size_t>(last - first),
                          MADV_DONTNEED);
            };
        }
        Tensor t(e.stored_dtype(), shape, std::make_shared<Storage>(p, static_cast<size_t>(bytes), true, release));
        t.set_layout(e.wanted);
        if (e.prep == Prep::AsIs) t.set_quant(spec.quant);
        stats_.served += 1;
        stats_.served_bytes += bytes;
        bytes_read_ += bytes;
        return t;
    }

    // The cached entry for a reference, if the cache holds exactly what the reference declares.
    const Entry *find(const WeightSpec &spec) const {
        auto it = entries_.find(entry_key(spec.file, spec.wanted));
        if (it == entries_.end()) return nullptr;
        const Entry &e = it->second;
        if (e.src_dtype != spec.dtype || e.shape != spec.shape) return nullptr;
        return &e;
    }

    // Use the file at path_ if it is complete, ours, and current; otherwise say why not.
    bool open_existing(const std::vector<Entry> &wanted, std::string &reason) {
        Fd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
        if (fd.get() < 0) {
            if (errno != ENOENT) reason = cat("cannot open: ", std::strerror(errno));
            return false;
        }
        struct stat st;
        if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
            reason = "not a regular file";
            return false;
        }
        const uint64_t size = static_cast<uint64_t>(st.st_size);
        uint8_t hb[kHeaderBytes];
        if (size < kDataStart || !pread_all(fd.get(), hb, kHeaderBytes, 0)) {
            reason = "truncated header";
            return false;
        }
        Reader r(hb, kHeaderBytes);
        char magic[8];
        r.raw(magic, 8);
        if (std::memcmp(magic, kMagic, 8) != 0) {
            reason = "not a weights cache file (bad magic)";
            return false;
        }
        Header h;
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
        if (header_hash != hash_bytes(hb, hashed)) {
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
        if (h.file_size != size) {
            reason = cat("file has ", size, " bytes, its header says ", h.file_size, " (truncated?)");
            return false;
        }
        if (h.index_offset < kDataStart || h.index_offset > size || h.index_size > size - h.index_offset) {
            reason = "index out of bounds";
            return false;
        }
        if (h.text_hash != text_hash_) {
            reason = "model.txt changed";
            return false;
        }
        std::vector<uint8_t> index(static_cast<size_t>(h.index_size));
        if (!pread_all(fd.get(), index.data(), index.size(), h.index_offset) ||
            hash_bytes(index.data(), index.size()) != h.index_hash) {
            reason = "index checksum mismatch";
            return false;
        }
        std::unordered_map<std::string, Entry> entries;
        std::vector<SourceFile> sources;
        if (!decode_index(index, h.index_offset, entries, sources, reason)) return false;

        for (const SourceFile &s : sources) {
            uint64_t sz = 0;
            int64_t mt = 0;
            if (!stat_file(join_path(folder_, s.name), sz, mt) || sz != s.size || mt != s.mtime_ns) {
                reason = cat("weight file ", s.name, " changed since the cache was built");
                return false;
            }
        }
        for (const Entry &w : wanted) {
            auto it = entries.find(entry_key(w.file, w.wanted));
            if (it == entries.end()) {
                reason = cat("no entry for ", w.file);
                return false;
            }
            const Entry &e = it->second;
            if (e.src_dtype != w.src_dtype || e.shape != w.shape || e.prep != w.prep || e.source != w.source) {
                reason = cat("entry for ", w.file, " does not match the model");
                return false;
            }
        }
        auto map = map_file(fd.get(), size);
        if (!map) {
            reason = cat("cannot map: ", std::strerror(errno));
            return false;
        }
        map_ = std::move(map);
        entries_ = std::move(entries);
        stats_.file_bytes = size;
        content_hash_ = h.content_hash;
        return true;
    }

    bool decode_index(const std::vector<uint8_t> &index, uint64_t data_end,
                      std::unordered_map<std::string, Entry> &entries, std::vector<SourceFile> &sources,
                      std::string &reason) const {
        Reader r(index.data(), index.size());
        if (r.str() != xnn_id_) {
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

    void build(std::vector<Entry> wanted, const std::string &model_text) {
        std::random_device rd;
        const std::string tmp = cat(path_, ".tmp.", ::getpid(), ".", std::hex, (uint64_t(rd()) << 32) ^ rd());
        Fd fd(::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
        if (fd.get() < 0)
            fail(ONNXSTREAM_ERR_IO, "cannot create weights cache file ", tmp, ": ", std::strerror(errno),
                 " (the cache's folder must exist and be writable to build ", path_, ")");
        try {
            write_cache(fd.get(), tmp, wanted, model_text);
            if (::fsync(fd.get()) != 0)
                fail(ONNXSTREAM_ERR_IO, "cannot sync weights cache file ", tmp, ": ", std::strerror(errno));
            struct stat st;
            ::fstat(fd.get(), &st);
            auto map = map_file(fd.get(), static_cast<uint64_t>(st.st_size));
            if (!map && errno == ENOMEM)
                fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "cannot map weights cache file ", tmp, " (",
                     static_cast<uint64_t>(st.st_size), " bytes): no room in the address space (",
                     std::strerror(errno), "); a 32-bit process maps about 3 GB in all");
            if (!map) fail(ONNXSTREAM_ERR_IO, "cannot map weights cache file ", tmp, ": ", std::strerror(errno));
            if (::rename(tmp.c_str(), path_.c_str()) != 0)
                fail(ONNXSTREAM_ERR_IO, "cannot rename ", tmp, " to ", path_, ": ", std::strerror(errno));
            map_ = std::move(map);
            stats_.file_bytes = static_cast<uint64_t>(st.st_size);
        } catch (...) {
            ::unlink(tmp.c_str());
            throw;
        }
        // Make the rename durable; a failure here only risks a rebuild after a crash.
        size_t slash = path_.rfind('/');
        std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash));
        Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (dfd.get() >= 0) ::fsync(dfd.get());
    }

    // Write the stored form of fetched weight t at e.offset. Conversions go through a small block
    // buffer, so building never holds a second whole copy of a weight.
    static void write_prepared(int fd, const std::string &tmp, const Tensor &t, const Entry &e,
                               const Allocator &alloc) {
        if (e.prep == Prep::AsIs) {
            pwrite_all(fd, t.raw(), e.bytes, e.offset, tmp);
            return;
        }
        constexpr size_t kBlock = 1 << 16; // elements
        const size_t n = static_cast<size_t>(t.numel());
        Tensor buf = make_tensor(alloc, DType::F32, {static_cast<int64_t>(std::min(n, kBlock))});
        float *dst = buf.data<float>();
        for (size_t b = 0; b < n; b += kBlock) {
            const size_t m = std::min(kBlock, n - b);
            if (e.prep == Prep::WidenF16) {
                half_to_float_n(t.data<uint16_t>() + b, dst, m);
            } else { // DequantizeToF32, per-tensor parameters
                const double scale = t.quant().scale;
                const int64_t zp = t.quant().zero_point;
                for (size_t i = 0; i < m; ++i) {
                    int64_t q = t.dtype() == DType::U8 ? t.data<uint8_t>()[b + i] : t.data<int8_t>()[b + i];
                    dst[i] = static_cast<float>(static_cast<double>(q - zp) * scale);
                }
            }
            pwrite_all(fd, dst, m * sizeof(float), e.offset + b * sizeof(float), tmp);
        }
    }

    void write_cache(int fd, const std::string &tmp, std::vector<Entry> &wanted, const std::string &model_text) {
        // Stat every source before reading it: a file modified during the build then mismatches on the
        // next open and the cache is rebuilt, rather than pairing new stats with old bytes.
        std::vector<SourceFile> sources;
        std::set<std::string> seen;
        for (const Entry &e : wanted) {
            if (!seen.insert(e.source).second) continue;
            SourceFile s;
            s.name = e.source;
            if (!stat_file(join_path(folder_, s.name), s.size, s.mtime_ns))
                fail(ONNXSTREAM_ERR_IO, "cannot stat weight file ", join_path(folder_, s.name), ": ",
                     std::strerror(errno));
            sources.push_back(std::move(s));
        }

        Hash64 content;
        content.update_str(model_text);
        Allocator alloc; // one weight (plus its widened copy) at a time
        uint64_t offset = kDataStart;
        static const uint8_t zeros[kEntryAlign + kEntrySlack] = {};
        for (Entry &e : wanted) {
            WeightSpec spec = spec_of(e, quant_.at(e.file));
            uint64_t b0 = inner_->bytes_read(), t0 = inner_->read_us();
            Tensor t = inner_->fetch(spec, alloc);
            stats_.build_bytes_read += inner_->bytes_read() - b0;
            bytes_read_ += inner_->bytes_read() - b0;
            read_us_ += inner_->read_us() - t0;
            if (t.dtype() != e.src_dtype || t.shape() != e.shape || t.layout() != e.wanted)
                fail(ONNXSTREAM_ERR_INTERNAL, "weights cache: provider returned ", e.file, " as ", dtype_name(t.dtype()),
                     " ", shape_str(t.shape()), " instead of ", dtype_name(e.src_dtype), " ", shape_str(e.shape));
            content.update_str(entry_key(e.file, e.wanted));
            content.update(t.raw(), t.byte_size());
            e.offset = offset;
            e.bytes = stored_bytes(e);
            write_prepared(fd, tmp, t, e, alloc);
            t = Tensor();
            uint64_t next = align_up(offset + e.bytes + kEntrySlack, kEntryAlign);
            pwrite_all(fd, zeros, next - (offset + e.bytes), offset + e.bytes, tmp);
            offset = next;
        }

        Writer idx;
        idx.str(xnn_id_);
        idx.u64(sources.size());
        for (const SourceFile &s : sources) {
            idx.str(s.name);
            idx.u64(s.size);
            idx.u64(static_cast<uint64_t>(s.mtime_ns));
        }
        idx.u64(wanted.size());
        for (const Entry &e : wanted) {
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
        pwrite_all(fd, idx.bytes.data(), idx.bytes.size(), offset, tmp);

        Header h;
        h.format = kWeightCacheFormatVersion;
        h.engine = ONNXSTREAM_VERSION;
        h.layout = kWeightCacheLayoutVersion;
        h.index_offset = offset;
        h.index_size = idx.bytes.size();
        h.file_size = offset + idx.bytes.size();
        h.index_hash = hash_bytes(idx.bytes.data(), idx.bytes.size());
        h.content_hash = content.digest();
        h.text_hash = text_hash_;
        std::vector<uint8_t> hb = encode_header(h);
        pwrite_all(fd, hb.data(), hb.size(), 0, tmp);
        if (::ftruncate(fd, static_cast<off_t>(h.file_size)) != 0)
            fail(ONNXSTREAM_ERR_IO, "cannot size weights cache file ", tmp, ": ", std::strerror(errno));
        content_hash_ = h.content_hash;
        for (Entry &e : wanted) {
            std::string key = entry_key(e.file, e.wanted);
            entries_.emplace(std::move(key), std::move(e));
        }
    }

    std::unique_ptr<WeightsProvider> inner_;
    std::string path_;
    WeightCacheOptions options_;
    std::string xnn_id_;
    uint64_t text_hash_ = 0, content_hash_ = 0;
    std::map<std::string, QuantParams> quant_;
    std::unordered_map<std::string, Entry> entries_;
    std::shared_ptr<Mapping> map_;
};

} // namespace

std::unique_ptr<WeightCacheProvider> make_weight_cache_provider(std::unique_ptr<WeightsProvider> inner,
                                                                const std::string &cache_path,
                                                                const Graph &graph,
                                                                const std::string &model_text,
                                                                const std::string &folder,
                                                                const WeightCacheOptions &options) {
    return std::make_unique<CacheProvider>(std::move(inner), cache_path, graph, model_text, folder, options);
}

} // namespace onnxstream
