#include "tools/sd_import.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <unordered_map>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "tensor/half.h"
#include "tools/sd15_keys.h"
#include "tools/sd_graphs.h"
#include "tools/sd_tokenizer_import.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/stopwatch.h"
#include "util/strings.h"
#include "weights/cache_file_io.h"
#include "weights/safetensors.h"
#include "weights/safetensors_pack.h"

namespace onnxstream::tools {

namespace fs = std::filesystem;

namespace {

// as_is tensors are copied in pieces of this many elements (4 MiB as float32): the text encoder's token
// embedding alone is 152 MB, and the import should run where the engine runs.
constexpr size_t kPieceElements = size_t(1) << 20;

const char *const kSupported =
    "supported: a single-file .safetensors checkpoint in the original (ldm / A1111) layout, or a diffusers folder "
    "(text_encoder/model.safetensors, unet/diffusion_pytorch_model.safetensors, "
    "vae/diffusion_pytorch_model.safetensors, or their .fp16.safetensors variants)";

std::string bracketed(const Shape &shape) { return "[" + join_ints(shape) + "]"; }

bool is_regular(const std::string &path) {
    std::error_code ec;
    return fs::is_regular_file(path, ec);
}

// One checkpoint tensor: the file it is in and its place there.
struct Source {
    std::string path, name;
    StoredTensor tensor;
};

// The checkpoint's tensors by "component:diffusers_key". Only the headers are read here.
class Checkpoint {
public:
    explicit Checkpoint(const std::string &path) {
        std::error_code ec;
        if (fs::is_directory(path, ec)) open_diffusers(path);
        else if (fs::exists(path, ec)) open_single_file(path);
        else fail(ONNXSTREAM_ERR_IO, "checkpoint ", path, " not found");
    }
    const Source *find(const std::string &key) const {
        auto it = keys_.find(key);
        return it == keys_.end() ? nullptr : &it->second;
    }
    // Why keys may be missing (a component file the folder lacks), for the missing-keys message.
    const std::vector<std::string> &notes() const { return notes_; }

private:
    void add(const std::string &key, const SafetensorsIndex &index, const std::string &name, const StoredTensor &t) {
        auto [it, added] = keys_.emplace(key, Source{index.path(), name, t});
        if (!added)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, "checkpoint ", index.path(), ": tensors '", it->second.name, "' and '",
                 name, "' are both ", key);
    }

    void open_single_file(const std::string &path) {
        SafetensorsIndex index;
        try {
            index = SafetensorsIndex::read(path);
        } catch (const Error &e) {
            if (looks_pickled(path))
                fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "checkpoint ", path,
                     " is a PyTorch pickle (.ckpt) file, which this tool does not read (loading one can run code); ",
                     kSupported);
            throw;
        }
        std::vector<std::string> names;
        for (const auto &[name, t] : index.tensors()) names.push_back(name);
        const int levels = sd15_vae_levels(names);
        for (const auto &[name, t] : index.tensors())
            if (std::optional<std::string> key = sd15_diffusers_key(name, levels)) add(*key, index, name, t);
        if (keys_.empty()) {
            const bool component = index.find("conv_in.weight") || index.find("text_model.final_layer_norm.weight");
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "checkpoint ", path,
                 " holds no tensor of a Stable Diffusion 1.5 checkpoint in the ldm layout (cond_stage_model.transformer.*, "
                 "model.diffusion_model.*, first_stage_model.*)",
                 component ? "; it looks like one component of a diffusers folder: give the folder instead" : "",
                 "; ", kSupported);
        }
    }

    static bool looks_pickled(const std::string &path) {
        for (const char *ext : {".ckpt", ".pt", ".pth", ".bin", ".pkl"})
            if (ends_with(path, ext)) return true;
        // torch.save writes a zip archive; older files are a bare pickle (protocol 2: 0x80 0x02).
        unsigned char magic[4] = {0, 0, 0, 0};
        if (FILE *f = std::fopen(path.c_str(), "rb")) {
            const size_t n = std::fread(magic, 1, 4, f);
            std::fclose(f);
            if (n == 4 && std::memcmp(magic, "PK\x03\x04", 4) == 0) return true;
            if (n >= 2 && magic[0] == 0x80 && magic[1] >= 2 && magic[1] <= 5) return true;
        }
        return false;
    }

    void open_diffusers(const std::string &dir) {
        struct Component {
            const char *name, *file;
        };
        static const Component kComponents[] = {
            {"text_encoder", "model"}, {"unet", "diffusion_pytorch_model"}, {"vae", "diffusion_pytorch_model"}};
        size_t found = 0;
        for (const Component &c : kComponents) {
            const std::string base = cat(dir, "/", c.name, "/", c.file);
            const std::string path = is_regular(base + ".safetensors") ? base + ".safetensors" : base + ".fp16.safetensors";
            if (!is_regular(path)) {
                notes_.push_back(cat("the checkpoint folder has no ", c.name, "/", c.file, ".safetensors",
                                     is_regular(base + ".bin") ? " (only the pickle .bin, which this tool does not read)" : ""));
                continue;
            }
            ++found;
            const SafetensorsIndex index = SafetensorsIndex::read(path);
            for (const auto &[name, t] : index.tensors())
                add(sd15_current_diffusers_key(cat(c.name, ":", name)), index, name, t);
        }
        if (!found)
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "checkpoint ", dir,
                 " is a folder without the .safetensors files of a diffusers Stable Diffusion pipeline; ", kSupported);
    }

    std::unordered_map<std::string, Source> keys_;
    std::vector<std::string> notes_;
};

