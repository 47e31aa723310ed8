// Weight file resolution (OnnxStream's _nchw/_nhwc twins), size checks, the layout providers serve, and
// the built-in file providers (nocache, mmap, ram) serving the right bytes.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>

#include "tensor/half.h"
#include "test_util.h"
#include "weights/prepare.h"
#include "weights/provider.h"
#include "weights/weight_files.h"

using namespace onnxstream;
using onnxstream::test::expect_error;
using onnxstream::test::TempDir;
using onnxstream::test::write_file;
using onnxstream::test::write_floats;

namespace {

WeightSpec spec_of(const std::string &file, Shape shape, Layout wanted = Layout::Plain, DType dtype = DType::F32) {
    WeightSpec s;
    s.file = file;
    s.shape = std::move(shape);
    s.dtype = dtype;
    s.wanted = wanted;
    return s;
}

std::vector<float> iota_floats(size_t n, float start = 0) {
    std::vector<float> v(n);
    std::iota(v.begin(), v.end(), start);
    return v;
}

// Element (o,i,h,w) of an OIHW array and of an OHWI array holding the same weight.
size_t oihw_index(const Shape &s, int64_t o, int64_t i, int64_t h, int64_t w) {
    return static_cast<size_t>(((o * s[1] + i) * s[2] + h) * s[3] + w);
}
size_t ohwi_index(const Shape &s, int64_t o, int64_t i, int64_t h, int64_t w) {
    return static_cast<size_t>(((o * s[2] + h) * s[3] + w) * s[1] + i);
}

std::vector<float> to_ohwi(const std::vector<float> &oihw, const Shape &s) {
    std::vector<float> out(oihw.size());
    for (int64_t o = 0; o < s[0]; ++o)
        for (int64_t i = 0; i < s[1]; ++i)
            for (int64_t h = 0; h < s[2]; ++h)
                for (int64_t w = 0; w < s[3]; ++w) out[ohwi_index(s, o, i, h, w)] = oihw[oihw_index(s, o, i, h, w)];
    return out;
}

std::vector<float> floats_of(const Tensor &t) {
    return std::vector<float>(t.data<float>(), t.data<float>() + t.numel());
}

const Shape kConv = {3, 2, 2, 4}; // O, I, H, W: all different so a wrong transpose shows

} // namespace

TEST(ResolveWeight, PlainFile) {
    TempDir dir;
    write_floats(dir.file("b.bin"), {1, 2, 3, 4});
    ResolvedWeight r = resolve_weight_file(dir.path(), spec_of("b.bin", {4}));
    EXPECT_EQ(r.path, dir.file("b.bin"));
    EXPECT_EQ(r.layout, Layout::Plain);
    r = resolve_weight_file(dir.path() + "/", spec_of("b.bin", {2, 2}));
    EXPECT_EQ(r.path, dir.file("b.bin")) << "a trailing slash on the folder is not doubled";
}

TEST(ResolveWeight, MissingFile) {
    TempDir dir;
    std::string msg = expect_error(ONNXSTREAM_ERR_IO, [&] { resolve_weight_file(dir.path(), spec_of("b.bin", {4})); });
    EXPECT_CONTAINS(msg, "weight file " + dir.file("b.bin") + " not found");
}

TEST(ResolveWeight, DirectoryIsNotAWeightFile) {
    TempDir dir;
    ASSERT_EQ(::mkdir(dir.file("b.bin").c_str(), 0700), 0);
    std::string msg = expect_error(ONNXSTREAM_ERR_IO, [&] { resolve_weight_file(dir.path(), spec_of("b.bin", {0})); });
    EXPECT_CONTAINS(msg, "not found");
}

TEST(ResolveWeight, SizeMismatch) {
    TempDir dir;
    write_floats(dir.file("b.bin"), {1, 2, 3});
    std::string msg = expect_error(ONNXSTREAM_ERR_IO, [&] { resolve_weight_file(dir.path(), spec_of("b.bin", {4})); });
    EXPECT_CONTAINS(msg, "weight file " + dir.file("b.bin") + " has 12 bytes, expected 16 (float32 (4))");
    msg = expect_error(ONNXSTREAM_ERR_IO,
                       [&] { resolve_weight_file(dir.path(), spec_of("b.bin", {4}, Layout::Plain, DType::I64)); });
    EXPECT_CONTAINS(msg, "has 12 bytes, expected 32 (int64 (4))");
}

