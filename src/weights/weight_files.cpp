#include "weights/weight_files.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <unordered_map>
#include <vector>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "util/checked.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/stopwatch.h"
#include "util/strings.h"
#include "weights/cache_file_io.h"
#include "weights/prepare.h"
#include "tensor/half.h"
#include "weights/provider.h"
#include "weights/safetensors.h"

// Weight files beyond 2 GiB (an SD 1.5 UNet's fp32 weights are 3.4 GB in all) need a 64-bit off_t on
// 32-bit ARM; meson defines _FILE_OFFSET_BITS=64 for every build.
static_assert(sizeof(off_t) == 8, "weight files need a 64-bit off_t: build with -D_FILE_OFFSET_BITS=64");

namespace onnxstream {

namespace {

bool file_size(const std::string &path, uint64_t &size) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    size = static_cast<uint64_t>(st.st_size);
    return true;
}

} // namespace

Tensor WeightsProvider::fetch_rows(const WeightSpec &spec, int64_t begin, int64_t end, const Allocator &alloc) {
    Stopwatch watch;
    Tensor t = read_weight_rows(resolve_weight_file(folder_, spec), spec, begin, end, alloc, &bytes_copied_);
    count_read(spec.file, watch, t.byte_size());
    return t;
}

Tensor WeightsProvider::read_counted(const WeightSpec &spec, const Allocator &alloc) {
    Stopwatch watch;
    Tensor t = read_weight_file(resolve_weight_file(folder_, spec), spec, alloc, &bytes_copied_);
    count_read(spec.file, watch, spec.byte_size());
    return t;
}

namespace {

// The store's tensor for `name` (a model.txt file name) if the store has it: the name without ".bin".
const StoredTensor *store_tensor(const SafetensorsIndex *store, const std::string &file) {
    if (!store) return nullptr;
    return store->find(ends_with(file, ".bin") ? file.substr(0, file.size() - 4) : file);
}

// A stored tensor as `spec` wants it: same dtype (or bfloat16 for a float spec) and the shape model.txt
// gives, in OIHW or, for the _nhwc twin, OHWI order.
ResolvedWeight check_stored(const SafetensorsIndex &store, const std::string &name, const StoredTensor &t,
                            const WeightSpec &spec, Layout layout) {
    Shape want = spec.shape;
    if (layout == Layout::OHWI) want = {spec.shape[0], spec.shape[2], spec.shape[3], spec.shape[1]};
    const bool bf16 = t.dtype == StoredDType::BF16 && (spec.dtype == DType::F32 || spec.dtype == DType::F16);
    const char *want_dtype = stored_dtype_name(stored_dtype_of(spec.dtype));
    if ((!bf16 && std::strcmp(stored_dtype_name(t.dtype), want_dtype) != 0) || t.shape != want)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, "weight ", spec.file, ": tensor '", name, "' of ", store.path(), " is ",
             stored_dtype_name(t.dtype), " ", shape_str(t.shape), " but model.txt needs ", want_dtype, " ",
             shape_str(want));
    ResolvedWeight r;
    r.path = store.path();
    r.layout = layout;
    r.offset = t.offset;
    r.whole_file = false;
    r.bf16 = bf16;
    return r;
}

// The weight in the folder's store, if there. Same preference as for files: the twin when the consumer
// wants OHWI or the plain one is missing.
bool resolve_in_store(const std::string &folder, const WeightSpec &spec, const std::string &twin,
                      ResolvedWeight &out) {
    std::shared_ptr<const SafetensorsIndex> store = open_weight_store(folder);
    if (!store) return false;
    const StoredTensor *plain = store_tensor(store.get(), spec.file);
    const StoredTensor *ohwi = twin.empty() ? nullptr : store_tensor(store.get(), twin);
    if (ohwi && (spec.wanted == Layout::OHWI || !plain)) {
        out = check_stored(*store, twin.substr(0, twin.size() - 4), *ohwi, spec, Layout::OHWI);
        return true;
    }
    if (!plain) return false;
    out = check_stored(*store, ends_with(spec.file, ".bin") ? spec.file.substr(0, spec.file.size() - 4) : spec.file,
                       *plain, spec, Layout::Plain);
    return true;
}

