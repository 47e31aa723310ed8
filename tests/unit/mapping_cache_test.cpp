// The mapping cache: freed big mappings are reused by best fit (a bigger one split, its tail kept idle),
// freed neighbours are joined again, the idle bytes stay within the budget (whole mappings unmapped, oldest
// first), a zero budget unmaps at once, and a model's run may keep its pages for its next one.
#include <cstring>

#include <gtest/gtest.h>
#include <unistd.h>

#include "tensor/mapping_cache.h"

using namespace onnxstream;

namespace {
constexpr size_t MiB = 1u << 20;

size_t page() { return static_cast<size_t>(::sysconf(_SC_PAGESIZE)); }

// Each test starts and ends with an empty cache.
struct MappingCache : ::testing::Test {
    void SetUp() override { set_mapping_cache_budget(0); }
    void TearDown() override { set_mapping_cache_budget(0); }
};
} // namespace

TEST_F(MappingCache, ZeroBudgetUnmapsAtOnce) {
    Mapping m = map_pages(2 * MiB);
    ASSERT_NE(m.base, nullptr);
    EXPECT_EQ(m.bytes, 2 * MiB);
    unmap_pages(m);
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
}

TEST_F(MappingCache, FreedMappingIsReusedWithItsPages) {
    set_mapping_cache_budget(16 * MiB);
    Mapping m = map_pages(4 * MiB);
    ASSERT_NE(m.base, nullptr);
    std::memset(m.base, 0x5A, m.bytes);
    unmap_pages(m);
    EXPECT_EQ(mapping_cache_idle_bytes(), 4 * MiB);
    // A smaller request takes the front of it, pages as they were left; the rest stays idle.
    const size_t want = (4 * MiB - 100000 + page() - 1) / page() * page();
    Mapping again = map_pages(4 * MiB - 100000);
    EXPECT_EQ(again.base, m.base);
    EXPECT_EQ(again.bytes, want);
    EXPECT_EQ(static_cast<unsigned char *>(again.base)[want - 1], 0x5A);
    EXPECT_EQ(mapping_cache_idle_bytes(), 4 * MiB - want);
    unmap_pages(again); // joined with its tail again
    EXPECT_EQ(mapping_cache_idle_bytes(), 4 * MiB);
    Mapping whole = map_pages(4 * MiB);
    EXPECT_EQ(whole.base, m.base);
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
    unmap_pages(whole);
}

TEST_F(MappingCache, SmallerRequestsSplitOneMappingAndJoinBack) {
    set_mapping_cache_budget(16 * MiB);
    Mapping big = map_pages(8 * MiB);
    std::memset(big.base, 1, big.bytes);
    unmap_pages(big);
    Mapping a = map_pages(2 * MiB), b = map_pages(3 * MiB);
    EXPECT_EQ(a.base, big.base);
    EXPECT_EQ(b.base, static_cast<char *>(big.base) + 2 * MiB);
    EXPECT_EQ(mapping_cache_idle_bytes(), 3 * MiB);
    std::memset(a.base, 2, a.bytes); // the pieces are separate buffers
    std::memset(b.base, 3, b.bytes);
    EXPECT_EQ(static_cast<unsigned char *>(a.base)[a.bytes - 1], 2);
    unmap_pages(a);
    unmap_pages(b);
    EXPECT_EQ(mapping_cache_idle_bytes(), 8 * MiB);
    Mapping again = map_pages(8 * MiB);
    EXPECT_EQ(again.base, big.base);
    unmap_pages(again);
}

TEST_F(MappingCache, BestFitAmongIdleMappings) {
    set_mapping_cache_budget(32 * MiB);
    // Carved in order from one mapping; the live spacer between the two keeps them from being joined.
    unmap_pages(map_pages(9 * MiB));
    Mapping large = map_pages(5 * MiB), spacer = map_pages(1 * MiB), fitting = map_pages(3 * MiB);
    ASSERT_EQ(mapping_cache_idle_bytes(), 0u);
    unmap_pages(large);
    unmap_pages(fitting);
    Mapping got = map_pages(3 * MiB);
    EXPECT_EQ(got.base, fitting.base);
    EXPECT_EQ(mapping_cache_idle_bytes(), 5 * MiB);
    unmap_pages(got);
    unmap_pages(spacer);
}

