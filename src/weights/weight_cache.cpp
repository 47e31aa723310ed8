// The weights cache provider: opens a valid cache file or builds one, then serves weights from its mapping
// (weight_cache.h). The file format is in cache_format.*, the choice of entries in cache_plan.*, the file
// and mapping helpers in cache_file_io.*.
#include "weights/weight_cache.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "util/error.h"
#include "util/hash64.h"
#include "util/stopwatch.h"
#include "weights/cache_file_io.h"
#include "weights/cache_format.h"
#include "weights/cache_plan.h"
#include "weights/prepare.h"
#include "weights/weight_files.h"

namespace onnxstream::weight_cache {

namespace {

uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

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

        Stopwatch watch;
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
        stats_.setup_us = watch.elapsed_us();
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
    // Served entries are mapped, not read; what passes through is read by the inner provider.
    void set_read_observer(ReadObserver *observer) override { inner_->set_read_observer(observer); }

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
        uint64_t b0 = inner_->bytes_read(), t0 = inner_->read_us(), c0 = inner_->bytes_copied();
        Tensor t = read();
        bytes_read_ += inner_->bytes_read() - b0;
        read_us_ += inner_->read_us() - t0;
        bytes_copied_ += inner_->bytes_copied() - c0;
        return t;
    }

    // A zero-copy tensor over [offset, offset + bytes) of the mapping. Whatever follows in the file is
    // readable (more rows, or the entry's slack), so the storage is padded.
    Tensor serve(const Entry &e, const WeightSpec &spec, uint64_t offset, uint64_t bytes, const Shape &shape) {
        uint8_t *p = static_cast<uint8_t *>(map_->base) + offset;
        std::shared_ptr<Mapping> keep = map_;
        std::function<void()> release = [keep]() {}, drop_pages;
        if (!options_.keep_pages_mapped && bytes > options_.kept_small_weight_bytes) {
            // Dropping a page another live tensor shares is harmless: it faults back in from the page cache.
            // The mapping outlives the call: `release` (run after it) holds it.
            const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
            const uint64_t first = offset / page * page, last = align_up(offset + bytes, page);
            Mapping *map = keep.get();
            drop_pages = [map, first, last]() {
                ::madvise(static_cast<uint8_t *>(map->base) + first, static_cast<size_t>(last - first),
                          MADV_DONTNEED);
            };
        }
        Tensor t(e.stored_dtype(), shape,
                 std::make_shared<Storage>(p, static_cast<size_t>(bytes), true, release, drop_pages));
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
        Header h;
        if (!decode_header(hb, h, reason)) return false;
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
        if (!decode_index(index, h.index_offset, xnn_id_, entries, sources, reason)) return false;

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
        Allocator alloc; // one weight (and its prepared copy) at a time
        uint64_t offset = kDataStart;
        static const uint8_t zeros[kEntryAlign + kEntrySlack] = {};
        for (Entry &e : wanted) {
            WeightSpec spec = spec_of(e, quant_.at(e.file));
            uint64_t b0 = inner_->bytes_read(), t0 = inner_->read_us();
            Tensor t = inner_->fetch(spec, alloc);
            stats_.build_bytes_read += inner_->bytes_read() - b0;
            bytes_read_ += inner_->bytes_read() - b0;
            read_us_ += inner_->read_us() - t0;
            if (t.dtype() != e.src_dtype || t.shape() != e.shape)
                fail(ONNXSTREAM_ERR_INTERNAL, "weights cache: provider returned ", e.file, " as ", dtype_name(t.dtype()),
                     " ", shape_str(t.shape()), " instead of ", dtype_name(e.src_dtype), " ", shape_str(e.shape));
            content.update_str(entry_key(e.file, e.wanted));
            content.update(t.raw(), t.byte_size()); // the source bytes, as the provider read them
            // Stored exactly as the op asks (weights/prepare.h), so serving it needs no conversion.
            t = prepare_weight(t, WeightPrep{e.wanted, e.prep == Prep::AsIs ? e.src_dtype : DType::F32}, 0, alloc,
                               nullptr, nullptr);
            e.offset = offset;
            e.bytes = stored_bytes(e);
            if (t.byte_size() != e.bytes)
                fail(ONNXSTREAM_ERR_INTERNAL, "weights cache: ", e.file, " prepared to ", t.byte_size(), " bytes, not ",
                     e.bytes);
            pwrite_all(fd, t.raw(), e.bytes, e.offset, tmp);
            t = Tensor();
            uint64_t next = align_up(offset + e.bytes + kEntrySlack, kEntryAlign);
            pwrite_all(fd, zeros, next - (offset + e.bytes), offset + e.bytes, tmp);
            offset = next;
        }

        const std::vector<uint8_t> index = encode_index(xnn_id_, sources, wanted);
        pwrite_all(fd, index.data(), index.size(), offset, tmp);

        Header h;
        h.format = kWeightCacheFormatVersion;
        h.engine = ONNXSTREAM_VERSION;
        h.layout = kWeightCacheLayoutVersion;
        h.index_offset = offset;
        h.index_size = index.size();
        h.file_size = offset + index.size();
        h.index_hash = hash_bytes(index.data(), index.size());
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

} // namespace onnxstream::weight_cache

namespace onnxstream {

std::unique_ptr<WeightCacheProvider> make_weight_cache_provider(std::unique_ptr<WeightsProvider> inner,
                                                                const std::string &cache_path,
                                                                const Graph &graph,
                                                                const std::string &model_text,
                                                                const std::string &folder,
                                                                const WeightCacheOptions &options) {
    return std::make_unique<weight_cache::CacheProvider>(std::move(inner), cache_path, graph, model_text, folder,
                                                         options);
}

} // namespace onnxstream
