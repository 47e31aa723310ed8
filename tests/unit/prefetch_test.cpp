// The prefetch provider: serves the planned weights in order from its reader thread, keeps the
// read-ahead within its budget, falls back to a direct read for requests out of order, and turns a
// read error into IO for the fetch that needed it while the run still ends cleanly.
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"
#include "weights/provider.h"

using namespace onnxstream;
using onnxstream::test::expect_error;
using onnxstream::test::TempDir;
using onnxstream::test::write_floats;

namespace {

constexpr size_t kFloats = 256; // 1 KiB per weight
constexpr size_t kBytes = kFloats * sizeof(float);

WeightSpec spec_of(int k) {
    WeightSpec s;
    s.file = "w" + std::to_string(k) + ".bin";
    s.shape = {static_cast<int64_t>(kFloats)};
    return s;
}

void write_weight(const TempDir &dir, int k) {
    write_floats(dir.file(spec_of(k).file), std::vector<float>(kFloats, static_cast<float>(k)));
}

// Poll until pred() holds (the reader thread works asynchronously); generous for loaded CI machines.
template <typename Pred> bool eventually(Pred pred) {
    for (int i = 0; i < 10000; ++i) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return pred();
}

void expect_weight(const Tensor &t, int k) {
    ASSERT_EQ(t.numel(), static_cast<int64_t>(kFloats));
    EXPECT_EQ(t.data<float>()[0], static_cast<float>(k));
    EXPECT_EQ(t.data<float>()[kFloats - 1], static_cast<float>(k));
}

class Prefetch : public ::testing::Test {
protected:
    void SetUp() override {
        for (int k = 0; k < 8; ++k) {
            write_weight(dir, k);
            order.push_back(spec_of(k));
        }
    }
    TempDir dir;
    std::vector<WeightSpec> order;
    Allocator alloc;
};

} // namespace

TEST_F(Prefetch, ServesTheRightTensorsInOrder) {
    auto p = make_prefetch_provider(4 * kBytes);
    p->set_folder(dir.path());
    for (int run = 0; run < 3; ++run) {
        p->begin_run(order, alloc);
        for (int k = 0; k < 8; ++k) expect_weight(p->fetch(spec_of(k), alloc), k);
        p->end_run();
        EXPECT_EQ(alloc.current_bytes(), 0u) << "nothing read ahead survives the run";
    }
}

TEST_F(Prefetch, RepeatedWeightsInTheOrder) {
    std::vector<WeightSpec> rep = {spec_of(1), spec_of(1), spec_of(2), spec_of(1)};
    auto p = make_prefetch_provider(kBytes);
    p->set_folder(dir.path());
    p->begin_run(rep, alloc);
    for (const auto &s : rep) expect_weight(p->fetch(s, alloc), s.file == "w1.bin" ? 1 : 2);
    p->end_run();
}

TEST_F(Prefetch, BudgetIsRespected) {
    // 3.5 weights of budget: the reader holds 3 weights ready and no more.
    auto p = make_prefetch_provider(3 * kBytes + kBytes / 2);
    p->set_folder(dir.path());
    p->begin_run(order, alloc);
    EXPECT_TRUE(eventually([&] { return alloc.current_bytes() == 3 * kBytes; })) << alloc.current_bytes();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(alloc.current_bytes(), 3 * kBytes) << "read past the budget";
    EXPECT_EQ(alloc.peak_bytes(), 3 * kBytes);
    {
        Tensor w0 = p->fetch(spec_of(0), alloc);
        expect_weight(w0, 0);
        // Taking one frees budget for exactly one more read; the held weight is the consumer's.
        EXPECT_TRUE(eventually([&] { return alloc.current_bytes() == 4 * kBytes; })) << alloc.current_bytes();
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        EXPECT_EQ(alloc.current_bytes(), 4 * kBytes);
    }
    for (int k = 1; k < 8; ++k) expect_weight(p->fetch(spec_of(k), alloc), k);
    p->end_run();
    EXPECT_LE(alloc.peak_bytes(), 4 * kBytes);
}