TEST(ResolveWeight, NchwFallsBackToNhwcTwin) {
    TempDir dir;
    write_floats(dir.file("w_nhwc.bin"), iota_floats(48));
    for (Layout wanted : {Layout::Plain, Layout::OHWI}) {
        ResolvedWeight r = resolve_weight_file(dir.path(), spec_of("w_nchw.bin", kConv, wanted));
        EXPECT_EQ(r.path, dir.file("w_nhwc.bin"));
        EXPECT_EQ(r.layout, Layout::OHWI);
    }
}

TEST(ResolveWeight, BothTwinsPickTheWantedLayout) {
    TempDir dir;
    write_floats(dir.file("w_nchw.bin"), iota_floats(48));
    write_floats(dir.file("w_nhwc.bin"), iota_floats(48));
    ResolvedWeight r = resolve_weight_file(dir.path(), spec_of("w_nchw.bin", kConv, Layout::Plain));
    EXPECT_EQ(r.path, dir.file("w_nchw.bin"));
    EXPECT_EQ(r.layout, Layout::Plain);
    r = resolve_weight_file(dir.path(), spec_of("w_nchw.bin", kConv, Layout::OHWI));
    EXPECT_EQ(r.path, dir.file("w_nhwc.bin"));
    EXPECT_EQ(r.layout, Layout::OHWI);
}

TEST(ResolveWeight, NeitherTwinExists) {
    TempDir dir;
    std::string msg =
        expect_error(ONNXSTREAM_ERR_IO, [&] { resolve_weight_file(dir.path(), spec_of("w_nchw.bin", kConv)); });
    EXPECT_CONTAINS(msg, "weight file " + dir.file("w_nchw.bin") + " not found (nor its OnnxStream twin w_nhwc.bin)");
}

TEST(ResolveWeight, TwinWithWrongSize) {
    TempDir dir;
    write_floats(dir.file("w_nhwc.bin"), iota_floats(47));
    std::string msg =
        expect_error(ONNXSTREAM_ERR_IO, [&] { resolve_weight_file(dir.path(), spec_of("w_nchw.bin", kConv)); });
    EXPECT_CONTAINS(msg, "weight file " + dir.file("w_nhwc.bin") + " has 188 bytes, expected 192 (float32 (3,2,2,4))");
}

TEST(ResolveWeight, TwinOnlyFor4DNchwNames) {
    TempDir dir;
    write_floats(dir.file("v_nhwc.bin"), iota_floats(6));
    std::string msg =
        expect_error(ONNXSTREAM_ERR_IO, [&] { resolve_weight_file(dir.path(), spec_of("v_nchw.bin", {2, 3})); });
    EXPECT_CONTAINS(msg, "v_nchw.bin not found");
    EXPECT_EQ(msg.find("twin"), std::string::npos) << msg;
    write_floats(dir.file("u_nhwc.bin"), iota_floats(48));
    expect_error(ONNXSTREAM_ERR_IO, [&] { resolve_weight_file(dir.path(), spec_of("u.bin", kConv)); });
}

TEST(ReadWeight, ContentsQuantAndExactSize) {
    TempDir dir;
    write_file(dir.file("q.bin"), std::string("\x01\x02\x03\xff", 4));
    WeightSpec s = spec_of("q.bin", {2, 2}, Layout::Plain, DType::U8);
    s.quant = {true, 0.25, 3, -1, nullptr, 0, {}};
    Allocator alloc;
    Tensor t = read_weight_file(resolve_weight_file(dir.path(), s), s, alloc);
    EXPECT_EQ(t.dtype(), DType::U8);
    EXPECT_EQ(t.shape(), (Shape{2, 2}));
    EXPECT_TRUE(t.quant().present);
    EXPECT_EQ(t.quant().zero_point, 3);
    EXPECT_EQ(t.data<uint8_t>()[3], 0xff);
    EXPECT_EQ(alloc.current_bytes(), 4u);
}

