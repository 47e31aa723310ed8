// Allocation fault injection on a real model: YOLOv8n (../shared) with the prefetch provider (weights read on
// its background thread) and big weights streamed in chunks. The first run is checked against ONNX Runtime's
// output (../shared/data/yolov8n); the allocations of one run are counted; then, for every k, the k-th
// allocation of a run fails: the run throws OUT_OF_MEMORY with a message naming the op, no tracked tensor
// memory is left behind (only the pushed input), and the same Model object runs again with output matching
// ONNX Runtime. ONNXSTREAM_FAULT_STRIDE=N tries every N-th k only (for slow sanitizer builds).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "exec/model.h"
#include "tensor/allocator.h"
#include "test_util.h"

using namespace onnxstream;
using onnxstream::testing::AllocationFaults;

namespace {

std::string shared_dir() {
    const char *dir = std::getenv("ONNXSTREAM_SHARED_DIR");
    return dir ? dir : "";
}

std::vector<float> read_floats(const std::string &path) {
    std::string bytes = test::read_file(path);
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    return v;
}

// The e2e suite's criterion against ONNX Runtime: relative L2 <= 1e-4 and max abs <= 1e-2.
::testing::AssertionResult matches_ort(const Model &m, const std::vector<float> &expected) {
    if (m.outputs().size() != 1) return ::testing::AssertionFailure() << m.outputs().size() << " outputs";
    const Tensor &out = m.outputs()[0];
    if (out.dtype() != DType::F32 || static_cast<size_t>(out.numel()) != expected.size())
        return ::testing::AssertionFailure() << "output " << shape_str(out.shape());
    const float *got = out.data<float>();
    double diff2 = 0, ref2 = 0, max_abs = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
        double d = static_cast<double>(got[i]) - expected[i];
        diff2 += d * d;
        ref2 += static_cast<double>(expected[i]) * expected[i];
        if (!(std::fabs(d) <= max_abs)) max_abs = std::isnan(d) ? INFINITY : std::fabs(d);
    }
    double rel = std::sqrt(diff2 / ref2);
    if (rel <= 1e-4 && max_abs <= 1e-2) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "relative L2 " << rel << ", max abs " << max_abs;
}

struct Disarm {
    ~Disarm() { AllocationFaults::fail_nth(0); }
};

} // namespace

TEST(AllocationFaults, CountsAndFailsTheKthAllocation) {
    Allocator alloc;
    uint64_t before = AllocationFaults::allocations(), injected = AllocationFaults::injected();
    Disarm disarm;
    AllocationFaults::fail_nth(3);
    auto a = alloc.allocate(10);
    auto b = alloc.allocate(2 << 20); // a direct mapping
    std::string msg = test::expect_error(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] { alloc.allocate(100); });
    EXPECT_NE(msg.find("injected"), std::string::npos) << msg;
    EXPECT_EQ(alloc.current_bytes(), 10u + (2u << 20)) << "a refused allocation is not counted";
    auto c = alloc.allocate(100); // disarmed after firing
    EXPECT_EQ(AllocationFaults::allocations() - before, 4u);
    EXPECT_EQ(AllocationFaults::injected() - injected, 1u);
}

TEST(AllocationFaults, LimitRefusesWithSizes) {
    Allocator alloc;
    alloc.set_limit(3 << 20);
    auto a = alloc.allocate(2 << 20);
    std::string msg = test::expect_error(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] { alloc.allocate(1536 << 10); });
    EXPECT_NE(msg.find("allocating 1.5 MiB (1572864 bytes) would exceed max_bytes 3.0 MiB (in use 2.0 MiB)"),
              std::string::npos)
        << msg;
    EXPECT_EQ(alloc.current_bytes(), 2u << 20);
    auto b = alloc.allocate(1 << 20); // exactly at the limit
    EXPECT_EQ(alloc.current_bytes(), 3u << 20);
    a.reset();
    auto c = alloc.allocate(1 << 20);
    alloc.set_limit(0);
    auto d = alloc.allocate(8 << 20);
    EXPECT_EQ(alloc.peak_bytes(), 10u << 20);
}

TEST(AllocationFaults, EveryAllocationOfAYoloV8nRun) {
    const std::string shared = shared_dir();
    if (shared.empty()) GTEST_SKIP() << "ONNXSTREAM_SHARED_DIR is not set";
    const std::vector<float> input = read_floats(shared + "/data/yolov8n/input_images_1x3x640x640_f32.bin");
    const std::vector<float> expected = read_floats(shared + "/data/yolov8n/expected_output0_1x84x8400_f32.bin");
    ASSERT_EQ(input.size(), 3u * 640 * 640);
    ASSERT_EQ(expected.size(), 84u * 8400);
    uint64_t stride = 1;
    if (const char *s = std::getenv("ONNXSTREAM_FAULT_STRIDE")) stride = std::max(1ull, std::strtoull(s, nullptr, 10));

    ModelOptions options;
    options.threads = 2;
    options.provider = ONNXSTREAM_PROVIDER_PREFETCH;
    options.prefetch_bytes = 1 << 20;
    options.run.weight_chunk_bytes = 256 << 10; // the biggest convolutions stream in chunks
    Model m(options);
    m.load_file(shared + "/models/yolov8n");
    m.push_input("images", DType::F32, {1, 3, 640, 640}, input.data(), input.size() * sizeof(float));
    const uint64_t input_bytes = input.size() * sizeof(float);
    m.run({});
    ASSERT_TRUE(matches_ort(m, expected));

    const uint64_t start = AllocationFaults::allocations();
    m.run({});
    const uint64_t per_run = AllocationFaults::allocations() - start;
    ASSERT_TRUE(matches_ort(m, expected));
    ASSERT_GT(per_run, 100u);

    Disarm disarm;
    uint64_t tried = 0, in_weights = 0, in_ops = 0;
    for (uint64_t k = 1; k <= per_run; k += stride) {
        const uint64_t injected = AllocationFaults::injected();
        AllocationFaults::fail_nth(k);
        std::string msg = test::expect_error(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] { m.run({}); });
        AllocationFaults::fail_nth(0);
        ASSERT_EQ(AllocationFaults::injected() - injected, 1u) << "k = " << k;
        EXPECT_NE(msg.find("injected"), std::string::npos) << "k = " << k << ": " << msg;
        EXPECT_NE(msg.find("model.txt:"), std::string::npos) << "k = " << k << ": the message names the op: " << msg;
        if (msg.find("weight '") != std::string::npos) ++in_weights;
        else ++in_ops;
        EXPECT_TRUE(m.outputs().empty());
        EXPECT_EQ(m.allocator().current_bytes(), input_bytes) << "k = " << k << ": tensors left after " << msg;
        m.run({});
        ASSERT_TRUE(matches_ort(m, expected)) << "after failing allocation " << k << " of " << per_run;
        ++tried;
    }
    std::printf("YOLOv8n: %llu allocations per run, %llu faults injected (%llu fetching weights, %llu in ops)\n",
                static_cast<unsigned long long>(per_run), static_cast<unsigned long long>(tried),
                static_cast<unsigned long long>(in_weights), static_cast<unsigned long long>(in_ops));
    EXPECT_GT(in_weights, 0u);
    EXPECT_GT(in_ops, 0u);
}
