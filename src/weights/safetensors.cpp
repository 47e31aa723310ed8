#include "weights/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <list>
#include <mutex>
#include <set>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "util/checked.h"
#include "weights/cache_file_io.h"
#include "util/error.h"
#include "tensor/half.h"
#include "tensor/tensor.h"
#include "util/strings.h"

namespace onnxstream {

namespace {

struct DTypeInfo {
    const char *name;
    StoredDType dtype;
    size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {"F32", StoredDType::F32, 4}, {"F16", StoredDType::F16, 2}, {"BF16", StoredDType::BF16, 2},
    {"I64", StoredDType::I64, 8}, {"I32", StoredDType::I32, 4}, {"I8", StoredDType::I8, 1},
    {"U8", StoredDType::U8, 1},   {"BOOL", StoredDType::Bool, 1}, {"F64", StoredDType::F64, 8},
    {"I16", StoredDType::I16, 2}, {"U16", StoredDType::U16, 2},   {"U32", StoredDType::U32, 4},
    {"U64", StoredDType::U64, 8}, {"F8_E4M3", StoredDType::F8_E4M3, 1}, {"F8_E5M2", StoredDType::F8_E5M2, 1},
};
// Names the format defines that this engine has no use for: UNSUPPORTED rather than INVALID_MODEL.
constexpr const char *kOtherFormatDTypes[] = {"F4", "F6_E2M3", "F6_E3M2", "F8_E8M0", "E8M0"};

const DTypeInfo &info_of(StoredDType dtype) {
    for (const DTypeInfo &d : kDTypes)
        if (d.dtype == dtype) return d;
    return kDTypes[0];
}

} // namespace

const char *stored_dtype_name(StoredDType dtype) { return info_of(dtype).name; }
size_t stored_dtype_size(StoredDType dtype) { return info_of(dtype).size; }

StoredDType stored_dtype_of(DType dtype) {
    switch (dtype) {
    case DType::F32: return StoredDType::F32;
    case DType::F16: return StoredDType::F16;
    case DType::I64: return StoredDType::I64;
    case DType::I32: return StoredDType::I32;
    case DType::I8: return StoredDType::I8;
    case DType::U8:
    case DType::U4: return StoredDType::U8;
    case DType::I4: return StoredDType::I8;
    case DType::Bool: return StoredDType::Bool;
    case DType::F64: return StoredDType::F64;
    case DType::I16: return StoredDType::I16;
    case DType::U16: return StoredDType::U16;
    case DType::U32: return StoredDType::U32;
    case DType::U64: return StoredDType::U64;
    case DType::BF16: return StoredDType::BF16;
    case DType::F8E4M3FN: return StoredDType::F8_E4M3;
    case DType::F8E5M2: return StoredDType::F8_E5M2;
    case DType::F8E4M3FNUZ:
    case DType::F8E5M2FNUZ: return StoredDType::U8;
    }
    return StoredDType::F32;
}

// The header as JSON events. Layout: { "__metadata__": {str: str, ...}?, NAME: {"dtype": str, "shape":
// [uint, ...], "data_offsets": [uint, uint]}, ... }. Anything else stops the parse with a message.
struct SafetensorsParser : nlohmann::json::json_sax_t {
    using json = nlohmann::json;

    SafetensorsIndex &index;
    std::string error; // set when a handler refuses; the first one wins
    Status status = ONNXSTREAM_ERR_INVALID_MODEL;

    // Where we are: 0 outside, 1 in the top object, 2 in a tensor's (or the metadata's) object, 3 in an array.
    int depth = 0;
    std::string entry;     // the top-level key being read
    bool in_metadata = false;
    std::string field;     // the key inside a tensor's object
    std::set<std::string> fields_seen, metadata_keys;
    std::set<std::string> names;
    StoredTensor tensor;
    bool have_dtype = false, have_shape = false, have_offsets = false;
    std::vector<uint64_t> array; // the shape or data_offsets being read

    explicit SafetensorsParser(SafetensorsIndex &i) : index(i) {}

