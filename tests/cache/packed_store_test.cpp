// XNNPACK's packed weights beside the persistent weights cache (weights/packed_store.h), on the real YOLOv8n
// through the C API: a first model writes "<cache>.xnnpack", a second maps every entry, and a damaged file
// (truncated, extended, a broken header or index, a foreign file) is rebuilt and never served. Every run's
// output must equal the run without any cache bit for bit and match ONNX Runtime's reference. Builds
// against XNNPACK's 2022 API have no weights cache: there the test checks that nothing is written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "exec/model.h"
#include "onnxstream.h"
#include "xnnpack/weights_cache.h"

namespace fs = std::filesystem;

namespace {

std::string read_all(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_all(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

struct ModelRun {
    std::string output; // output0's bytes
    onnxstream_run_stats_t stats{};
};

class PackedStore : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        const char *shared = std::getenv("ONNXSTREAM_SHARED_DIR");
        if (!shared || !fs::exists(std::string(shared) + "/models/yolov8n/model.txt")) return;
        model_ = std::string(shared) + "/models/yolov8n";
        image_ = read_all(std::string(shared) + "/data/yolov8n/input_images_1x3x640x640_f32.bin");
        reference_ = read_all(std::string(shared) + "/data/yolov8n/expected_output0_1x84x8400_f32.bin");
        char tmpl[] = "/tmp/onnxstream_packed_store_XXXXXX";
        work_ = mkdtemp(tmpl);
        plain_ = run("").output;
    }
    static void TearDownTestSuite() {
        if (!work_.empty()) fs::remove_all(work_);
    }
    void SetUp() override {
        if (model_.empty()) GTEST_SKIP() << "needs ONNXSTREAM_SHARED_DIR with models/yolov8n";
    }

    // One model on YOLOv8n's real picture, with `cache` as its weights cache ("" for none).
    static ModelRun run(const std::string &cache) {
        ModelRun r;
        onnxstream_model_options_t o;
        onnxstream_model_options_init(&o);
        o.threads = 2;
        if (!cache.empty()) o.cache_path = cache.c_str();
        onnxstream_model_t *m = nullptr;
        EXPECT_EQ(onnxstream_model_create(&o, &m), ONNXSTREAM_OK);
        if (!m) return r;
        const int64_t shape[] = {1, 3, 640, 640};
        if (onnxstream_model_load(m, model_.c_str()) != ONNXSTREAM_OK ||
            onnxstream_model_push_tensor(m, "images", ONNXSTREAM_DTYPE_FLOAT32, 4, shape, image_.data(),
                                         image_.size()) != ONNXSTREAM_OK ||
            onnxstream_model_run(m) != ONNXSTREAM_OK) {
            ADD_FAILURE() << onnxstream_model_last_error(m);
            onnxstream_model_destroy(m);
            return r;
        }
        r.stats.struct_size = sizeof r.stats;
        EXPECT_EQ(onnxstream_model_run_stats(m, &r.stats), ONNXSTREAM_OK);
        onnxstream_tensor_view_t view;
        std::memset(&view, 0, sizeof view);
        view.struct_size = sizeof view;
        EXPECT_EQ(onnxstream_model_get_output_by_name(m, "output0", &view), ONNXSTREAM_OK);
        if (view.data) r.output.assign(static_cast<const char *>(view.data), view.byte_size);
        onnxstream_model_destroy(m);
        return r;
    }

    // Equal to the run without a cache, and to ONNX Runtime within the e2e tolerance.
    static void expect_correct(const ModelRun &r, const std::string &what) {
        ASSERT_EQ(r.output.size(), reference_.size()) << what;
        EXPECT_TRUE(r.output == plain_) << what << ": differs from the run without a cache";
        const float *y = reinterpret_cast<const float *>(r.output.data());
        const float *ref = reinterpret_cast<const float *>(reference_.data());
        double num = 0, den = 0;
        for (size_t i = 0; i < reference_.size() / 4; ++i) {
            num += (double(y[i]) - ref[i]) * (double(y[i]) - ref[i]);
            den += double(ref[i]) * ref[i];
        }
        EXPECT_LE(std::sqrt(num / den), 1e-4) << what;
    }

    std::string cache() const { return work_ + "/yolo.oswc"; }
    std::string packed() const { return cache() + ".xnnpack"; }

    static std::string model_, image_, reference_, work_, plain_;
};
std::string PackedStore::model_, PackedStore::image_, PackedStore::reference_, PackedStore::work_,
    PackedStore::plain_;

TEST_F(PackedStore, FirstModelWritesSecondMaps) {
    fs::remove(cache());
    fs::remove(packed());
    const ModelRun first = run(cache());
    expect_correct(first, "first");
    if (!onnxstream::xnn::has_weights_cache()) {
        EXPECT_EQ(first.stats.packed_weights_stored, 0u);
        EXPECT_FALSE(fs::exists(packed())) << "a build without XNNPACK's weights cache wrote packed weights";
        return;
    }
    EXPECT_GT(first.stats.packed_weights_stored, 50u); // YOLOv8n's convolutions
    EXPECT_EQ(first.stats.packed_weights_mapped, 0u);
    ASSERT_TRUE(fs::exists(packed()));
    const ModelRun second = run(cache());
    expect_correct(second, "second");
    EXPECT_EQ(second.stats.packed_weights_mapped, first.stats.packed_weights_stored);
    EXPECT_EQ(second.stats.packed_weights_stored, 0u);
    for (const auto &e : fs::directory_iterator(work_))
        EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

// The engine's own Model (the library's internals, linked into this test): entries mapped, or read into
// pooled blocks (ModelOptions::packed_copy_pool_bytes, balanced's choice), give the same output; every
// operator comes from the file, none is packed from its weight (what lets the executor leave the weights'
// pages alone, xnn::creation_counts).
TEST_F(PackedStore, MappedOrCopiedEntriesServeTheSame) {
    if (!onnxstream::xnn::has_weights_cache()) GTEST_SKIP() << "this XNNPACK has no weights cache";
    fs::remove(cache());
    fs::remove(packed());
    expect_correct(run(cache()), "builder");
    for (uint64_t pool : {uint64_t(0), uint64_t(6) << 20}) {
        onnxstream::ModelOptions o;
        o.threads = 2;
        o.provider = ONNXSTREAM_PROVIDER_NOCACHE;
        o.cache_path = cache();
        o.packed_copy_pool_bytes = pool;
        onnxstream::Model m(o);
        m.load_file(model_);
        ModelRun r;
        for (int again = 0; again < 2; ++again) { // the second run reuses the first one's blocks
            m.push_input("images", onnxstream::DType::F32, {1, 3, 640, 640}, image_.data(), image_.size());
            const onnxstream::xnn::CreationCounts before = onnxstream::xnn::creation_counts();
            m.run(nullptr);
            const onnxstream::xnn::CreationCounts after = onnxstream::xnn::creation_counts();
            EXPECT_EQ(after.packed, before.packed) << "pool " << pool;
            EXPECT_GT(after.from_store - before.from_store, 50u) << "pool " << pool;
            const onnxstream::Tensor &y = m.outputs().at(0);
            r.output.assign(static_cast<const char *>(y.raw()), y.byte_size());
            expect_correct(r, pool ? "copied entries" : "mapped entries");
        }
    }
}

// Two models building the same files at once (threads of one process here; processes do the same): each
// writes its own temporary file and renames it into place, so the next model finds a whole file.
TEST_F(PackedStore, TwoModelsBuildAtOnce) {
    if (!onnxstream::xnn::has_weights_cache()) GTEST_SKIP() << "this XNNPACK has no weights cache";
    fs::remove(cache());
    fs::remove(packed());
    ModelRun a, b;
    std::thread ta([&] { a = run(cache()); }), tb([&] { b = run(cache()); });
    ta.join();
    tb.join();
    expect_correct(a, "builder a");
    expect_correct(b, "builder b");
    const ModelRun after = run(cache());
    expect_correct(after, "after both");
    EXPECT_GT(after.stats.packed_weights_mapped, 50u);
    EXPECT_EQ(after.stats.packed_weights_stored, 0u);
    for (const auto &e : fs::directory_iterator(work_))
        EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

TEST_F(PackedStore, DamagedFilesAreRebuiltNeverServed) {
    if (!onnxstream::xnn::has_weights_cache()) GTEST_SKIP() << "this XNNPACK has no weights cache";
    const ModelRun warm = run(cache());
    expect_correct(warm, "warm");
    const std::string good = read_all(packed());
    ASSERT_GT(good.size(), 8192u);
    const uint64_t entries = warm.stats.packed_weights_stored + warm.stats.packed_weights_mapped;
    std::string magic = good, index = good, extended = good + std::string(100, '\0');
    magic[0] ^= 0x5a;
    index[good.size() - 5] ^= 0x01; // the index is the file's tail
    const struct {
        const char *name;
        std::string bytes;
    } damaged[] = {{"truncated", good.substr(0, good.size() / 2)},
                   {"header only", good.substr(0, 4096)},
                   {"empty", ""},
                   {"broken magic", magic},
                   {"broken index", index},
                   {"extended", extended},
                   {"foreign", std::string(good.size(), 'x')}};
    for (const auto &d : damaged) {
        write_all(packed(), d.bytes);
        const ModelRun r = run(cache());
        expect_correct(r, d.name);
        EXPECT_EQ(r.stats.packed_weights_mapped, 0u) << d.name << ": a damaged file was served";
        EXPECT_EQ(r.stats.packed_weights_stored, entries) << d.name << ": not rebuilt";
        const ModelRun after = run(cache());
        EXPECT_EQ(after.stats.packed_weights_mapped, entries) << d.name << ": the rebuilt file is not used";
    }
}

} // namespace