TEST(ReadWeight, FileChangedAfterResolve) {
    TempDir dir;
    write_floats(dir.file("b.bin"), {1, 2, 3, 4});
    WeightSpec s = spec_of("b.bin", {4});
    ResolvedWeight r = resolve_weight_file(dir.path(), s);
    Allocator alloc;
    write_floats(dir.file("b.bin"), {1, 2, 3});
    std::string msg = expect_error(ONNXSTREAM_ERR_IO, [&] { read_weight_file(r, s, alloc); });
    EXPECT_CONTAINS(msg, "is truncated: read 12 of 16 bytes");
    write_floats(dir.file("b.bin"), {1, 2, 3, 4, 5});
    msg = expect_error(ONNXSTREAM_ERR_IO, [&] { read_weight_file(r, s, alloc); });
    EXPECT_CONTAINS(msg, "is larger than the declared 16 bytes");
    ::remove(dir.file("b.bin").c_str());
    msg = expect_error(ONNXSTREAM_ERR_IO, [&] { read_weight_file(r, s, alloc); });
    EXPECT_CONTAINS(msg, "cannot open weight file");
    EXPECT_EQ(alloc.current_bytes(), 0u) << "nothing leaks on failure";
}

TEST(ReadWeight, KernelsTheOpPreparesComeInTheFileLayout) {
    TempDir dir;
    std::vector<float> oihw = iota_floats(48, 100);
    write_floats(dir.file("w_nchw.bin"), oihw);
    Allocator alloc;
    // Wanted OHWI means the op reorders the kernel itself (weights/prepare.h), in one pass with any
    // conversion: the file's order is served untouched.
    WeightSpec s = spec_of("w_nchw.bin", kConv, Layout::OHWI);
    Tensor t = read_weight_file(resolve_weight_file(dir.path(), s), s, alloc);
    EXPECT_EQ(t.layout(), Layout::Plain);
    EXPECT_EQ(t.shape(), kConv);
    EXPECT_EQ(floats_of(t), oihw);
}

TEST(ReadWeight, OhwiTwinToPlainTransposition) {
    TempDir dir;
    std::vector<float> oihw = iota_floats(48, -7);
    write_floats(dir.file("w_nhwc.bin"), to_ohwi(oihw, kConv));
    Allocator alloc;
    WeightSpec s = spec_of("w_nchw.bin", kConv, Layout::Plain);
    Tensor t = read_weight_file(resolve_weight_file(dir.path(), s), s, alloc);
    EXPECT_EQ(t.layout(), Layout::Plain);
    EXPECT_EQ(floats_of(t), oihw);
    // Wanted OHWI from the twin: no transposition at all.
    s.wanted = Layout::OHWI;
    Tensor u = read_weight_file(resolve_weight_file(dir.path(), s), s, alloc);
    EXPECT_EQ(u.layout(), Layout::OHWI);
    EXPECT_EQ(floats_of(u), to_ohwi(oihw, kConv));
}

TEST(ServeLayout, OnlyPlainRequestsOfOhwiTensorsMove) {
    Allocator alloc;
    std::vector<float> oihw = iota_floats(48, 3);
    Tensor t = make_tensor(alloc, DType::F32, kConv);
    std::vector<float> ohwi = to_ohwi(oihw, kConv);
    std::copy(ohwi.begin(), ohwi.end(), t.data<float>());
    t.set_layout(Layout::OHWI);
    std::atomic<uint64_t> copied{0};
    Tensor same = serve_layout(t, spec_of("w_nchw.bin", kConv, Layout::OHWI), alloc, &copied);
    EXPECT_EQ(same.raw(), t.raw());
    EXPECT_EQ(copied.load(), 0u);
    Tensor plain = serve_layout(t, spec_of("w_nchw.bin", kConv, Layout::Plain), alloc, &copied);
    EXPECT_EQ(plain.layout(), Layout::Plain);
    EXPECT_EQ(floats_of(plain), oihw);
    EXPECT_EQ(copied.load(), 48u * sizeof(float));
}

// ---- built-in file providers ----------------------------------------------------------------------

class FileProviders : public ::testing::TestWithParam<int> {
protected:
    std::unique_ptr<WeightsProvider> make() const {
        switch (GetParam()) {
        case 0: return make_nocache_provider();
        case 1: return make_prefetch_provider(1 << 20);
        case 2: return make_mmap_provider();
        default: return make_ram_provider();
        }
    }
};