    bool refuse(const std::string &message, Status s = ONNXSTREAM_ERR_INVALID_MODEL) {
        if (error.empty()) {
            error = message;
            status = s;
        }
        return false;
    }
    std::string where() const {
        return in_metadata ? std::string("__metadata__") : cat("tensor '", entry, "'");
    }
    bool unexpected(const char *what) {
        if (depth == 0) return refuse(cat("the header is ", what, ", not a JSON object"));
        if (depth == 1) return refuse(cat("entry '", entry, "' is ", what, ", not an object"));
        if (in_metadata) return refuse(cat("__metadata__ value '", field, "' is ", what, ", not a string"));
        if (depth == 3) return refuse(cat(where(), ": ", field, " holds ", what, ", expected unsigned integers"));
        return refuse(cat(where(), ": ", field, " is ", what));
    }

    bool null() override { return unexpected("null"); }
    bool boolean(bool) override { return unexpected("a boolean"); }
    bool number_integer(number_integer_t v) override {
        if (v >= 0) return number_unsigned(static_cast<number_unsigned_t>(v));
        return unexpected("a negative number");
    }
    bool number_unsigned(number_unsigned_t v) override {
        if (depth != 3) return unexpected("a number");
        array.push_back(v);
        return true;
    }
    bool number_float(number_float_t, const string_t &) override {
        return unexpected("a fractional or out-of-range number");
    }
    bool binary(binary_t &) override { return unexpected("binary data"); }

    bool string(string_t &s) override {
        if (depth == 2 && in_metadata) {
            index.metadata_[field] = s;
            return true;
        }
        if (depth == 2 && field == "dtype") {
            for (const DTypeInfo &d : kDTypes)
                if (s == d.name) {
                    tensor.dtype = d.dtype;
                    have_dtype = true;
                    return true;
                }
            for (const char *other : kOtherFormatDTypes)
                if (s == other)
                    return refuse(cat(where(), ": dtype ", s, " is not supported (F32, F16, BF16, I64, I32, I8, U8, BOOL)"),
                                  ONNXSTREAM_ERR_UNSUPPORTED);
            return refuse(cat(where(), ": unknown dtype '", s, "'"));
        }
        return unexpected("a string");
    }

    bool start_object(std::size_t) override {
        if (depth == 0) {
            depth = 1;
            return true;
        }
        if (depth == 1) {
            depth = 2;
            fields_seen.clear();
            tensor = StoredTensor();
            have_dtype = have_shape = have_offsets = false;
            return true;
        }
        return unexpected("an object");
    }
    bool key(string_t &k) override {
        if (depth == 1) {
            if (!names.insert(k).second) return refuse(cat("entry '", k, "' appears twice"));
            entry = k;
            in_metadata = k == "__metadata__";
            return true;
        }
        // depth 2
        field = k;
        if (in_metadata) {
            if (!metadata_keys.insert(k).second) return refuse(cat("__metadata__: key '", k, "' appears twice"));
            return true;
        }
        if (k != "dtype" && k != "shape" && k != "data_offsets")
            return refuse(cat(where(), ": unknown field '", k, "' (expected dtype, shape, data_offsets)"));
        if (!fields_seen.insert(k).second) return refuse(cat(where(), ": field ", k, " appears twice"));
        return true;
    }
    bool end_object() override {
        if (depth == 1) {
            depth = 0;
            return true;
        }
        depth = 1;
        if (in_metadata) {
            in_metadata = false;
            return true;
        }
        if (!have_dtype || !have_shape || !have_offsets)
            return refuse(cat(where(), ": needs dtype, shape and data_offsets"));
        index.tensors_.emplace(entry, tensor);
        return true;
    }
    bool start_array(std::size_t) override {
        if (depth != 2 || in_metadata || (field != "shape" && field != "data_offsets")) return unexpected("an array");
        depth = 3;
        array.clear();
        return true;
    }
    bool end_array() override {
        depth = 2;
        if (field == "shape") {
            for (uint64_t d : array) {
                if (d > static_cast<uint64_t>(INT64_MAX)) return refuse(cat(where(), ": dimension ", d, " is too large"));
                tensor.shape.push_back(static_cast<int64_t>(d));
            }
            have_shape = true;
            return true;
        }
        if (array.size() != 2) return refuse(cat(where(), ": data_offsets needs 2 numbers, has ", array.size()));
        if (array[0] > array[1])
            return refuse(cat(where(), ": data_offsets [", array[0], ", ", array[1], "] end before they begin"));
        tensor.offset = array[0]; // relative to the data until the index is complete
        tensor.bytes = array[1] - array[0];
        have_offsets = true;
        return true;
    }
    bool parse_error(std::size_t position, const std::string &, const nlohmann::detail::exception &e) override {
        return refuse(cat("the header is not valid JSON at byte ", position, ": ", e.what()));
    }
};

namespace {
void check_header_length(uint64_t header_bytes, uint64_t file_size, const std::string &path) {
    if (header_bytes > kMaxSafetensorsHeaderBytes)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "safetensors file ", path, ": header of ", header_bytes,
             " bytes is over the format's limit of ", kMaxSafetensorsHeaderBytes);
    if (file_size < 8 || header_bytes > file_size - 8)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "safetensors file ", path, ": header of ", header_bytes,
             " bytes does not fit the file's ", file_size, " bytes");
}
} // namespace

