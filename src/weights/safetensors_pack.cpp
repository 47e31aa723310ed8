#include "weights/safetensors_pack.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph/model_txt.h"
#include "tensor/int4_blocks.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/strings.h"
#include "weights/cache_file_io.h"
#include "weights/safetensors.h"

namespace onnxstream {

namespace {

struct Packed {
    std::string file;       // in the folder
    std::string name;       // in the store: the file name without ".bin"
    StoredDType dtype;
    Shape shape;
    uint64_t bytes = 0;
    size_t first_use = 0;   // order of first reference in model.txt
};


bool regular_file_size(const std::string &path, uint64_t &size) {
    int64_t mtime_ns = 0;
    return weight_cache::stat_file(path, size, mtime_ns);
}

class Collector {
public:
    explicit Collector(const std::string &folder) : folder_(folder) {}

    // One file model.txt references, if it exists (`required`: else an error).
    void add(const std::string &file, StoredDType dtype, const Shape &shape, bool required, const std::string &where) {
        auto it = index_.find(file);
        if (it != index_.end()) {
            const Packed &p = packed_[it->second];
            if (p.dtype != dtype || p.shape != shape)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": file ", file, " is referenced as ", stored_dtype_name(dtype),
                     " ", shape_str(shape), " here and as ", stored_dtype_name(p.dtype), " ", shape_str(p.shape),
                     " before");
            return;
        }
        const std::string path = path_inside_folder(folder_, file, "weight file");
        uint64_t size = 0;
        if (!regular_file_size(path, size)) {
            if (!required) return;
            fail(ONNXSTREAM_ERR_IO, where, ": weight file ", path, " not found");
        }
        const uint64_t want = checked::bytes_or_fail(shape, stored_dtype_size(dtype), "weight " + file);
        if (size != want)
            fail(ONNXSTREAM_ERR_IO, "weight file ", path, " has ", size, " bytes, expected ", want, " (",
                 stored_dtype_name(dtype), " ", shape_str(shape), ")");
        Packed p;
        p.file = file;
        p.name = ends_with(file, ".bin") ? file.substr(0, file.size() - 4) : file;
        p.dtype = dtype;
        p.shape = shape;
        p.bytes = want;
        p.first_use = packed_.size();
        index_.emplace(file, packed_.size());
        packed_.push_back(std::move(p));
    }

    std::vector<Packed> take() { return std::move(packed_); }

private:
    std::string folder_;
    std::map<std::string, size_t> index_;
    std::vector<Packed> packed_;
};

std::vector<Packed> collect(const std::string &folder, const ModelText &model, const std::string &source) {
    Collector c(folder);
    for (const OpLine &op : model.ops)
        for (const TensorRef &ref : op.inputs) {
            if (!ref.present || !ref.is_weight) continue;
            const std::string where = cat(source, ":", op.line);
            if (ref.quant.blockwise()) { // stored rows of codes and scales (tensor/int4_blocks.h)
                int4::RowLayout l;
                const std::string why = int4::layout_of(ref.shape, ref.quant.axis, ref.quant.block, l);
                if (!why.empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": ", why);
                c.add(ref.name, StoredDType::U8, l.stored_shape(), true, where);
                continue;
            }
            const StoredDType dtype = stored_dtype_of(ref.dtype);
            std::string twin;
            if (ref.shape.size() == 4 && ends_with(ref.name, "_nchw.bin"))
                twin = ref.name.substr(0, ref.name.size() - 9) + "_nhwc.bin";
            if (twin.empty()) {
                c.add(ref.name, dtype, ref.shape, true, where);
            } else {
                // OnnxStream ships either file or both; the engine needs one.
                uint64_t size = 0;
                const bool has_plain = regular_file_size(path_inside_folder(folder, ref.name, "weight file"), size);
                const bool has_twin = regular_file_size(path_inside_folder(folder, twin, "weight file"), size);
                if (!has_plain && !has_twin)
                    fail(ONNXSTREAM_ERR_IO, where, ": weight file ", ref.name, " not found (nor its OnnxStream twin ",
                         twin, ")");
                c.add(ref.name, dtype, ref.shape, false, where);
                c.add(twin, dtype, {ref.shape[0], ref.shape[2], ref.shape[3], ref.shape[1]}, false, where);
            }
            if (!ref.scales_file.empty()) {
                const int64_t channels = ref.shape[static_cast<size_t>(ref.quant.axis)];
                c.add(ref.scales_file, StoredDType::F32, {channels}, true, where);
            }
        }
    return c.take();
}

// The JSON header, padded with spaces (which the format allows) so the data starts 8-byte aligned.
std::string header_json(const std::vector<Packed> &tensors) {
    std::ostringstream h;
    h << "{\"__metadata__\":{\"format\":\"onnxstream\"}";
    uint64_t offset = 0;
    for (const Packed &p : tensors) {
        h << ",\"" << json_escape(p.name) << "\":{\"dtype\":\"" << stored_dtype_name(p.dtype) << "\",\"shape\":["
          << join_ints(p.shape) << "],\"data_offsets\":[" << offset << "," << offset + p.bytes << "]}";
        offset += p.bytes;
    }
    h << "}";
    std::string text = h.str();
    text.append((8 - text.size() % 8) % 8, ' ');
    return text;
}

struct OutFd {
    int fd = -1;
    std::string path;
    bool keep = false;
    ~OutFd() {
        if (fd >= 0) ::close(fd);
        if (!keep && !path.empty()) ::unlink(path.c_str());
    }
};

void write_all(int fd, const char *data, size_t n, const std::string &path) {
    while (n > 0) {
        ssize_t done = ::write(fd, data, n);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) fail(ONNXSTREAM_ERR_IO, "cannot write ", path, ": ", std::strerror(errno));
        data += done;
        n -= static_cast<size_t>(done);
    }
}

