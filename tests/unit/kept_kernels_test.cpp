// KeptKernels: the first run only measures; the choice after it keeps the ops that save the most
// preparation time per byte, within the budget, and only those saving enough per byte (absolutely and
// against the model's run) and a large enough share of their own time.
#include <gtest/gtest.h>

#include "exec/kept_kernels.h"

using namespace onnxstream;

namespace {
constexpr uint64_t MiB = 1u << 20;
constexpr uint64_t us = 1000; // in ns
constexpr uint64_t kRun = 20000 * us; // a 20 ms run: 0.1 % of it per MiB is 20 us, below the 25 us floor

std::vector<size_t> kept_nodes(const KeptKernels &k) {
    std::vector<size_t> nodes;
    for (size_t i = 0; i < k.nodes(); ++i)
        if (k.chosen(i)) nodes.push_back(i);
    return nodes;
}
} // namespace

TEST(KeptKernels, MeasuresFirstThenChoosesBestTimePerByteWithinTheBudget) {
    KeptKernels k(10 * MiB);
    k.reset(5);
    for (size_t i = 0; i < 5; ++i) {
        EXPECT_TRUE(k.offered(i));
        EXPECT_TRUE(k.measuring(i));
    }
    k.measured(0, true, 8 * MiB, 800 * us, 3000 * us);  // 100 us per MiB
    k.measured(1, true, 2 * MiB, 400 * us, 2000 * us);  // 200 us per MiB
    k.measured(2, true, 4 * MiB, 600 * us, 3000 * us);  // 150 us per MiB
    k.measured(3, false, 0, 50 * us, 100 * us);         // kept nothing: never chosen
    k.measured(4, true, 1 * MiB, 10 * us, 100 * us);    // 10 us per MiB: too little per byte
    EXPECT_FALSE(k.measuring(0));
    EXPECT_TRUE(k.choose(kRun).empty()); // nothing was kept during the measuring run
    // Best first: node 1 (2 MiB), node 2 (4 MiB); node 0 (8 MiB) no longer fits in 10 MiB.
    EXPECT_EQ(kept_nodes(k), (std::vector<size_t>{1, 2}));
    EXPECT_EQ(k.kept(), 2u);
    EXPECT_EQ(k.bytes(), 6 * MiB);
    EXPECT_FALSE(k.offered(0));
    EXPECT_FALSE(k.offered(3));
    EXPECT_TRUE(k.offered(1));
    EXPECT_TRUE(k.choose(kRun).empty()); // nothing new was measured: the choice stands
}

TEST(KeptKernels, PreparationMustBeASignificantShareOfTheOpsTime) {
    KeptKernels k(100 * MiB);
    k.reset(2);
    k.measured(0, true, 1 * MiB, 150 * us, 30000 * us); // 0.5 % of its run: not worth the memory
    k.measured(1, true, 1 * MiB, 150 * us, 1000 * us);  // 15 %
    k.choose(kRun);
    EXPECT_EQ(kept_nodes(k), (std::vector<size_t>{1}));
}

TEST(KeptKernels, ALaterMeasurementCanTakeAPlaceFromAWorseOne) {
    KeptKernels k(4 * MiB);
    k.reset(3);
    k.measured(0, true, 3 * MiB, 300 * us, 1000 * us); // 100 us per MiB
    k.choose(kRun);
    EXPECT_EQ(kept_nodes(k), (std::vector<size_t>{0}));
    // Node 2 is reached only in a later run (a branch): better per byte, it takes node 0's place, whose
    // kernels must be dropped now.
    EXPECT_TRUE(k.measuring(2));
    k.measured(2, true, 2 * MiB, 1000 * us, 2000 * us);
    EXPECT_EQ(k.choose(kRun), (std::vector<size_t>{0}));
    EXPECT_EQ(kept_nodes(k), (std::vector<size_t>{2}));
    EXPECT_EQ(k.bytes(), 2 * MiB);
}

TEST(KeptKernels, EachMiBKeptMustSaveATenthOfAPercentOfTheRun) {
    KeptKernels k(100 * MiB);
    k.reset(2);
    k.measured(0, true, 4 * MiB, 1200 * us, 30000 * us); // 300 us per MiB, 4 % of its op
    k.measured(1, true, 4096, 80 * us, 200 * us);        // a page: 20 ms per MiB
    // A 5.5 s run: each MiB must save 5.5 ms; node 0's 4 MiB would save 0.02 % of the run.
    k.choose(5500000 * us);
    EXPECT_EQ(kept_nodes(k), (std::vector<size_t>{1}));
    // The same measurements in a 30 ms run: both are worth their memory.
    k.reset(2);
    k.measured(0, true, 4 * MiB, 1200 * us, 30000 * us);
    k.measured(1, true, 4096, 80 * us, 200 * us);
    k.choose(30000 * us);
    EXPECT_EQ(kept_nodes(k), (std::vector<size_t>{0, 1}));
}

TEST(KeptKernels, ResetForgetsEverything) {
    KeptKernels k(4 * MiB);
    k.reset(1);
    k.measured(0, true, 1 * MiB, 500 * us, 1000 * us);
    k.choose(kRun);
    EXPECT_EQ(k.kept(), 1u);
    k.reset(2);
    EXPECT_EQ(k.kept(), 0u);
    EXPECT_EQ(k.bytes(), 0u);
    EXPECT_TRUE(k.measuring(0));
    EXPECT_TRUE(k.measuring(1));
    EXPECT_FALSE(k.offered(2)); // no such node
}