SafetensorsIndex SafetensorsIndex::parse(const char *header, size_t header_bytes, uint64_t file_size,
                                         const std::string &path) {
    SafetensorsIndex index;
    index.path_ = path;
    auto bad = [&](Status s, const std::string &message) { fail(s, "safetensors file ", path, ": ", message); };
    check_header_length(header_bytes, file_size, path);
    if (header_bytes == 0 || header[0] != '{')
        bad(ONNXSTREAM_ERR_INVALID_MODEL, "the header does not start with '{'");
    SafetensorsParser parser(index);
    bool ok = false;
    try {
        ok = nlohmann::json::sax_parse(header, header + header_bytes, &parser);
    } catch (const nlohmann::json::exception &e) {
        parser.refuse(cat("the header is not valid JSON: ", e.what()));
    }
    if (!ok || !parser.error.empty())
        bad(parser.status, parser.error.empty() ? std::string("the header is not valid JSON") : parser.error);

    // Byte counts and ranges: each tensor's range holds exactly its dtype x shape, and the ranges, in
    // order, tile the data from its first byte to the end of the file.
    const uint64_t data_start = 8 + static_cast<uint64_t>(header_bytes);
    const uint64_t data_bytes = file_size - data_start;
    std::vector<std::pair<const std::string *, StoredTensor *>> order;
    order.reserve(index.tensors_.size());
    for (auto &[name, t] : index.tensors_) {
        uint64_t want = 0;
        if (!checked::byte_count(t.shape, stored_dtype_size(t.dtype), want))
            bad(ONNXSTREAM_ERR_INVALID_MODEL, cat("tensor '", name, "': ", stored_dtype_name(t.dtype), " ",
                                                   shape_str(t.shape), " has more bytes than 64 bits count"));
        if (want != t.bytes)
            bad(ONNXSTREAM_ERR_INVALID_MODEL, cat("tensor '", name, "': ", stored_dtype_name(t.dtype), " ",
                                                   shape_str(t.shape), " needs ", want, " bytes but data_offsets give ",
                                                   t.bytes));
        order.emplace_back(&name, &t);
    }
    std::sort(order.begin(), order.end(), [](const auto &a, const auto &b) {
        return a.second->offset != b.second->offset ? a.second->offset < b.second->offset
                                                    : a.second->bytes < b.second->bytes;
    });
    uint64_t expected_begin = 0;
    for (auto &[name, t] : order) {
        if (t->offset != expected_begin)
            bad(ONNXSTREAM_ERR_INVALID_MODEL,
                cat("tensor '", *name, "': data_offsets begin at ", t->offset, " but the previous tensor ends at ",
                    expected_begin, " (ranges must follow each other without gaps or overlap)"));
        expected_begin = t->offset + t->bytes; // the "end" the header gave: no overflow
        if (expected_begin > data_bytes)
            bad(ONNXSTREAM_ERR_INVALID_MODEL, cat("tensor '", *name, "': data_offsets end past the end of the file (",
                                                   data_bytes, " data bytes)"));
        t->offset += data_start;
    }
    if (expected_begin != data_bytes)
        bad(ONNXSTREAM_ERR_INVALID_MODEL, cat("the tensors cover ", expected_begin, " of the file's ", data_bytes,
                                               " data bytes"));
    return index;
}