TEST_F(Prefetch, OneWeightLargerThanTheBudgetStillStreams) {
    auto p = make_prefetch_provider(10);
    p->set_folder(dir.path());
    p->begin_run(order, alloc);
    EXPECT_TRUE(eventually([&] { return alloc.current_bytes() == kBytes; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_EQ(alloc.current_bytes(), kBytes) << "only the next weight is read when nothing fits the budget";
    for (int k = 0; k < 8; ++k) expect_weight(p->fetch(spec_of(k), alloc), k);
    p->end_run();
}

TEST_F(Prefetch, FallsBackWhenAskedOutOfOrder) {
    auto p = make_prefetch_provider(2 * kBytes);
    p->set_folder(dir.path());
    p->begin_run(order, alloc);
    expect_weight(p->fetch(spec_of(5), alloc), 5); // not next: read directly
    expect_weight(p->fetch(spec_of(0), alloc), 0); // next in the order: from the reader
    WeightSpec extra = spec_of(7);
    extra.file = "extra.bin";
    write_floats(dir.file("extra.bin"), std::vector<float>(kFloats, 42.0f));
    EXPECT_EQ(p->fetch(extra, alloc).data<float>()[0], 42.0f); // not planned at all
    for (int k = 1; k < 8; ++k) expect_weight(p->fetch(spec_of(k), alloc), k);
    p->end_run();
    // Outside a run (shape inference loads constants before begin_run) fetch reads directly.
    expect_weight(p->fetch(spec_of(3), alloc), 3);
}

TEST_F(Prefetch, SameFileInAnotherLayoutIsNotTheSameRequest) {
    auto p = make_prefetch_provider(8 * kBytes);
    p->set_folder(dir.path());
    std::vector<WeightSpec> o = {spec_of(0)};
    p->begin_run(o, alloc);
    // Same file, other wanted layout: must not be served the planned tensor. (1-D specs can't be
    // transposed, so the fallback read returns the plain data.)
    WeightSpec other = spec_of(0);
    other.wanted = Layout::OHWI;
    EXPECT_TRUE(eventually([&] { return alloc.current_bytes() == kBytes; }));
    Tensor t = p->fetch(spec_of(0), alloc);
    expect_weight(t, 0);
    p->end_run();
}

TEST_F(Prefetch, ReadErrorBecomesIoAndTheRunEndsCleanly) {
    // A zero budget reads one weight at a time: w1 is only read after w0 is taken, so it can be
    // broken between begin_run and that point.
    auto p = make_prefetch_provider(0);
    p->set_folder(dir.path());
    for (int k = 0; k < 8; ++k) p->validate(spec_of(k));
    p->begin_run(order, alloc);
    write_floats(dir.file("w1.bin"), std::vector<float>(kFloats - 1, 1.0f)); // truncated after validation
    expect_weight(p->fetch(spec_of(0), alloc), 0);
    std::string msg = expect_error(ONNXSTREAM_ERR_IO, [&] { p->fetch(spec_of(1), alloc); });
    EXPECT_CONTAINS(msg, "w1.bin");
    // The executor stops here and ends the run; that must not hang or leak the read-ahead.
    p->end_run();
    EXPECT_TRUE(eventually([&] { return alloc.current_bytes() == 0; })) << alloc.current_bytes();

    // Reusable: the next run works once the file is fixed.
    write_weight(dir, 1);
    p->begin_run(order, alloc);
    for (int k = 0; k < 8; ++k) expect_weight(p->fetch(spec_of(k), alloc), k);
    p->end_run();
}

TEST_F(Prefetch, ErrorIsReportedForTheRightWeightEvenWhenLaterWeightsAreFine) {
    auto p = make_prefetch_provider(8 * kBytes);
    p->set_folder(dir.path());
    ::remove(dir.file("w3.bin").c_str());
    p->begin_run(order, alloc);
    for (int k = 0; k < 3; ++k) expect_weight(p->fetch(spec_of(k), alloc), k);
    std::string msg = expect_error(ONNXSTREAM_ERR_IO, [&] { p->fetch(spec_of(3), alloc); });
    EXPECT_CONTAINS(msg, "w3.bin");
    expect_weight(p->fetch(spec_of(4), alloc), 4);
    p->end_run();
}

TEST_F(Prefetch, EndRunWithoutFetchingAnythingAndDestroyMidRun) {
    auto p = make_prefetch_provider(8 * kBytes);
    p->set_folder(dir.path());
    p->begin_run(order, alloc);
    p->end_run();
    EXPECT_EQ(alloc.current_bytes(), 0u);
    p->begin_run(order, alloc);
    expect_weight(p->fetch(spec_of(0), alloc), 0);
    p.reset(); // destroyed while active: joins its thread and frees what it read
    EXPECT_EQ(alloc.current_bytes(), 0u);
}
