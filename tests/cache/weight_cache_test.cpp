// The persistent weights cache: built by a first process, served by the next ones with outputs
// identical to a run without it, invalidated by weight changes, rebuilt when damaged, safe with two
// builders at once. Processes are weight_cache_run (cache_run.cpp), path in $WEIGHT_CACHE_RUN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <vector>

#include "exec/model.h"
#include "tensor/half.h"
#include "util/error.h"
#include "weights/weight_cache.h"

namespace fs = std::filesystem;
using namespace onnxstream;

namespace {

std::string env(const char *name) {
    const char *v = std::getenv(name);
    return v ? v : "";
}

std::string read_all(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_all(const std::string &path, const void *data, size_t n) {
    std::ofstream out(path, std::ios::binary);
    out.write(static_cast<const char *>(data), static_cast<std::streamsize>(n));
}

std::vector<float> floats(const std::string &bytes) {
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), v.size() * 4);
    return v;
}

// key=value pairs of the helper's figures line, plus "status" (exit code) and "out" (whole stdout).
using Fields = std::map<std::string, std::string>;

Fields parse(const std::string &out, int status) {
    Fields f;
    f["status"] = std::to_string(status);
    f["out"] = out;
    std::istringstream in(out);
    std::string tok;
    while (in >> tok) {
        size_t eq = tok.find('=');
        if (eq != std::string::npos) f[tok.substr(0, eq)] = tok.substr(eq + 1);
    }
    // The reason may contain spaces: it is the rest of the line.
    size_t r = out.find("reason=");
    if (r != std::string::npos) f["reason"] = out.substr(r + 7, out.find('\n', r) - r - 7);
    return f;
}

class Proc {
public:
    explicit Proc(const std::string &cmd) : pipe_(popen((cmd + " 2>&1").c_str(), "r")) {}
    Fields wait() {
        std::string out;
        char buf[4096];
        size_t n;
        while (pipe_ && (n = fread(buf, 1, sizeof buf, pipe_)) > 0) out.append(buf, n);
        int st = pipe_ ? pclose(pipe_) : -1;
        pipe_ = nullptr;
        return parse(out, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }

private:
    FILE *pipe_;
};

class YoloCache : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        shared_ = env("ONNXSTREAM_SHARED_DIR");
        runner_ = env("WEIGHT_CACHE_RUN");
        if (shared_.empty() || !fs::exists(shared_ + "/models/yolov8n/model.txt") || runner_.empty()) return;
        char tmpl[] = "/tmp/onnxstream_cache_test_XXXXXX";
        work_ = mkdtemp(tmpl);
        // A private copy of the model: the tests touch and modify weight files.
        fs::copy(shared_ + "/models/yolov8n", work_ + "/model", fs::copy_options::recursive);
        input_ = shared_ + "/data/yolov8n/input_images_1x3x640x640_f32.bin";
        reference_ = floats(read_all(shared_ + "/data/yolov8n/expected_output0_1x84x8400_f32.bin"));
        Fields f = run("-", "nocache");
        ASSERT_EQ(f["status"], "0") << f["out"];
        nocache_ = read_all(work_ + "/nocache_0.bin");
    }
    static void TearDownTestSuite() {
        if (!work_.empty()) fs::remove_all(work_);
    }
    void SetUp() override {
        if (work_.empty()) GTEST_SKIP() << "needs ONNXSTREAM_SHARED_DIR with models/yolov8n and WEIGHT_CACHE_RUN";
    }

    static std::string cmd(const std::string &cache, const std::string &tag) {
        return runner_ + " " + work_ + "/model " + cache + " " + work_ + "/" + tag + " 1 images=" + input_;
    }
    static Fields run(const std::string &cache, const std::string &tag) { return Proc(cmd(cache, tag)).wait(); }

    // Identical to the no-cache run, and to ONNX Runtime within the e2e tolerance.
    static void expect_correct(const std::string &tag) {
        std::string out = read_all(work_ + "/" + tag + "_0.bin");
        ASSERT_EQ(out.size(), nocache_.size());
        EXPECT_TRUE(out == nocache_) << tag << ": differs from the run without the cache";
        std::vector<float> y = floats(out);
        ASSERT_EQ(y.size(), reference_.size());
        double num = 0, den = 0, max_abs = 0;
        for (size_t i = 0; i < y.size(); ++i) {
            double d = double(y[i]) - reference_[i];
            num += d * d;
            den += double(reference_[i]) * reference_[i];
            max_abs = std::max(max_abs, std::fabs(d));
        }
        EXPECT_LE(std::sqrt(num / den), 1e-4) << tag;
        EXPECT_LE(max_abs, 1e-2) << tag;
    }

    std::string cache_path() const { return work_ + "/yolo.oswc"; }

    static std::string shared_, runner_, work_, input_, nocache_;
    static std::vector<float> reference_;
};
std::string YoloCache::shared_, YoloCache::runner_, YoloCache::work_, YoloCache::input_, YoloCache::nocache_;
std::vector<float> YoloCache::reference_;