SafetensorsIndex SafetensorsIndex::read(const std::string &path) {
    weight_cache::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) fail(ONNXSTREAM_ERR_IO, "cannot open safetensors file ", path, ": ", std::strerror(errno));
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) fail(ONNXSTREAM_ERR_IO, "cannot stat safetensors file ", path, ": ", std::strerror(errno));
    const uint64_t file_size = static_cast<uint64_t>(st.st_size);
    unsigned char length[8];
    if (file_size < 8 || !weight_cache::pread_all(fd.get(), length, 8, 0))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "safetensors file ", path, ": ", file_size,
             " bytes, shorter than the 8-byte header length");
    uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i) header_bytes = (header_bytes << 8) | length[i]; // little-endian on any host
    check_header_length(header_bytes, file_size, path);
    std::string header(static_cast<size_t>(header_bytes), '\0');
    errno = 0;
    if (!weight_cache::pread_all(fd.get(), header.data(), header_bytes, 8))
        fail(ONNXSTREAM_ERR_IO, "cannot read the header of safetensors file ", path, ": ",
             errno ? std::strerror(errno) : "the file ended (it changed while being read)");
    return parse(header.data(), header.size(), file_size, path);
}

const StoredTensor *SafetensorsIndex::find(const std::string &name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
}

std::vector<float> read_stored_floats(const std::string &path, const StoredTensor &t, size_t first, size_t count) {
    if (t.dtype != StoredDType::F32 && t.dtype != StoredDType::F16 && t.dtype != StoredDType::BF16)
        fail(ONNXSTREAM_ERR_UNSUPPORTED, "safetensors file ", path, ": a ", stored_dtype_name(t.dtype),
             " tensor cannot be read as floats (F32, F16 or BF16)");
    const size_t elements = checked::to_size(static_cast<uint64_t>(checked::numel_or_fail(t.shape, path)), path);
    if (first > elements)
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "safetensors file ", path, ": element ", first, " is past the end of a ",
             shape_str(t.shape), " tensor");
    const size_t n = std::min(count, elements - first);
    const size_t esize = stored_dtype_size(t.dtype);
    std::vector<float> out(n);
    weight_cache::Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) fail(ONNXSTREAM_ERR_IO, "cannot open safetensors file ", path, ": ", std::strerror(errno));
    const uint64_t offset = t.offset + static_cast<uint64_t>(first) * esize;
    errno = 0;
    bool ok = false;
    if (t.dtype == StoredDType::F32) {
        ok = weight_cache::pread_all(fd.get(), out.data(), static_cast<uint64_t>(n) * 4, offset);
    } else {
        std::vector<uint16_t> raw(n);
        ok = weight_cache::pread_all(fd.get(), raw.data(), static_cast<uint64_t>(n) * 2, offset);
        if (t.dtype == StoredDType::F16) {
            half_to_float_n(raw.data(), out.data(), n);
        } else {
            for (size_t i = 0; i < n; ++i) out[i] = bfloat16_to_float(raw[i]);
        }
    }
    if (!ok)
        fail(ONNXSTREAM_ERR_IO, "cannot read safetensors file ", path, ": ",
             errno ? std::strerror(errno) : "the file ended (it changed since its header was read)");
    return out;
}

std::shared_ptr<const SafetensorsIndex> open_weight_store(const std::string &folder) {
    // Every weight fetch resolves its file, so the parsed header is kept: a stat per fetch tells whether the
    // file changed (a rewrite changes its size or modification time). A few folders are kept, most recent
    // first, for hosts that run several models.
    struct Entry {
        std::string path;
        uint64_t size;
        int64_t mtime_ns;
        std::shared_ptr<const SafetensorsIndex> index;
    };
    static std::mutex mutex;
    static std::list<Entry> *recent = new std::list<Entry>; // never destroyed: used until exit
    constexpr size_t kKept = 8;

    const std::string path = (folder.empty() ? std::string(".") : folder) + "/" + kWeightStoreFile;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return nullptr;
        fail(ONNXSTREAM_ERR_IO, "cannot stat ", path, ": ", std::strerror(errno));
    }
    if (!S_ISREG(st.st_mode)) fail(ONNXSTREAM_ERR_IO, path, " is not a regular file");
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    {
        std::lock_guard<std::mutex> lock(mutex);
        for (auto it = recent->begin(); it != recent->end(); ++it)
            if (it->path == path && it->size == size && it->mtime_ns == mtime_ns) {
                recent->splice(recent->begin(), *recent, it);
                return it->index;
            }
    }
    auto index = std::make_shared<const SafetensorsIndex>(SafetensorsIndex::read(path));
    std::lock_guard<std::mutex> lock(mutex);
    recent->remove_if([&](const Entry &e) { return e.path == path; });
    recent->push_front({path, size, mtime_ns, index});
    if (recent->size() > kKept) recent->pop_back();
    return index;
}

} // namespace onnxstream