TEST_P(FileProviders, ValidateAndFetch) {
    TempDir dir;
    std::vector<float> oihw = iota_floats(48, 1);
    write_floats(dir.file("w_nchw.bin"), oihw);
    write_floats(dir.file("b.bin"), {5, 6, 7});
    auto p = make();
    p->set_folder(dir.path());
    p->validate(spec_of("b.bin", {3}));
    p->validate(spec_of("w_nchw.bin", kConv, Layout::OHWI));
    std::string msg = expect_error(ONNXSTREAM_ERR_IO, [&] { p->validate(spec_of("b.bin", {4})); });
    EXPECT_CONTAINS(msg, "has 12 bytes, expected 16");
    expect_error(ONNXSTREAM_ERR_IO, [&] { p->validate(spec_of("missing.bin", {4})); });

    Allocator alloc;
    for (int round = 0; round < 2; ++round) {
        Tensor b = p->fetch(spec_of("b.bin", {3}), alloc);
        EXPECT_EQ(floats_of(b), (std::vector<float>{5, 6, 7}));
        Tensor w = p->fetch(spec_of("w_nchw.bin", kConv, Layout::OHWI), alloc);
        EXPECT_EQ(w.layout(), Layout::Plain) << "no _nhwc twin: the op reorders the kernel itself";
        EXPECT_EQ(floats_of(w), oihw);
        Tensor plain = p->fetch(spec_of("w_nchw.bin", kConv, Layout::Plain), alloc);
        EXPECT_EQ(plain.layout(), Layout::Plain);
        EXPECT_EQ(floats_of(plain), oihw);
    }
}

TEST_P(FileProviders, FetchFailsWithIoWhenTheFileDisappears) {
    TempDir dir;
    write_floats(dir.file("b.bin"), {5, 6, 7});
    auto p = make();
    p->set_folder(dir.path());
    p->validate(spec_of("b.bin", {3}));
    Allocator alloc;
    if (GetParam() == 3) p->fetch(spec_of("b.bin", {3}), alloc); // the RAM cache keeps its first read
    ::remove(dir.file("b.bin").c_str());
    if (GetParam() == 3) {
        EXPECT_EQ(floats_of(p->fetch(spec_of("b.bin", {3}), alloc)), (std::vector<float>{5, 6, 7}));
        return;
    }
    expect_error(ONNXSTREAM_ERR_IO, [&] { p->fetch(spec_of("b.bin", {3}), alloc); });
}

std::string provider_name(const ::testing::TestParamInfo<int> &info) {
    static const char *const names[] = {"nocache", "prefetch", "mmap", "ram"};
    return names[info.param];
}

INSTANTIATE_TEST_SUITE_P(Kinds, FileProviders, ::testing::Values(0, 1, 2, 3), provider_name);

TEST(MmapProvider, IsZeroCopyAndUntracked) {
    TempDir dir;
    write_floats(dir.file("b.bin"), {5, 6, 7});
    auto p = make_mmap_provider();
    p->set_folder(dir.path());
    Allocator alloc;
    Tensor t = p->fetch(spec_of("b.bin", {3}), alloc);
    EXPECT_FALSE(t.storage()->padded()) << "mapped pages carry no read-past-the-end padding";
    EXPECT_EQ(alloc.current_bytes(), 0u);
    EXPECT_EQ(t.data<float>()[2], 7.0f);
}

TEST(RamProvider, CachesPerLayout) {
    TempDir dir;
    write_floats(dir.file("w_nchw.bin"), iota_floats(48));
    auto p = make_ram_provider();
    p->set_folder(dir.path());
    Allocator alloc;
    Tensor a = p->fetch(spec_of("w_nchw.bin", kConv, Layout::OHWI), alloc);
    Tensor b = p->fetch(spec_of("w_nchw.bin", kConv, Layout::OHWI), alloc);
    EXPECT_EQ(a.raw(), b.raw());
    Tensor c = p->fetch(spec_of("w_nchw.bin", kConv, Layout::Plain), alloc);
    EXPECT_NE(a.raw(), c.raw());
    EXPECT_EQ(alloc.current_bytes(), 2u * 192u);
}

TEST(NocacheProvider, FreesAfterUse) {
    TempDir dir;
    write_floats(dir.file("b.bin"), {5, 6, 7});
    auto p = make_nocache_provider();
    p->set_folder(dir.path());
    Allocator alloc;
    {
        Tensor t = p->fetch(spec_of("b.bin", {3}), alloc);
        EXPECT_EQ(alloc.current_bytes(), 12u);
    }
    EXPECT_EQ(alloc.current_bytes(), 0u);
}

// ---- files past 2 and 4 GiB (32-bit builds: 32-bit size_t, off_t only 64-bit with _FILE_OFFSET_BITS) ----