// Reads up to n bytes at offset; returns how many (short only at the end of the file).
uint64_t pread_full(int fd, void *dst, uint64_t n, uint64_t offset) {
    uint64_t done = 0;
    while (done < n) {
        const size_t step = static_cast<size_t>(std::min<uint64_t>(n - done, uint64_t(1) << 30));
        ssize_t got = ::pread(fd, static_cast<char *>(dst) + done, step, static_cast<off_t>(offset + done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        done += static_cast<uint64_t>(got);
    }
    return done;
}

// `count` bfloat16 values at `src` into dst as float32 or float16 (its dtype): bfloat16 is the top half
// of a float32, so widening is exact; float16 rounds to nearest even like every other narrowing here.
void widen_bf16(const uint16_t *src, size_t count, Tensor &dst) {
    if (dst.dtype() == DType::F32) {
        float *out = static_cast<float *>(dst.raw());
        for (size_t i = 0; i < count; ++i) out[i] = bfloat16_to_float(src[i]);
        return;
    }
    uint16_t *out = static_cast<uint16_t *>(dst.raw());
    for (size_t i = 0; i < count; ++i) out[i] = float_to_half(bfloat16_to_float(src[i]));
}

// `bytes` of the weight's data (as stored) from `offset` within its range into t. Returns bytes read.
uint64_t read_range(const ResolvedWeight &file, Tensor &t, uint64_t offset, uint64_t bytes,
                    std::atomic<uint64_t> *copied) {
    weight_cache::Fd fd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) fail(ONNXSTREAM_ERR_IO, "cannot open weight file ", file.path, ": ", std::strerror(errno));
    if (!file.bf16) return pread_full(fd.get(), t.raw(), bytes, file.offset + offset);
    std::vector<uint16_t> stored(static_cast<size_t>(bytes / 2));
    const uint64_t got = pread_full(fd.get(), stored.data(), bytes, file.offset + offset);
    if (got == bytes) {
        widen_bf16(stored.data(), stored.size(), t);
        if (copied) *copied += t.byte_size();
    }
    return got;
}

// A bfloat16 weight is half the bytes of its float32 spec.
uint64_t stored_bytes(const ResolvedWeight &file, const WeightSpec &spec, uint64_t spec_bytes) {
    return file.bf16 ? spec_bytes / dtype_size(spec.dtype) * 2 : spec_bytes;
}

} // namespace

ResolvedWeight resolve_weight_file(const std::string &folder, const WeightSpec &spec) {
    // In 64 bits, through the checked helpers: on a 32-bit build spec.byte_size() (a size_t) would wrap for
    // a weight of 4 GiB or more and the size check below would compare the file with the wrapped count.
    const std::string what = "weight " + spec.file;
    const uint64_t expected = checked::bytes_or_fail(spec.shape, dtype_size(spec.dtype), what);
    checked::to_size(expected, what);
    std::string twin;
    if (spec.shape.size() == 4 && ends_with(spec.file, "_nchw.bin"))
        twin = spec.file.substr(0, spec.file.size() - 9) + "_nhwc.bin";
    ResolvedWeight stored;
    if (resolve_in_store(folder, spec, twin, stored)) return stored;
    uint64_t size = 0;
    std::string plain_path = path_inside_folder(folder, spec.file, "weight file");
    bool plain_exists = file_size(plain_path, size);
    uint64_t plain_size = size;
    if (!twin.empty()) {
        std::string twin_path = path_inside_folder(folder, twin, "weight file");
        uint64_t twin_size = 0;
        bool twin_exists = file_size(twin_path, twin_size);
        // Prefer the twin when the consumer wants OHWI (no transpose), or when the plain file is absent.
        if (twin_exists && (spec.wanted == Layout::OHWI || !plain_exists)) {
            if (twin_size != expected)
                fail(ONNXSTREAM_ERR_IO, "weight file ", twin_path, " has ", twin_size, " bytes, expected ", expected,
                     " (", dtype_name(spec.dtype), " ", shape_str(spec.shape), ")");
            return {twin_path, Layout::OHWI};
        }
        if (!plain_exists)
            fail(ONNXSTREAM_ERR_IO, "weight file ", plain_path, " not found (nor its OnnxStream twin ", twin,
                 open_weight_store(folder) ? cat(", nor either in ", kWeightStoreFile, ")") : std::string(")"));
    }
    if (!plain_exists)
        fail(ONNXSTREAM_ERR_IO, "weight file ", plain_path, " not found",
             open_weight_store(folder) ? cat(" (nor in ", kWeightStoreFile, ")") : std::string());
    if (plain_size != expected)
        fail(ONNXSTREAM_ERR_IO, "weight file ", plain_path, " has ", plain_size, " bytes, expected ", expected, " (",
             dtype_name(spec.dtype), " ", shape_str(spec.shape), ")");
    return {plain_path, Layout::Plain};
}

