// The mapping cache: freed big mappings are reused when the size fits, the idle bytes stay within the
// budget (oldest unmapped first), and a zero budget unmaps at once.
#include <cstring>

#include <gtest/gtest.h>

#include "tensor/mapping_cache.h"

using namespace onnxstream;

namespace {
constexpr size_t MiB = 1u << 20;

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
    // Slightly smaller still fits (within 1/8); the pages come back as they were left.
    Mapping again = map_pages(4 * MiB - 100000);
    EXPECT_EQ(again.base, m.base);
    EXPECT_EQ(again.bytes, 4 * MiB);
    EXPECT_EQ(static_cast<unsigned char *>(again.base)[4 * MiB - 1], 0x5A);
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
    unmap_pages(again);
}

TEST_F(MappingCache, MuchSmallerRequestGetsAFreshMapping) {
    set_mapping_cache_budget(16 * MiB);
    Mapping big = map_pages(8 * MiB);
    unmap_pages(big);
    Mapping small = map_pages(2 * MiB); // would waste 6 MiB of the cached one
    EXPECT_NE(small.base, big.base);
    EXPECT_EQ(mapping_cache_idle_bytes(), 8 * MiB);
    unmap_pages(small);
}

TEST_F(MappingCache, IdleBytesStayWithinTheBudgetOldestFirst) {
    set_mapping_cache_budget(6 * MiB);
    Mapping a = map_pages(3 * MiB), b = map_pages(3 * MiB), c = map_pages(3 * MiB);
    unmap_pages(a);
    unmap_pages(b);
    unmap_pages(c); // a goes
    EXPECT_EQ(mapping_cache_idle_bytes(), 6 * MiB);
    Mapping x = map_pages(3 * MiB), y = map_pages(3 * MiB);
    EXPECT_EQ(x.base, c.base); // newest first
    EXPECT_EQ(y.base, b.base);
    Mapping over = map_pages(7 * MiB); // bigger than the budget: never cached
    unmap_pages(over);
    EXPECT_EQ(mapping_cache_idle_bytes(), 0u);
    unmap_pages(x);
    unmap_pages(y);
    set_mapping_cache_budget(3 * MiB); // lowering the budget trims at once
    EXPECT_EQ(mapping_cache_idle_bytes(), 3 * MiB);
}