// Copies the file at `from` (exactly `bytes` long) to fd through `buffer`.
void copy_file(const std::string &from, uint64_t bytes, int fd, std::vector<char> &buffer, const std::string &to) {
    const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) fail(ONNXSTREAM_ERR_IO, "cannot open weight file ", from, ": ", std::strerror(errno));
    uint64_t left = bytes;
    while (left > 0) {
        const size_t step = static_cast<size_t>(std::min<uint64_t>(left, buffer.size()));
        ssize_t got = ::read(in, buffer.data(), step);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            const int err = errno;
            ::close(in);
            fail(ONNXSTREAM_ERR_IO, "weight file ", from, " ended or failed after ", bytes - left, " of ", bytes,
                 " bytes", got < 0 ? cat(": ", std::strerror(err)) : std::string());
        }
        write_all(fd, buffer.data(), static_cast<size_t>(got), to);
        left -= static_cast<uint64_t>(got);
    }
    ::close(in);
}

} // namespace

PackSummary pack_weight_folder(const std::string &folder, const bool remove_files) {
    const std::string base = folder.empty() ? std::string(".") : folder;
    const std::string store_path = base + "/" + kWeightStoreFile;
    uint64_t size = 0;
    if (regular_file_size(store_path, size))
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, base, " already holds its weights in ", kWeightStoreFile);
    const std::string source = base + "/model.txt";
    std::ifstream in(source, std::ios::binary);
    if (!in) fail(ONNXSTREAM_ERR_IO, "cannot open ", source, ": ", std::strerror(errno));
    std::stringstream text;
    text << in.rdbuf();
    std::vector<Packed> tensors = collect(base, parse_model_txt(text.str(), source), source);
    std::stable_sort(tensors.begin(), tensors.end(), [](const Packed &a, const Packed &b) {
        return stored_dtype_size(a.dtype) > stored_dtype_size(b.dtype);
    });

    const std::string header = header_json(tensors);
    std::random_device rd;
    OutFd out;
    out.path = cat(store_path, ".tmp.", ::getpid(), ".", std::hex, rd());
    out.fd = ::open(out.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out.fd < 0) {
        const int err = errno;
        out.path.clear();
        fail(ONNXSTREAM_ERR_IO, "cannot create ", store_path, ": ", std::strerror(err));
    }
    char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<char>((uint64_t(header.size()) >> (8 * i)) & 0xff);
    write_all(out.fd, length, 8, out.path);
    write_all(out.fd, header.data(), header.size(), out.path);
    std::vector<char> buffer(size_t(4) << 20);
    PackSummary summary;
    for (const Packed &p : tensors) {
        copy_file(path_inside_folder(base, p.file, "weight file"), p.bytes, out.fd, buffer, out.path);
        summary.data_bytes += p.bytes;
    }
    summary.tensors = tensors.size();
    if (::fsync(out.fd) != 0) fail(ONNXSTREAM_ERR_IO, "cannot write ", out.path, ": ", std::strerror(errno));
    ::close(out.fd);
    out.fd = -1;
    // Read it back the way the engine will before anything is removed.
    SafetensorsIndex::read(out.path);
    if (::rename(out.path.c_str(), store_path.c_str()) != 0)
        fail(ONNXSTREAM_ERR_IO, "cannot rename ", out.path, " to ", store_path, ": ", std::strerror(errno));
    out.keep = true;
    if (remove_files)
        for (const Packed &p : tensors)
            if (::unlink(path_inside_folder(base, p.file, "weight file").c_str()) == 0) ++summary.files_removed;
    return summary;
}

} // namespace onnxstream