Tensor read_weight_file(const ResolvedWeight &file, const WeightSpec &spec, const Allocator &alloc,
                        std::atomic<uint64_t> *copied) {
    Tensor t = make_tensor(alloc, spec.dtype, spec.shape);
    t.set_quant(spec.quant);
    t.set_layout(file.layout);
    const uint64_t want = stored_bytes(file, spec, spec.byte_size());
    const uint64_t got = want ? read_range(file, t, 0, want, copied) : 0;
    if (got != want)
        fail(ONNXSTREAM_ERR_IO, "weight file ", file.path, " is truncated: read ", got, " of ", want, " bytes",
             file.whole_file ? std::string() : cat(" at offset ", file.offset, " (weight ", spec.file, ")"));
    if (file.whole_file) {
        // The size was checked when the file was resolved; a file that grew since is not the one checked.
        weight_cache::Fd fd(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC));
        char extra;
        if (fd.get() >= 0 && pread_full(fd.get(), &extra, 1, want) == 1)
            fail(ONNXSTREAM_ERR_IO, "weight file ", file.path, " is larger than the declared ", want, " bytes");
    }
    return serve_layout(std::move(t), spec, alloc, copied);
}

namespace {
Shape row_shape(const Shape &shape, int64_t begin, int64_t end) {
    Shape s = shape;
    if (s.empty() || begin < 0 || end > s[0] || begin >= end)
        fail(ONNXSTREAM_ERR_INTERNAL, "weight rows [", begin, ", ", end, ") out of range for ", shape_str(shape));
    s[0] = end - begin;
    return s;
}
} // namespace

Tensor read_weight_rows(const ResolvedWeight &file, const WeightSpec &spec, int64_t begin, int64_t end,
                        const Allocator &alloc, std::atomic<uint64_t> *copied) {
    WeightSpec part = spec;
    part.shape = row_shape(spec.shape, begin, end);
    Tensor t = make_tensor(alloc, part.dtype, part.shape);
    t.set_quant(spec.quant);
    t.set_layout(file.layout);
    // In 64 bits: row_bytes * begin passes 4 GiB in big weights read in chunks on 32-bit builds.
    const uint64_t row_bytes = stored_bytes(file, spec, spec.byte_size() / static_cast<size_t>(spec.shape[0]));
    const uint64_t want = row_bytes * static_cast<uint64_t>(end - begin);
    const uint64_t got = read_range(file, t, row_bytes * static_cast<uint64_t>(begin), want, copied);
    if (got != want)
        fail(ONNXSTREAM_ERR_IO, "weight file ", file.path, " is truncated: rows ", begin, "..", end, " need ", want,
             " bytes, read ", got, file.whole_file ? std::string() : cat(" (weight ", spec.file, ")"));
    return serve_layout(std::move(t), part, alloc, copied);
}

Tensor copy_weight_rows(const Tensor &whole, int64_t begin, int64_t end, const Allocator &alloc,
                        std::atomic<uint64_t> *copied) {
    Tensor t = make_tensor(alloc, whole.dtype(), row_shape(whole.shape(), begin, end));
    t.set_quant(whole.quant());
    t.set_layout(whole.layout());
    const size_t row_bytes = whole.byte_size() / static_cast<size_t>(whole.dim(0));
    std::memcpy(t.raw(), static_cast<const uint8_t *>(whole.raw()) + row_bytes * static_cast<size_t>(begin),
                t.byte_size());
    if (copied) *copied += t.byte_size();
    return t;
}