TEST_F(MappingCache, IdleBytesStayWithinTheBudgetOldestFirst) {
    // Five neighbours carved in order from one mapping (where the system puts separate mappings is its
    // own business); the live spacers keep a, b and c from being joined, so each is evicted on its own.
    set_mapping_cache_budget(16 * MiB);
    unmap_pages(map_pages(11 * MiB));
    Mapping a = map_pages(3 * MiB), s1 = map_pages(1 * MiB), b = map_pages(3 * MiB), s2 = map_pages(1 * MiB),
            c = map_pages(3 * MiB);
    ASSERT_EQ(c.base, static_cast<char *>(a.base) + 8 * MiB);
    ASSERT_EQ(mapping_cache_idle_bytes(), 0u);
    set_mapping_cache_budget(6 * MiB);
    unmap_pages(a);
    unmap_pages(b);
    unmap_pages(c); // a goes
    EXPECT_EQ(mapping_cache_idle_bytes(), 6 * MiB);
    Mapping x = map_pages(3 * MiB), y = map_pages(3 * MiB);
    EXPECT_EQ(x.base, c.base); // newest first among equal fits
    EXPECT_EQ(y.base, b.base);
    Mapping over = map_pages(7 * MiB); // bigger than the budget: never cached
    unmap_pages(over);
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
    unmap_pages(x);
    unmap_pages(y);
    set_mapping_cache_budget(3 * MiB); // lowering the budget trims at once, whole mappings oldest first
    EXPECT_EQ(mapping_cache_idle_bytes(), 3 * MiB);
    unmap_pages(s1);
    unmap_pages(s2);
}

TEST_F(MappingCache, JoinedRangeOverTheBudgetIsUnmapped) {
    set_mapping_cache_budget(5 * MiB);
    Mapping big = map_pages(4 * MiB);
    unmap_pages(big);
    Mapping a = map_pages(2 * MiB), b = map_pages(2 * MiB); // the two halves of `big`
    ASSERT_EQ(b.base, static_cast<char *>(a.base) + 2 * MiB);
    unmap_pages(a);
    EXPECT_EQ(mapping_cache_idle_bytes(), 2 * MiB);
    unmap_pages(b); // joined: 4 MiB, within the budget
    EXPECT_EQ(mapping_cache_idle_bytes(), 4 * MiB);
    set_mapping_cache_budget(3 * MiB); // the joined range is one mapping: it goes whole
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
}

TEST_F(MappingCache, DuringARunIdlePagesMayFillUpToTheRunsHighWaterMark) {
    begin_mapping_cache_run(1 * MiB);
    Mapping a = map_pages(4 * MiB), b = map_pages(4 * MiB); // 8 MiB in use: the run's high-water mark
    static_cast<unsigned char *>(a.base)[0] = 0x33;
    unmap_pages(a); // over the 1 MiB budget, but in use + idle stays within 8 MiB: kept
    EXPECT_EQ(mapping_cache_idle_bytes(), 4 * MiB);
    Mapping c = map_pages(4 * MiB); // the next activation of that size gets a's pages, already faulted in
    EXPECT_EQ(c.base, a.base);
    EXPECT_EQ(static_cast<unsigned char *>(c.base)[0], 0x33);
    unmap_pages(b);
    unmap_pages(c);
    EXPECT_EQ(mapping_cache_idle_bytes(), 8 * MiB);
    end_mapping_cache_run(); // back to the budget: whole mappings, so nothing of 4 MiB stays
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
}

TEST_F(MappingCache, ARunsIdlePagesNeverRaiseItsPeak) {
    begin_mapping_cache_run(1 * MiB);
    Mapping a = map_pages(4 * MiB), b = map_pages(4 * MiB);
    unmap_pages(a);
    unmap_pages(b);
    ASSERT_EQ(mapping_cache_idle_bytes(), 8 * MiB);
    // 12 MiB fits no idle range (a and b need not be neighbours): new pages, and the idle ones that would
    // put in use + idle over the new high-water mark (12 MiB) go first.
    Mapping big = map_pages(12 * MiB);
    EXPECT_LE(mapping_cache_idle_bytes(), 1 * MiB);
    unmap_pages(big);
    EXPECT_EQ(mapping_cache_idle_bytes(), 12 * MiB);
    end_mapping_cache_run();
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
}