namespace {
// A sparse file of `bytes` with `marker` written at `at`: big files without the disk space or the time.
void write_sparse(const std::string &path, uint64_t bytes, uint64_t at, const std::string &marker) {
    FILE *f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr) << path;
    ASSERT_EQ(::ftruncate(fileno(f), static_cast<off_t>(bytes)), 0) << path;
    ASSERT_EQ(fseeko(f, static_cast<off_t>(at), SEEK_SET), 0);
    ASSERT_EQ(std::fwrite(marker.data(), 1, marker.size(), f), marker.size());
    ASSERT_EQ(std::fclose(f), 0);
}
constexpr uint64_t kGiB = uint64_t{1} << 30;
} // namespace

TEST(LargeWeightFiles, RowsPast2GiBReadBack) {
    TempDir dir;
    // 2 GiB + 8 KiB of uint8 rows of 4096; rows 524288 and 524289 start at 2 GiB and 2 GiB + 4 KiB.
    const int64_t rows = (int64_t{1} << 19) + 2;
    write_sparse(dir.file("big.bin"), 2 * kGiB + 8192, 2 * kGiB + 4095, "\x11\x22\x33");
    WeightSpec s = spec_of("big.bin", {rows, 4096}, Layout::Plain, DType::U8);
    ResolvedWeight file = resolve_weight_file(dir.path(), s);
    Allocator alloc;
    Tensor t = read_weight_rows(file, s, rows - 2, rows, alloc);
    ASSERT_EQ(t.shape(), (Shape{2, 4096}));
    const uint8_t *b = t.data<uint8_t>();
    EXPECT_EQ(b[0], 0);
    EXPECT_EQ(b[4095], 0x11);
    EXPECT_EQ(b[4096], 0x22);
    EXPECT_EQ(b[4097], 0x33);
    EXPECT_EQ(b[8191], 0);
}

// The whole 2 GiB + 8 KiB mapped: on 64-bit always; a 32-bit process may not have a free range that large,
// and then the refusal is an out-of-memory error that says so, never an I/O error or a short mapping.
TEST(LargeWeightFiles, MappingPast2GiBWorksOrIsRefusedAsOutOfMemory) {
    TempDir dir;
    const int64_t rows = (int64_t{1} << 19) + 2;
    write_sparse(dir.file("big.bin"), 2 * kGiB + 8192, 2 * kGiB + 8190, "\x5a\xa5");
    auto p = make_mmap_provider();
    p->set_folder(dir.path());
    Allocator alloc;
    WeightSpec s = spec_of("big.bin", {rows, 4096}, Layout::Plain, DType::U8);
    try {
        Tensor t = p->fetch(s, alloc);
        EXPECT_EQ(t.data<uint8_t>()[2 * kGiB + 8190], 0x5a);
        EXPECT_EQ(t.data<uint8_t>()[2 * kGiB + 8191], 0xa5);
    } catch (const Error &e) {
        EXPECT_EQ(sizeof(void *), 4u) << "a 64-bit process must map 2 GiB: " << e.what();
        EXPECT_EQ(e.status(), ONNXSTREAM_ERR_OUT_OF_MEMORY) << e.what();
        EXPECT_CONTAINS(e.what(), "address space");
    }
}

TEST(LargeWeightFiles, ThirtyTwoBitBuildsRefuseWhatCannotFitTheAddressSpace) {
    if (sizeof(void *) != 4) GTEST_SKIP() << "64-bit build: these sizes fit";
    TempDir dir;
    // 5 GiB: more bytes than a size_t counts. Every provider refuses it when the model is loaded.
    write_sparse(dir.file("huge.bin"), 5 * kGiB, 0, "x");
    WeightSpec huge = spec_of("huge.bin", {5, int64_t{1} << 30}, Layout::Plain, DType::U8);
    for (auto &p : {make_nocache_provider(), make_mmap_provider()}) {
        p->set_folder(dir.path());
        std::string msg = expect_error(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] { p->validate(huge); });
        EXPECT_CONTAINS(msg, "weight huge.bin needs 5368709120 bytes, more than this platform can address");
    }
    // 3.75 GiB counts in a size_t but no 32-bit process has that much contiguous address space free.
    write_sparse(dir.file("wide.bin"), 3 * kGiB + 3 * kGiB / 4, 0, "x");
    WeightSpec wide = spec_of("wide.bin", {15, int64_t{1} << 28}, Layout::Plain, DType::U8);
    auto p = make_mmap_provider();
    p->set_folder(dir.path());
    p->validate(wide);
    Allocator alloc;
    std::string msg = expect_error(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] { p->fetch(wide, alloc); });
    EXPECT_CONTAINS(msg, "no room in the address space");
}
