#include "weights/weight_files.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <unordered_map>
#include <vector>
#include <sys/stat.h>
#include <sys/types.h>

#include "util/checked.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/stopwatch.h"
#include "util/strings.h"
#include "weights/prepare.h"
#include "weights/provider.h"

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

ResolvedWeight resolve_weight_file(const std::string &folder, const WeightSpec &spec) {
    // In 64 bits, through the checked helpers: on a 32-bit build spec.byte_size() (a size_t) would wrap for
    // a weight of 4 GiB or more and the size check below would compare the file with the wrapped count.
    const std::string what = "weight " + spec.file;
    const uint64_t expected = checked::bytes_or_fail(spec.shape, dtype_size(spec.dtype), what);
    checked::to_size(expected, what);
    std::string twin;
    if (spec.shape.size() == 4 && ends_with(spec.file, "_nchw.bin"))
        twin = spec.file.substr(0, spec.file.size() - 9) + "_nhwc.bin";
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
            fail(ONNXSTREAM_ERR_IO, "weight file ", plain_path, " not found (nor its OnnxStream twin ", twin, ")");
    }
    if (!plain_exists) fail(ONNXSTREAM_ERR_IO, "weight file ", plain_path, " not found");
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
    FILE *f = std::fopen(file.path.c_str(), "rb");
    if (!f) fail(ONNXSTREAM_ERR_IO, "cannot open weight file ", file.path, ": ", std::strerror(errno));
    size_t want = spec.byte_size();
    size_t got = want ? std::fread(t.raw(), 1, want, f) : 0;
    bool extra = std::fgetc(f) != EOF;
    std::fclose(f);
    if (got != want)
        fail(ONNXSTREAM_ERR_IO, "weight file ", file.path, " is truncated: read ", got, " of ", want, " bytes");
    if (extra) fail(ONNXSTREAM_ERR_IO, "weight file ", file.path, " is larger than the declared ", want, " bytes");
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
    const size_t row_bytes = spec.byte_size() / static_cast<size_t>(spec.shape[0]);
    const size_t want = part.byte_size();
    FILE *f = std::fopen(file.path.c_str(), "rb");
    if (!f) fail(ONNXSTREAM_ERR_IO, "cannot open weight file ", file.path, ": ", std::strerror(errno));
    size_t got = 0;
    // The offset in 64 bits: row_bytes * begin passes 4 GiB in big weights read in chunks on 32-bit builds.
    const uint64_t offset = static_cast<uint64_t>(row_bytes) * static_cast<uint64_t>(begin);
    if (fseeko(f, static_cast<off_t>(offset), SEEK_SET) == 0)
        got = std::fread(t.raw(), 1, want, f);
    std::fclose(f);
    if (got != want)
        fail(ONNXSTREAM_ERR_IO, "weight file ", file.path, " is truncated: rows ", begin, "..", end, " need ", want,
             " bytes, read ", got);
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
                const std::string path = path_inside_folder(folder, ref.scales_file, "scales file");
                std::ifstream f(path, std::ios::binary | std::ios::ate);
                if (!f)
                    fail(ONNXSTREAM_ERR_IO, node.where, ": cannot open scales file ", path, " of weight ", ref.name,
                         ": ", std::strerror(errno));
                const auto size = static_cast<uint64_t>(f.tellg());
                if (size != channels * sizeof(float))
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": scales file ", path, " has ", size,
                         " bytes but weight ", ref.name, " ", shape_str(ref.shape), " needs ", channels,
                         " float32 scales along axis ", ref.quant.axis, " (", channels * sizeof(float), " bytes)");
                auto values = std::make_shared<std::vector<float>>(channels);
                f.seekg(0);
                if (channels && !f.read(reinterpret_cast<char *>(values->data()), static_cast<std::streamsize>(size)))
                    fail(ONNXSTREAM_ERR_IO, node.where, ": cannot read scales file ", path);
                for (size_t c = 0; c < channels; ++c)
                    if (!((*values)[c] > 0) || !std::isfinite((*values)[c]))
                        fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": scales file ", path, ": scale ", c, " is ",
                             (*values)[c], " (expected positive and finite)");
                scales = std::move(values);
            } else if (scales->size() != channels) {
                fail(ONNXSTREAM_ERR_INVALID_MODEL, node.where, ": scales file ", ref.scales_file, " holds ",
                     scales->size(), " scales but weight ", ref.name, " needs ", channels);
            }
            graph.set_channel_scales(static_cast<size_t>(node.index), k, scales);
        }
}

} // namespace onnxstream