namespace {

// Per-channel scales from the folder's store (tensor "<scales file without .bin>", F32 [channels]); false
// when the store does not hold them.
bool read_stored_scales(const std::string &folder, const std::string &file, size_t channels,
                        std::vector<float> &values, const std::string &where, const std::string &weight) {
    std::shared_ptr<const SafetensorsIndex> store = open_weight_store(folder);
    const StoredTensor *t = store_tensor(store.get(), file);
    if (!t) return false;
    if (t->dtype != StoredDType::F32 || t->shape != Shape{static_cast<int64_t>(channels)})
        fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": scales '", file, "' in ", store->path(), " are ",
             stored_dtype_name(t->dtype), " ", shape_str(t->shape), " but weight ", weight, " needs F32 (", channels, ")");
    weight_cache::Fd fd(::open(store->path().c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0 || pread_full(fd.get(), values.data(), t->bytes, t->offset) != t->bytes)
        fail(ONNXSTREAM_ERR_IO, where, ": cannot read scales '", file, "' from ", store->path());
    return true;
}

void read_scales_file(const std::string &path, const TensorRef &ref, std::vector<float> &values,
                      const std::string &where) {
    std::ifstream f(path, std::ios::binary | std::ios::ate);
    if (!f)
        fail(ONNXSTREAM_ERR_IO, where, ": cannot open scales file ", path, " of weight ", ref.name, ": ",
             std::strerror(errno));
    const auto size = static_cast<uint64_t>(f.tellg());
    if (size != values.size() * sizeof(float))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": scales file ", path, " has ", size, " bytes but weight ",
             ref.name, " ", shape_str(ref.shape), " needs ", values.size(), " float32 scales along axis ",
             ref.quant.axis, " (", values.size() * sizeof(float), " bytes)");
    f.seekg(0);
    if (!values.empty() && !f.read(reinterpret_cast<char *>(values.data()), static_cast<std::streamsize>(size)))
        fail(ONNXSTREAM_ERR_IO, where, ": cannot read scales file ", path);
}

void check_scales(const std::vector<float> &values, const std::string &source, const std::string &where) {
    for (size_t c = 0; c < values.size(); ++c)
        if (!(values[c] > 0) || !std::isfinite(values[c]))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": scales file ", source, ": scale ", c, " is ", values[c],
                 " (expected positive and finite)");
}

} // namespace

void load_quant_scales(Graph &graph, const std::string &folder) {
    std::unordered_map<std::string, std::shared_ptr<const std::vector<float>>> loaded;
    for (const Node &node : graph.nodes())
        for (size_t k = 0; k < node.inputs.size(); ++k) {
            const NodeInput &in = node.inputs[k];
            if (in.kind != NodeInput::Weight || !in.weight.quant.per_channel()) continue;
            const TensorRef &ref = node.line->inputs[k];
            const size_t channels = static_cast<size_t>(ref.shape[static_cast<size_t>(ref.quant.axis)]);
            auto &scales = loaded[ref.scales_file];
            if (!scales) {
                if (folder.empty())
                    fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, node.where, ": needs scales file ", ref.scales_file,
                         " of weight ", ref.name, " but no weights folder was given");
                auto values = std::make_shared<std::vector<float>>(channels);
                if (!read_stored_scales(folder, ref.scales_file, channels, *values, node.where, ref.name))
                    read_scales_file(path_inside_folder(folder, ref.scales_file, "scales file"), ref, *values,
                                     node.where);
                check_scales(*values, ref.scales_file, node.where);
                scales = std::move(values);
            } else if (scales->size() != channels) {
                fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": scales file ", ref.scales_file, " holds ",
                     scales->size(), " scales but weight ", ref.name, " needs ", channels);
            }
            graph.set_channel_scales(static_cast<size_t>(node.index), k, scales);
        }
}

} // namespace onnxstream
