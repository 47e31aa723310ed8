#include "weights/weight_files.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <sys/types.h>

#include "util/checked.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/strings.h"
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

// OIHW -> OHWI or back, for a 4-D weight of element size `es`.
void transpose_conv_weight(const uint8_t *src, uint8_t *dst, const Shape &oihw, size_t es, bool to_ohwi) {
    const size_t O = static_cast<size_t>(oihw[0]), I = static_cast<size_t>(oihw[1]);
    const size_t H = static_cast<size_t>(oihw[2]), W = static_cast<size_t>(oihw[3]);
    for (size_t o = 0; o < O; ++o)
        for (size_t i = 0; i < I; ++i)
            for (size_t h = 0; h < H; ++h)
                for (size_t w = 0; w < W; ++w) {
                    size_t plain = ((o * I + i) * H + h) * W + w;
                    size_t ohwi = ((o * H + h) * W + w) * I + i;
                    if (to_ohwi) std::memcpy(dst + ohwi * es, src + plain * es, es);
                    else std::memcpy(dst + plain * es, src + ohwi * es, es);
                }
}

} // namespace

Tensor WeightsProvider::fetch_rows(const WeightSpec &spec, int64_t begin, int64_t end, const Allocator &alloc) {
    auto start = std::chrono::steady_clock::now();
    Tensor t = read_weight_rows(resolve_weight_file(folder_, spec), spec, begin, end, alloc);
    read_us_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
    bytes_read_ += t.byte_size();
    return t;
}

Tensor WeightsProvider::read_counted(const WeightSpec &spec, const Allocator &alloc) {
    auto start = std::chrono::steady_clock::now();
    Tensor t = read_weight_file(resolve_weight_file(folder_, spec), spec, alloc);
    read_us_ += static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count());
    bytes_read_ += spec.byte_size();
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

Tensor read_weight_file(const ResolvedWeight &file, const WeightSpec &spec, const Allocator &alloc) {
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
    return adapt_weight_layout(std::move(t), spec, alloc);
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
                        const Allocator &alloc) {
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
    return adapt_weight_layout(std::move(t), part, alloc);
}

Tensor copy_weight_rows(const Tensor &whole, int64_t begin, int64_t end, const Allocator &alloc) {
    Tensor t = make_tensor(alloc, whole.dtype(), row_shape(whole.shape(), begin, end));
    t.set_quant(whole.quant());
    t.set_layout(whole.layout());
    const size_t row_bytes = whole.byte_size() / static_cast<size_t>(whole.dim(0));
    std::memcpy(t.raw(), static_cast<const uint8_t *>(whole.raw()) + row_bytes * static_cast<size_t>(begin),
                t.byte_size());
    return t;
}

Tensor adapt_weight_layout(Tensor t, const WeightSpec &spec, const Allocator &alloc) {
    if (t.layout() == spec.wanted) return t;
    Tensor out = make_tensor(alloc, spec.dtype, spec.shape);
    out.set_quant(spec.quant);
    out.set_layout(spec.wanted);
    transpose_conv_weight(static_cast<const uint8_t *>(t.raw()), static_cast<uint8_t *>(out.raw()), spec.shape,
                          dtype_size(spec.dtype), spec.wanted == Layout::OHWI);
    return out;
}

} // namespace onnxstream