// The shape the checkpoint tensor must have for `w` (as_is: any shape of this element count).
std::string shape_problem(const GraphWeight &w, const StoredTensor &t) {
    const Shape &f = w.shape, &s = t.shape;
    std::string needs;
    switch (w.transform) {
    case WeightTransform::AsIs:
        if (shape_numel(s) == shape_numel(f)) return "";
        needs = cat(shape_numel(f), " elements");
        break;
    case WeightTransform::Transpose: {
        // ldm stores the VAE attention's linear layers as 1x1 convolutions, [C, C, 1, 1]: the same data.
        Shape squeezed = s;
        while (squeezed.size() > 2 && squeezed.back() == 1) squeezed.pop_back();
        if (squeezed == Shape{f[1], f[0]}) return "";
        needs = bracketed({f[1], f[0]});
        break;
    }
    case WeightTransform::Ohwi:
        if (s == Shape{f[0], f[3], f[1], f[2]}) return "";
        needs = bracketed({f[0], f[3], f[1], f[2]});
        break;
    }
    return cat(" is ", bracketed(s), ", the graph needs ", needs, " -> ", bracketed(f), " (", transform_name(w.transform), ")");
}

// Every problem of every model at once, so one run tells the user all that is wrong.
void check_sources(const std::vector<GraphModel> &models, const Checkpoint &checkpoint, const std::string &path) {
    std::vector<std::string> missing, other;
    for (const GraphModel &m : models)
        for (const GraphWeight &w : m.weights) {
            if (w.constant) continue;
            const Source *s = checkpoint.find(w.key);
            if (!s) {
                missing.push_back(cat(m.name, ": ", w.key, " missing"));
                continue;
            }
            const StoredDType d = s->tensor.dtype;
            if (d != StoredDType::F32 && d != StoredDType::F16 && d != StoredDType::BF16)
                other.push_back(cat(m.name, ": ", w.key, " (", s->name, ") is ", stored_dtype_name(d),
                                    ", not a float type (F32, F16 or BF16)"));
            else if (const std::string why = shape_problem(w, s->tensor); !why.empty())
                other.push_back(cat(m.name, ": ", w.key, why));
        }
    if (missing.empty() && other.empty()) return;
    std::vector<std::string> all = missing;
    all.insert(all.end(), other.begin(), other.end());
    std::string notes;
    if (!missing.empty()) {
        for (const std::string &n : checkpoint.notes()) notes += "\n" + n;
        notes += "\n(is it a Stable Diffusion 1.5 checkpoint? SD 2.x and SDXL have other tensors)";
    }
    fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "checkpoint ", path, " does not fit the graphs: ", missing.size(),
         " tensor(s) missing, ", other.size(), " mis-shaped or of an unsupported dtype:", listed_problems(all), notes);
}

// A new file written front to back; close() reports what the writes did not (NFS, quotas).
class OutFile {
public:
    explicit OutFile(const std::string &path) : path_(path) {
        fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd_ < 0) fail(ONNXSTREAM_ERR_IO, "cannot create ", path, ": ", std::strerror(errno));
    }
    ~OutFile() {
        if (fd_ >= 0) ::close(fd_);
    }
    OutFile(const OutFile &) = delete;
    OutFile &operator=(const OutFile &) = delete;

    void write(const void *data, size_t n) {
        const char *p = static_cast<const char *>(data);
        while (n) {
            const ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t(1) << 30));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) fail(ONNXSTREAM_ERR_IO, "cannot write ", path_, ": ", w < 0 ? std::strerror(errno) : "no progress");
            p += w;
            n -= static_cast<size_t>(w);
            bytes_ += static_cast<uint64_t>(w);
        }
    }
    // Floats in the file's dtype (float16: round to nearest even).
    void write_floats(const float *v, size_t n, DType dtype) {
        const Encoded e = encode(v, n, dtype);
        write(e.data, e.bytes);
    }
    // The file's final size, for writes out of order (write_floats_at).
    void reserve(uint64_t bytes) {
        if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0)
            fail(ONNXSTREAM_ERR_IO, "cannot write ", path_, ": ", std::strerror(errno));
        bytes_ = bytes;
    }
    // Floats at element `index` of a file sized by reserve().
    void write_floats_at(uint64_t index, const float *v, size_t n, DType dtype) {
        const Encoded e = encode(v, n, dtype);
        weight_cache::pwrite_all(fd_, e.data, e.bytes, index * dtype_size(dtype), path_);
    }
    void close() {
        const int fd = fd_;
        fd_ = -1;
        if (::close(fd) != 0) fail(ONNXSTREAM_ERR_IO, "cannot write ", path_, ": ", std::strerror(errno));
    }
    uint64_t bytes() const { return bytes_; }