TEST_F(YoloCache, FirstRunBuildsSecondProcessServes) {
    fs::remove(cache_path());
    Fields a = run(cache_path(), "first");
    ASSERT_EQ(a["status"], "0") << a["out"];
    EXPECT_EQ(a["built"], "1");
    EXPECT_EQ(a["reason"], "-"); // no file existed
    expect_correct("first");

    Fields b = run(cache_path(), "second");
    ASSERT_EQ(b["status"], "0") << b["out"];
    EXPECT_EQ(b["built"], "0") << b["out"];
    EXPECT_NE(b["served"], "0");
    expect_correct("second");
    // No temporary files are left behind.
    for (const auto &e : fs::directory_iterator(work_))
        EXPECT_EQ(e.path().filename().string().find("yolo.oswc.tmp"), std::string::npos) << e.path();
}

TEST_F(YoloCache, TouchedWeightInvalidates) {
    Fields a = run(cache_path(), "warm");
    ASSERT_EQ(a["status"], "0") << a["out"];
    std::string w = work_ + "/model/model_2E_0_2E_conv_2E_bias.bin";
    struct timespec times[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    ASSERT_EQ(utimensat(AT_FDCWD, w.c_str(), times, 0), 0);
    Fields b = run(cache_path(), "touched");
    ASSERT_EQ(b["status"], "0") << b["out"];
    EXPECT_EQ(b["built"], "1");
    EXPECT_NE(b["reason"].find("changed"), std::string::npos) << b["reason"];
    expect_correct("touched");
    Fields c = run(cache_path(), "after_touch");
    EXPECT_EQ(c["built"], "0") << c["out"];
}

TEST_F(YoloCache, DamagedFilesAreRebuilt) {
    Fields a = run(cache_path(), "warm2");
    ASSERT_EQ(a["status"], "0") << a["out"];
    const std::string good = read_all(cache_path());
    struct Damage {
        std::string name, bytes, reason;
    };
    std::string flipped_index = good;
    flipped_index[flipped_index.size() - 10] ^= 0x5a;
    std::string flipped_header = good;
    flipped_header[40] ^= 0x01;
    std::vector<Damage> cases = {
        {"truncated", good.substr(0, good.size() / 2), "truncated"},
        {"tiny", good.substr(0, 100), "truncated"},
        {"empty", "", "truncated"},
        {"foreign", std::string(8192, 'x'), "bad magic"},
        {"index", flipped_index, "index"},
        {"header", flipped_header, "header checksum"},
    };
    for (const Damage &d : cases) {
        write_all(cache_path(), d.bytes.data(), d.bytes.size());
        Fields f = run(cache_path(), "damaged_" + d.name);
        ASSERT_EQ(f["status"], "0") << d.name << ": " << f["out"];
        EXPECT_EQ(f["built"], "1") << d.name;
        EXPECT_NE(f["reason"].find(d.reason), std::string::npos) << d.name << ": " << f["reason"];
        expect_correct("damaged_" + d.name);
    }
    Fields g = run(cache_path(), "repaired");
    EXPECT_EQ(g["built"], "0") << g["out"];
}

TEST_F(YoloCache, TwoProcessesBuildAtOnce) {
    fs::remove(cache_path());
    Proc p1(cmd(cache_path(), "conc1")), p2(cmd(cache_path(), "conc2"));
    Fields a = p1.wait(), b = p2.wait();
    ASSERT_EQ(a["status"], "0") << a["out"];
    ASSERT_EQ(b["status"], "0") << b["out"];
    expect_correct("conc1");
    expect_correct("conc2");
    Fields c = run(cache_path(), "conc3");
    ASSERT_EQ(c["status"], "0") << c["out"];
    EXPECT_EQ(c["built"], "0") << c["out"];
    expect_correct("conc3");
}

TEST_F(YoloCache, UnwritableFolderIsAnIoError) {
    Fields f = run(work_ + "/no/such/folder/yolo.oswc", "unwritable");
    EXPECT_EQ(f["status"], "1");
    EXPECT_NE(f["out"].find("ONNXSTREAM_ERR_IO"), std::string::npos) << f["out"];
    EXPECT_NE(f["out"].find("no/such/folder"), std::string::npos) << f["out"];
}

// --- float16 weights: widening, and a content change -------------------------------------------------

class F16Cache : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/onnxstream_cache_f16_XXXXXX";
        dir_ = mkdtemp(tmpl);
        text_ = "conv:Conv*input:x(1,4,5,5);w_nchw.bin(float16:6,4,3,3);b.bin(float16:6)*output:y(1,6,5,5)"
                "*dilations:1,1;group:1;kernel_shape:3,3;pads:1,1,1,1;strides:1,1\n"
                "gemm:Gemm*input:a(2,8);gb.bin(float16:8,3);gc.bin(float16:3)*output:g(2,3)\n"
                "mm:MatMul*input:a(2,8);mb.bin(float16:8,3)*output:m(2,3)\n";
        write_all(dir_ + "/model.txt", text_.data(), text_.size());
        write_weight("w_nchw.bin", 6 * 4 * 9, 1);
        write_weight("b.bin", 6, 2);
        write_weight("gb.bin", 24, 3);
        write_weight("gc.bin", 3, 4);
        write_weight("mb.bin", 24, 5);
    }
    void TearDown() override { fs::remove_all(dir_); }

    void write_weight(const std::string &name, size_t n, int seed) {
        std::vector<uint16_t> h(n);
        for (size_t i = 0; i < n; ++i) h[i] = float_to_half(std::sin(float(i * 7 + seed * 13)) * 0.5f);
        write_all(dir_ + "/" + name, h.data(), h.size() * 2);
    }

    // Outputs of one run, with or without the cache.
    std::vector<std::string> run(bool cached, const WeightCacheStats **stats = nullptr,
                                 std::unique_ptr<Model> *keep = nullptr) {
        ModelOptions o;
        o.threads = 1;
        o.provider = ONNXSTREAM_PROVIDER_NOCACHE;
        auto model = std::make_unique<Model>(o);
        model->load_file(dir_);
        if (cached) {
            auto p = make_weight_cache_provider(make_nocache_provider(), dir_ + "/c.oswc", model->graph(),
                                                read_all(dir_ + "/model.txt"), dir_);
            if (stats) *stats = &p->stats();
            model->set_provider(std::move(p));
        }
        std::vector<float> x(100), a(16);
        for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(float(i));
        for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(float(i) * 0.3f);
        model->push_input("x", DType::F32, {1, 4, 5, 5}, x.data(), x.size() * 4);
        model->push_input("a", DType::F32, {2, 8}, a.data(), a.size() * 4);
        model->run(nullptr);
        std::vector<std::string> outs;
        for (const Tensor &t : model->outputs()) outs.emplace_back(static_cast<const char *>(t.raw()), t.byte_size());
        if (keep) *keep = std::move(model);
        return outs;
    }

    std::string dir_, text_;
};

