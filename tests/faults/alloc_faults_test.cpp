// Allocation fault injection on real models, each first checked against ONNX Runtime's output:
//   - gen_layout.py's yolo_block (a YOLOv8 C2f-style block, converted from ONNX here) with the prefetch
//     provider (weights read on its background thread) and every Conv weight streamed in chunks;
//   - YOLOv8n from ../shared (../shared/data/yolov8n holds ONNX Runtime's output) with the prefetch provider
//     and its biggest convolutions streamed in chunks.
// The allocations of one run are counted; then, for every k, the k-th allocation of a run fails: the run
// throws OUT_OF_MEMORY with a message naming the op, no tracked tensor memory is left behind (only the pushed
// input), and the same Model object runs again with output matching ONNX Runtime.
// Environment: ONNXSTREAM_LAYOUT_CASES (gen_layout.py's --out), ONNXSTREAM_SHARED_DIR, and
// ONNXSTREAM_FAULT_STRIDE=N to try only every N-th k of YOLOv8n's sweep (slow sanitizer builds; the small
// block's 66 allocations are always all tried).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/conversion_util.h"
#include "exec/model.h"
#include "tensor/allocator.h"
#include "util/npy.h"

using namespace onnxstream;
using onnxstream::testing::AllocationFaults;

namespace {

std::string env(const char *name) {
    const char *v = std::getenv(name);
    return v ? v : "";
}

std::vector<float> read_floats(const std::string &path) {
    std::string bytes = onnxstream::testing::read_text(path);
    std::vector<float> v(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
    return v;
}

std::vector<float> npy_floats(const std::string &path) {
    tools::NpyArray a = tools::read_npy(path);
    if (a.dtype != ONNXSTREAM_DTYPE_FLOAT32) throw std::runtime_error(path + " is not float32");
    std::vector<float> v(a.data.size() / sizeof(float));
    std::memcpy(v.data(), a.data.data(), v.size() * sizeof(float));
    return v;
}

struct Tolerance {
    double rel_l2, max_abs;
};

::testing::AssertionResult matches_ort(const Model &m, const std::vector<float> &expected, Tolerance tol) {
    if (m.outputs().size() != 1) return ::testing::AssertionFailure() << m.outputs().size() << " outputs";
    const Tensor &out = m.outputs()[0];
    if (out.dtype() != DType::F32 || static_cast<size_t>(out.numel()) != expected.size())
        return ::testing::AssertionFailure() << "output " << shape_str(out.shape());
    onnxstream::testing::Compare c = onnxstream::testing::compare(out.data<float>(), expected.data(), expected.size());
    if (c.rel_l2 <= tol.rel_l2 && c.max_abs <= tol.max_abs) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "relative L2 " << c.rel_l2 << ", max abs " << c.max_abs;
}

struct Disarm {
    ~Disarm() { AllocationFaults::fail_nth(0); }
};

// The sweep described at the top, on a loaded model with its input pushed (input_bytes of them).
uint64_t stride_from_env() {
    if (env("ONNXSTREAM_FAULT_STRIDE").empty()) return 1;
    return std::max<uint64_t>(1, std::strtoull(env("ONNXSTREAM_FAULT_STRIDE").c_str(), nullptr, 10));
}

// stride > 1 tries every stride-th allocation only (and then cannot insist on hitting every kind).
void every_allocation_fails_once(const char *label, Model &m, uint64_t input_bytes, const std::vector<float> &expected,
                                 Tolerance tol, uint64_t stride) {
    m.run({});
    ASSERT_TRUE(matches_ort(m, expected, tol)) << label << ": first run";
    const uint64_t start = AllocationFaults::allocations();
    m.run({});
    const uint64_t per_run = AllocationFaults::allocations() - start;
    ASSERT_TRUE(matches_ort(m, expected, tol)) << label << ": second run";
    ASSERT_GT(per_run, 20u);

    Disarm disarm;
    uint64_t tried = 0, in_weights = 0, in_outputs = 0, elsewhere = 0;
    for (uint64_t k = 1; k <= per_run; k += stride) {
        const uint64_t injected = AllocationFaults::injected();
        AllocationFaults::fail_nth(k);
        std::string msg;
        try {
            m.run({});
            ADD_FAILURE() << label << ": the run with allocation " << k << " failing succeeded";
        } catch (const Error &e) {
            EXPECT_EQ(e.status(), ONNXSTREAM_ERR_OUT_OF_MEMORY) << label << " k = " << k << ": " << e.what();
            msg = e.what();
        }
        AllocationFaults::fail_nth(0);
        ASSERT_EQ(AllocationFaults::injected() - injected, 1u) << label << " k = " << k;
        EXPECT_NE(msg.find("injected"), std::string::npos) << label << " k = " << k << ": " << msg;
        EXPECT_NE(msg.find("model.txt:"), std::string::npos) << label << " k = " << k << ": names no op: " << msg;
        if (msg.find("weight '") != std::string::npos) ++in_weights;
        else if (msg.find(": output ") != std::string::npos) ++in_outputs;
        else ++elsewhere;
        EXPECT_TRUE(m.outputs().empty());
        EXPECT_EQ(m.allocator().current_bytes(), input_bytes) << label << " k = " << k << ": tensors left after " << msg;
        m.run({});
        ASSERT_TRUE(matches_ort(m, expected, tol)) << label << ": after failing allocation " << k << " of " << per_run;
        ++tried;
    }
    std::printf("%s: %llu allocations per run, %llu faults injected (%llu fetching weights, %llu op outputs, "
                "%llu scratch/chunks/layout copies)\n",
                label, static_cast<unsigned long long>(per_run), static_cast<unsigned long long>(tried),
                static_cast<unsigned long long>(in_weights), static_cast<unsigned long long>(in_outputs),
                static_cast<unsigned long long>(elsewhere));
    if (stride == 1) {
        EXPECT_GT(in_weights, 0u);
        EXPECT_GT(in_outputs, 0u);
    }
}

} // namespace

namespace {
// Run fn, expect Error(OUT_OF_MEMORY), return its message.
template <typename Fn> std::string expect_oom(Status status, Fn &&fn) {
    try {
        fn();
    } catch (const Error &e) {
        EXPECT_EQ(e.status(), status) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "no error thrown";
    return "";
}
} // namespace

TEST(AllocationFaults, CountsAndFailsTheKthAllocation) {
    Allocator alloc;
    uint64_t before = AllocationFaults::allocations(), injected = AllocationFaults::injected();
    Disarm disarm;
    AllocationFaults::fail_nth(3);
    auto a = alloc.allocate(10);
    auto b = alloc.allocate(2 << 20); // a direct mapping
    std::string msg = expect_oom(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] { alloc.allocate(100); });
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
    std::string msg = expect_oom(ONNXSTREAM_ERR_OUT_OF_MEMORY, [&] { alloc.allocate(1536 << 10); });
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

TEST(AllocationFaults, EveryAllocationOfYoloBlock) {
    const std::string cases = env("ONNXSTREAM_LAYOUT_CASES");
    if (cases.empty()) GTEST_SKIP() << "ONNXSTREAM_LAYOUT_CASES is not set";
    const std::string dir = cases + "/models/yolo_block";
    onnxstream::testing::Scratch scratch("onnxstream-faults-test");
    onnxstream::testing::Conversion c = onnxstream::testing::convert(dir + "/model.onnx", scratch.out());
    ASSERT_EQ(c.status, ONNXSTREAM_OK) << c.message;
    const std::vector<float> input = npy_floats(dir + "/input_0.npy");
    const std::vector<float> expected = npy_floats(dir + "/expected_0.npy");
    ASSERT_EQ(input.size(), 8u * 10 * 12);

    ModelOptions options;
    options.threads = 1;
    options.provider = ONNXSTREAM_PROVIDER_PREFETCH;
    options.prefetch_bytes = 1024;
    options.run.weight_chunk_bytes = 256; // every Conv weight of more than 256 bytes streams in chunks
    Model m(options);
    m.load_file(scratch.out());
    m.push_input("x", DType::F32, {1, 8, 10, 12}, input.data(), input.size() * sizeof(float));
    every_allocation_fails_once("yolo_block", m, input.size() * sizeof(float), expected, {1e-5, 1e-4}, 1);
}

TEST(AllocationFaults, EveryAllocationOfYoloV8n) {
    const std::string shared = env("ONNXSTREAM_SHARED_DIR");
    if (shared.empty()) GTEST_SKIP() << "ONNXSTREAM_SHARED_DIR is not set";
    const std::vector<float> input = read_floats(shared + "/data/yolov8n/input_images_1x3x640x640_f32.bin");
    const std::vector<float> expected = read_floats(shared + "/data/yolov8n/expected_output0_1x84x8400_f32.bin");
    ASSERT_EQ(input.size(), 3u * 640 * 640);
    ASSERT_EQ(expected.size(), 84u * 8400);

    ModelOptions options;
    options.threads = 2;
    options.provider = ONNXSTREAM_PROVIDER_PREFETCH;
    options.prefetch_bytes = 1 << 20;
    options.run.weight_chunk_bytes = 256 << 10; // the biggest convolutions stream in chunks
    Model m(options);
    m.load_file(shared + "/models/yolov8n");
    m.push_input("images", DType::F32, {1, 3, 640, 640}, input.data(), input.size() * sizeof(float));
    // The e2e suite's criterion against ONNX Runtime.
    every_allocation_fails_once("YOLOv8n", m, input.size() * sizeof(float), expected, {1e-4, 1e-2},
                                stride_from_env());
}