private:
    struct Encoded {
        const void *data;
        size_t bytes;
    };
    // n floats as the file's dtype stores them: float32 ones as they are, float16 ones converted into half_.
    Encoded encode(const float *v, size_t n, DType dtype) {
        if (dtype == DType::F32) return {v, n * sizeof(float)};
        half_.resize(n);
        float_to_half_n(v, half_.data(), n);
        return {half_.data(), n * sizeof(uint16_t)};
    }

    std::string path_;
    int fd_ = -1;
    uint64_t bytes_ = 0;
    std::vector<uint16_t> half_;
};

// Writes the file of `w` into `dir`; returns its bytes.
uint64_t write_weight(const std::string &dir, const GraphWeight &w, const Source *s) {
    if (!w.constant && !s) fail(ONNXSTREAM_ERR_INTERNAL, w.key, " was not checked"); // check_sources() ran first
    OutFile out(dir + "/" + w.file);
    if (w.constant) {
        out.write(w.bytes.data(), w.bytes.size());
    } else if (w.transform == WeightTransform::AsIs) {
        const size_t n = static_cast<size_t>(shape_numel(w.shape));
        for (size_t first = 0; first < n; first += kPieceElements) {
            const std::vector<float> piece = read_stored_floats(s->path, s->tensor, first, kPieceElements);
            out.write_floats(piece.data(), piece.size(), w.dtype);
        }
    } else if (w.transform == WeightTransform::Ohwi) {
        // [O, I, H, W] -> [O, H, W, I] a few output channels at a time: each is contiguous in both layouts,
        // so the file is still written front to back (the UNet's biggest kernel alone is 118 MB as float32).
        const Shape &f = w.shape;
        const size_t o_n = static_cast<size_t>(f[0]), hw = static_cast<size_t>(f[1] * f[2]),
                     i_n = static_cast<size_t>(f[3]), per = i_n * hw;
        const size_t group = std::max<size_t>(1, kPieceElements / std::max<size_t>(per, 1));
        std::vector<float> t;
        for (size_t o0 = 0; o0 < o_n; o0 += group) {
            const size_t n_o = std::min(group, o_n - o0);
            const std::vector<float> in = read_stored_floats(s->path, s->tensor, o0 * per, n_o * per);
            t.resize(in.size());
            for (size_t o = 0; o < n_o; ++o)
                for (size_t i = 0; i < i_n; ++i)
                    for (size_t p = 0; p < hw; ++p) t[(o * hw + p) * i_n + i] = in[(o * i_n + i) * hw + p];
            out.write_floats(t.data(), t.size(), w.dtype);
        }
    } else {
        // [rows, cols] -> [cols, rows] in bands of checkpoint rows: a band fills the same rows-range of every
        // file row, each a contiguous run written where it belongs.
        const size_t rows = static_cast<size_t>(w.shape[1]), cols = static_cast<size_t>(w.shape[0]);
        const size_t band = std::max<size_t>(1, kPieceElements / std::max<size_t>(cols, 1));
        out.reserve(static_cast<uint64_t>(rows) * cols * dtype_size(w.dtype));
        std::vector<float> run;
        for (size_t r0 = 0; r0 < rows; r0 += band) {
            const size_t n_r = std::min(band, rows - r0);
            const std::vector<float> in = read_stored_floats(s->path, s->tensor, r0 * cols, n_r * cols);
            run.resize(n_r);
            for (size_t c = 0; c < cols; ++c) {
                for (size_t r = 0; r < n_r; ++r) run[r] = in[r * cols + c];
                out.write_floats_at(static_cast<uint64_t>(c) * rows + r0, run.data(), n_r, w.dtype);
            }
        }
    }
    out.close();
    return out.bytes();
}

struct Written {
    size_t tensors = 0;
    uint64_t bytes = 0;
};