TEST_F(F16Cache, WidensOnlyWhereEveryConsumerWidens) {
    auto plain = run(false);
    const WeightCacheStats *st = nullptr;
    std::unique_ptr<Model> keep;
    auto cached = run(true, &st, &keep);
    EXPECT_TRUE(st->built);
    EXPECT_EQ(st->entries, 5u);
    EXPECT_EQ(st->widened, 5u); // conv W and B, Gemm B and C, MatMul's B
    ASSERT_EQ(plain.size(), cached.size());
    for (size_t k = 0; k < plain.size(); ++k) EXPECT_TRUE(plain[k] == cached[k]) << "output " << k;

    // What the cache hands out: padded, prepared, zero-copy.
    auto provider = make_weight_cache_provider(make_nocache_provider(), dir_ + "/c.oswc", keep->graph(),
                                               text_, dir_);
    EXPECT_FALSE(provider->stats().built);
    Allocator alloc;
    const Node &conv = keep->graph().nodes()[0];
    Tensor w = provider->fetch(conv.inputs[1].weight, alloc);
    EXPECT_EQ(w.dtype(), DType::F32);
    EXPECT_EQ(w.layout(), Layout::OHWI);
    EXPECT_TRUE(w.storage()->padded());
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w.raw()) % 64, 0u);
    EXPECT_EQ(alloc.current_bytes(), 0u); // served from the mapping, nothing allocated
    // OIHW float16 file -> OHWI float32: element (o=1, i=2, h=0, w=1).
    std::string file = read_all(dir_ + "/w_nchw.bin");
    uint16_t h;
    std::memcpy(&h, file.data() + 2 * (((1 * 4 + 2) * 3 + 0) * 3 + 1), 2);
    EXPECT_EQ(w.data<float>()[((1 * 3 + 0) * 3 + 1) * 4 + 2], half_to_float(h));
    Tensor mb = provider->fetch(keep->graph().nodes()[2].inputs[1].weight, alloc);
    EXPECT_EQ(mb.dtype(), DType::F32);

    // Row chunks (streamed weights) come from the same mapping: output channels 2..4 of the kernel.
    Tensor rows = provider->fetch_rows(conv.inputs[1].weight, 2, 4, alloc);
    EXPECT_EQ(rows.shape(), (Shape{2, 4, 3, 3}));
    EXPECT_EQ(rows.dtype(), DType::F32);
    EXPECT_EQ(rows.layout(), Layout::OHWI);
    EXPECT_TRUE(rows.storage()->padded());
    EXPECT_EQ(std::memcmp(rows.raw(), w.data<float>() + 2 * 36, 2 * 36 * sizeof(float)), 0);
    EXPECT_EQ(alloc.current_bytes(), 0u);
    EXPECT_THROW(provider->fetch_rows(conv.inputs[1].weight, 5, 7, alloc), Error);
    // A reference the cache does not hold (another layout) goes to the inner provider.
    WeightSpec other = conv.inputs[1].weight;
    other.wanted = Layout::Plain;
    Tensor passed = provider->fetch(other, alloc);
    EXPECT_EQ(passed.dtype(), DType::F16);
    EXPECT_EQ(passed.layout(), Layout::Plain);
    EXPECT_EQ(provider->stats().passed.load(), 1u);
}

