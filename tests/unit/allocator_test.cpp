// Tracked tensor memory: current/peak accounting, alignment and padding, borrowed storage.
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>

#include <gtest/gtest.h>

#include <string>

#include "tensor/allocator.h"
#include "tensor/tensor.h"
#include "test_util.h"

using namespace onnxstream;

TEST(Allocator, CurrentAndPeak) {
    Allocator alloc;
    EXPECT_EQ(alloc.current_bytes(), 0u);
    EXPECT_EQ(alloc.peak_bytes(), 0u);
    auto a = alloc.allocate(100);
    EXPECT_EQ(alloc.current_bytes(), 100u) << "padding and alignment are not counted";
    EXPECT_EQ(alloc.peak_bytes(), 100u);
    auto b = alloc.allocate(50);
    EXPECT_EQ(alloc.current_bytes(), 150u);
    EXPECT_EQ(alloc.peak_bytes(), 150u);
    a.reset();
    EXPECT_EQ(alloc.current_bytes(), 50u);
    EXPECT_EQ(alloc.peak_bytes(), 150u);
    alloc.reset_peak();
    EXPECT_EQ(alloc.peak_bytes(), 50u);
    auto c = alloc.allocate(20);
    EXPECT_EQ(alloc.peak_bytes(), 70u);
    b.reset();
    c.reset();
    EXPECT_EQ(alloc.current_bytes(), 0u);
    EXPECT_EQ(alloc.peak_bytes(), 70u);
    auto z = alloc.allocate(0);
    EXPECT_NE(z->data(), nullptr) << "zero-byte tensors still get a valid (padded) pointer";
    EXPECT_EQ(alloc.current_bytes(), 0u);
}

TEST(Allocator, StorageOutlivesTheAllocatorObject) {
    std::shared_ptr<Storage> s;
    {
        Allocator alloc;
        s = alloc.allocate(64);
    }
    std::memset(s->data(), 0, 64);
    s.reset(); // must not touch a freed counter
}

TEST(Allocator, AlignedAndPadded) {
    Allocator alloc;
    for (size_t n : {1u, 3u, 63u, 64u, 65u, 1000u}) {
        auto s = alloc.allocate(n);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % kTensorAlignment, 0u) << n;
        EXPECT_TRUE(s->padded());
        EXPECT_EQ(s->bytes(), n);
        // The padding is readable and writable.
        std::memset(s->data(), 0xAB, n + kTensorPadding);
    }
}

TEST(Allocator, BorrowedStorageIsNotCountedAndReleasedOnce) {
    Allocator alloc;
    int released = 0;
    float host[4] = {1, 2, 3, 4};
    {
        auto s = borrow_storage(host, sizeof(host), [&] { ++released; });
        EXPECT_FALSE(s->padded());
        EXPECT_EQ(s->data(), static_cast<void *>(host));
        Tensor t(DType::F32, {2, 2}, s);
        Tensor view = t.reshaped({4});
        s.reset();
        t = Tensor();
        EXPECT_EQ(released, 0) << "the reshaped view still holds the storage";
        EXPECT_EQ(view.data<float>()[3], 4.0f);
    }
    EXPECT_EQ(released, 1);
    EXPECT_EQ(alloc.current_bytes(), 0u);
}

// Mapped pages are dropped when the storage goes, after which it is released; pages nobody touched are
// not dropped (Storage::mark_pages_untouched), but the storage is still released.
TEST(Allocator, MappedPagesDroppedUnlessUntouched) {
    float host[4] = {1, 2, 3, 4};
    std::string order;
    auto make = [&] {
        return std::make_shared<Storage>(host, sizeof host, false, [&] { order += "release;"; },
                                         [&] { order += "drop;"; });
    };
    make().reset();
    EXPECT_EQ(order, "drop;release;");
    order.clear();
    {
        auto s = make();
        s->mark_pages_untouched();
    }
    EXPECT_EQ(order, "release;");
}

TEST(Allocator, TensorsShareStorageAndCountOnce) {
    Allocator alloc;
    Tensor t = make_tensor(alloc, DType::F16, {3, 5});
    EXPECT_EQ(t.byte_size(), 30u);
    EXPECT_EQ(alloc.current_bytes(), 30u);
    Tensor copy = t;
    Tensor view = t.reshaped({15});
    EXPECT_EQ(alloc.current_bytes(), 30u);
    EXPECT_EQ(view.raw(), t.raw());
    t = Tensor();
    copy = Tensor();
    EXPECT_EQ(alloc.current_bytes(), 30u);
    view = Tensor();
    EXPECT_EQ(alloc.current_bytes(), 0u);
    EXPECT_EQ(alloc.peak_bytes(), 30u);
}

TEST(Allocator, ScalarAndEmptyShapes) {
    Allocator alloc;
    Tensor s = make_tensor(alloc, DType::I64, {});
    EXPECT_EQ(s.numel(), 1);
    EXPECT_EQ(s.byte_size(), 8u);
    Tensor e = make_tensor(alloc, DType::F32, {2, 0, 3});
    EXPECT_EQ(e.numel(), 0);
    EXPECT_EQ(e.byte_size(), 0u);
    EXPECT_EQ(alloc.current_bytes(), 8u);
    EXPECT_EQ(shape_str({1, 3, 640, 640}), "(1,3,640,640)");
    EXPECT_EQ(shape_str({}), "()");
}

TEST(Allocator, NegativeDimensionIsAnError) {
    Allocator alloc;
    test::expect_error(ONNXSTREAM_ERR_INTERNAL, [&] { make_tensor(alloc, DType::F32, {2, -1}); });
    EXPECT_EQ(alloc.current_bytes(), 0u);
}

TEST(Allocator, HugeAllocationIsOutOfMemory) {
    Allocator alloc;
    // 2^62 bytes on 64-bit builds (the system refuses the mapping); 3 GiB on 32-bit ones, where 2^62 does not
    // fit a size_t and a 2^30-ish request could succeed (refused before asking: over half the address space).
    const size_t huge = sizeof(size_t) == 8 ? static_cast<size_t>(uint64_t{1} << 62)
                                            : std::numeric_limits<size_t>::max() / 4 * 3;
    std::string msg = test::expect_error(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] { alloc.allocate(huge); });
    EXPECT_CONTAINS(msg, "out of memory");
    EXPECT_EQ(alloc.current_bytes(), 0u);
}