// One model folder: written under a hidden temporary name, renamed into place only when complete.
Written write_model(const GraphModel &m, const Checkpoint &checkpoint, const std::string &out_dir) {
    const std::string tmp = cat(out_dir, "/.", m.name, ".tmp"), final_dir = cat(out_dir, "/", m.name);
    std::error_code ec;
    fs::remove_all(tmp, ec); // left over by an interrupted run
    if (ec) fail(ONNXSTREAM_ERR_IO, "cannot remove the leftover ", tmp, ": ", ec.message());
    if (!fs::create_directory(tmp, ec) || ec)
        fail(ONNXSTREAM_ERR_IO, "cannot create ", tmp, ": ", ec ? ec.message() : "it exists");
    Written written;
    try {
        if (!fs::copy_file(m.dir + "/model.txt", tmp + "/model.txt", ec) || ec)
            fail(ONNXSTREAM_ERR_IO, "cannot copy ", m.dir, "/model.txt to ", tmp, ": ", ec.message());
        for (const GraphWeight &w : m.weights) {
            written.bytes += write_weight(tmp, w, w.constant ? nullptr : checkpoint.find(w.key));
            ++written.tensors;
        }
        pack_weight_folder(tmp, /*remove_files=*/true);
        // rename() would replace an empty folder made since the check; keep the promise not to.
        if (fs::exists(fs::symlink_status(final_dir, ec)))
            fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, final_dir, " appeared while importing; delete it and run again");
        fs::rename(tmp, final_dir, ec);
        if (ec) fail(ONNXSTREAM_ERR_IO, "cannot rename ", tmp, " to ", final_dir, ": ", ec.message());
    } catch (...) {
        std::error_code ignored;
        fs::remove_all(tmp, ignored);
        throw;
    }
    return written;
}

std::string join_names(const std::vector<std::string> &names) {
    std::string text;
    for (const std::string &n : names) text += (text.empty() ? "" : ", ") + n;
    return text;
}

std::string seconds(const Stopwatch &clock) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f s", static_cast<double>(clock.elapsed_us()) / 1e6);
    return text;
}

} // namespace

void sd_import(const SdImportOptions &o) {
    const Stopwatch total;
    const std::vector<GraphModel> models = read_graphs(o.graphs);
    const Checkpoint checkpoint(o.checkpoint);
    check_sources(models, checkpoint, o.checkpoint);
    std::error_code ec;
    std::string tokenizer = o.tokenizer;
    if (tokenizer.empty() && fs::is_directory(o.checkpoint, ec) && is_tokenizer_folder(o.checkpoint + "/tokenizer"))
        tokenizer = o.checkpoint + "/tokenizer";
    if (!tokenizer.empty() && !is_tokenizer_folder(tokenizer))
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "tokenizer folder ", tokenizer,
             " holds no merges.txt with vocab.json or vocab.txt");

    std::vector<std::string> existing;
    if (!tokenizer.empty() && fs::exists(fs::symlink_status(o.out_dir + "/tokenizer", ec)))
        existing.push_back(o.out_dir + "/tokenizer");
    for (const GraphModel &m : models)
        if (fs::exists(fs::symlink_status(cat(o.out_dir, "/", m.name), ec))) existing.push_back(cat(o.out_dir, "/", m.name));
    if (!existing.empty())
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "the output folder(s) already exist (delete them to import again):",
             listed_problems(existing));
    fs::create_directories(o.out_dir, ec);
    if (ec || !fs::is_directory(o.out_dir, ec))
        fail(ONNXSTREAM_ERR_IO, "cannot create the output folder ", o.out_dir, ec ? ": " + ec.message() : std::string());

    std::vector<std::string> done;
    if (!tokenizer.empty()) { // first: quick, and its vocabulary is checked before gigabytes are written
        import_tokenizer(tokenizer, o.out_dir);
        done.push_back("tokenizer");
        if (o.progress) o.progress(cat("tokenizer: vocab.txt + merges.txt from ", tokenizer));
    }
    for (const GraphModel &m : models) {
        const Stopwatch clock;
        Written w;
        try {
            w = write_model(m, checkpoint, o.out_dir);
        } catch (const Error &e) {
            if (done.empty()) throw;
            // The finished folders are complete; a rerun refuses them until they are deleted.
            fail(e.status(), e.what(), " (", m.name, " was not written; already complete: ", join_names(done), ")");
        }
        done.push_back(m.name);
        if (o.progress) {
            char mb[32];
            std::snprintf(mb, sizeof mb, "%.1f MB", static_cast<double>(w.bytes) / 1e6);
            o.progress(cat(m.name, ": ", w.tensors, " tensors, ", mb, ", ", seconds(clock)));
        }
    }
    if (o.progress) o.progress(cat("wrote ", models.size(), " model folder(s)", tokenizer.empty() ? "" : " and the tokenizer",
                                   " into ", o.out_dir, " in ", seconds(total)));
}

} // namespace onnxstream::tools