TEST_F(F16Cache, KeepPagesMappedServesTheSame) {
    run(true); // build
    ModelOptions o;
    Model model(o);
    model.load_file(dir_);
    Allocator alloc;
    WeightCacheOptions keep, drop, keep_small;
    keep.keep_pages_mapped = true;
    keep_small.kept_small_weight_bytes = 64;
    auto a = make_weight_cache_provider(make_nocache_provider(), dir_ + "/c.oswc", model.graph(), text_, dir_, keep);
    auto b = make_weight_cache_provider(make_nocache_provider(), dir_ + "/c.oswc", model.graph(), text_, dir_, drop);
    auto c = make_weight_cache_provider(make_nocache_provider(), dir_ + "/c.oswc", model.graph(), text_, dir_,
                                        keep_small);
    size_t small = 0, big = 0;
    for (const Node &node : model.graph().nodes())
        for (const NodeInput &in : node.inputs) {
            if (in.kind != NodeInput::Weight) continue;
            Tensor x = a->fetch(in.weight, alloc), y = b->fetch(in.weight, alloc);
            ASSERT_EQ(x.byte_size(), y.byte_size());
            EXPECT_EQ(std::memcmp(x.raw(), y.raw(), x.byte_size()), 0);
            // Released and fetched again (pages dropped from the mapping in b): same bytes.
            std::string before(static_cast<const char *>(y.raw()), y.byte_size());
            y = Tensor();
            Tensor z = b->fetch(in.weight, alloc);
            EXPECT_EQ(std::string(static_cast<const char *>(z.raw()), z.byte_size()), before);
            // Small weights keep their pages, bigger ones drop them, in c: the same bytes on every fetch.
            (x.byte_size() <= keep_small.kept_small_weight_bytes ? small : big) += 1;
            for (int again = 0; again < 2; ++again) {
                Tensor s = c->fetch(in.weight, alloc);
                EXPECT_EQ(std::string(static_cast<const char *>(s.raw()), s.byte_size()), before);
            }
        }
    EXPECT_GT(small, 0u);
    EXPECT_GT(big, 0u);
}

TEST_F(F16Cache, ChangedContentRebuildsAndIsServed) {
    const WeightCacheStats *st = nullptr;
    run(true, &st);
    write_weight("gb.bin", 24, 42); // same size, new bytes and mtime
    auto plain = run(false);
    std::unique_ptr<Model> keep;
    auto cached = run(true, &st, &keep);
    EXPECT_TRUE(st->built);
    EXPECT_NE(st->rebuild_reason.find("gb.bin"), std::string::npos) << st->rebuild_reason;
    for (size_t k = 0; k < plain.size(); ++k) EXPECT_TRUE(plain[k] == cached[k]) << "output " << k;
}

TEST_F(F16Cache, ChangedModelTextRebuilds) {
    const WeightCacheStats *st = nullptr;
    std::unique_ptr<Model> keep;
    run(true, &st, &keep);
    EXPECT_TRUE(st->built);
    run(true, &st, &keep);
    EXPECT_FALSE(st->built);
    std::string text = text_ + "\n";
    write_all(dir_ + "/model.txt", text.data(), text.size());
    run(true, &st, &keep);
    EXPECT_TRUE(st->built);
    EXPECT_EQ(st->rebuild_reason, "model.txt changed");
}

TEST_F(F16Cache, NeedsAFolder) {
    ModelOptions o;
    Model model(o);
    model.load_file(dir_);
    try {
        make_weight_cache_provider(make_nocache_provider(), dir_ + "/c.oswc", model.graph(), text_, "");
        FAIL() << "expected an error";
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), ONNXSTREAM_ERR_INVALID_ARGUMENT);
    }
}

} // namespace