TEST_F(MappingCache, AnOwnersRunKeepsItsPagesForItsNextRun) {
    int model = 0, other = 0;
    begin_mapping_cache_run(1 * MiB, &model, /*keep_for_next_run=*/true);
    Mapping a = map_pages(4 * MiB), b = map_pages(4 * MiB);
    static_cast<unsigned char *>(a.base)[0] = 0x5a;
    unmap_pages(a);
    unmap_pages(b);
    end_mapping_cache_run(); // kept: within the run's 8 MiB high-water mark
    EXPECT_EQ(mapping_cache_idle_bytes(), 8 * MiB);

    begin_mapping_cache_run(1 * MiB, &model, true); // the same model's next run finds a's pages touched
    Mapping c = map_pages(4 * MiB);
    EXPECT_TRUE(c.base == a.base || c.base == b.base);
    if (c.base == a.base) EXPECT_EQ(static_cast<unsigned char *>(c.base)[0], 0x5a);
    unmap_pages(c);
    end_mapping_cache_run();
    EXPECT_GE(mapping_cache_idle_bytes(), 4 * MiB);

    begin_mapping_cache_run(1 * MiB, &other, true); // another model's run: back to the budget
    EXPECT_LE(mapping_cache_idle_bytes(), 1 * MiB);
    end_mapping_cache_run();
}

TEST_F(MappingCache, KeptPagesGoBackWithTheirOwner) {
    int model = 0;
    begin_mapping_cache_run(1 * MiB, &model, true);
    unmap_pages(map_pages(4 * MiB));
    end_mapping_cache_run();
    EXPECT_EQ(mapping_cache_idle_bytes(), 4 * MiB);
    release_mapping_cache_owner(&model);
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
}

TEST_F(MappingCache, RunsThatDoNotKeepTrimAtTheirEnd) {
    int model = 0, other = 0;
    begin_mapping_cache_run(1 * MiB, &model, false);
    unmap_pages(map_pages(4 * MiB));
    end_mapping_cache_run();
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
    // Two models' runs overlapping: nothing is kept for either.
    begin_mapping_cache_run(1 * MiB, &model, true);
    begin_mapping_cache_run(1 * MiB, &other, true);
    unmap_pages(map_pages(4 * MiB));
    end_mapping_cache_run();
    end_mapping_cache_run();
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
}

TEST_F(MappingCache, AZeroBudgetUnmapsAtOnceDuringARunToo) {
    begin_mapping_cache_run(0);
    Mapping a = map_pages(4 * MiB), b = map_pages(4 * MiB);
    unmap_pages(a);
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
    unmap_pages(b);
    end_mapping_cache_run();
}

TEST_F(MappingCache, MemoryToKeepTakesNewPagesNotIdleOnes) {
    set_mapping_cache_budget(16 * MiB);
    Mapping big = map_pages(8 * MiB);
    ASSERT_NE(big.base, nullptr);
    unmap_pages(big);
    ASSERT_EQ(mapping_cache_idle_bytes(), 8 * MiB);
    // A piece split off the idle 8 MiB would stay between the pieces a later 8 MiB tensor needs.
    Mapping kept = map_pages(1 * MiB, /*reuse_idle=*/false);
    ASSERT_NE(kept.base, nullptr);
    EXPECT_TRUE(static_cast<char *>(kept.base) + kept.bytes <= big.base ||
                static_cast<char *>(big.base) + big.bytes <= kept.base);
    EXPECT_EQ(mapping_cache_idle_bytes(), 8 * MiB);
    Mapping again = map_pages(8 * MiB);
    EXPECT_EQ(again.base, big.base);
    unmap_pages(again);
    unmap_pages(kept);
}
