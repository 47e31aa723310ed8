// Kernel library start-up, callable from outside src/xnnpack without including <xnnpack.h>.
#pragma once

#include <cstddef>
#include <cstdint>

namespace onnxstream {
// Initialise the kernel library once per process; throws Error if the CPU is unsupported.
void init_kernels();
// True when the CPU has native float16 arithmetic that XNNPACK's f16 kernels use (ARMv8.2 FP16 per cpuinfo).
// x86 never counts: F16C only converts, and XNNPACK's f16 kernels there are several times slower than f32.
bool cpu_has_fp16_arithmetic();
// The level-2 cache bytes per logical processor of the first core (its L2 size over the processors that
// share it), 0 when cpuinfo does not know: what a thread's working set can use without going to L3 or DRAM.
size_t cpu_l2_bytes_per_thread();
// The kernel library and API generation this build uses (onnxstream_kernel_library).
const char *kernel_library_description();
// Bytes the kernel library holds through the engine's allocator right now: operators, their packed
// weights when not served from a packed-weights file, indirection buffers and workspaces. The executor
// reads it around an op to learn what the op's kept kernels hold (exec/kept_kernels.h).
uint64_t kernel_library_bytes();
// While alive, the kernel library's big blocks allocated on this thread are new pages, not pieces of the
// idle ones the tensors free (tensor/mapping_cache.h): around an op that may keep its kernels.
class KernelKeepingScope {
public:
    KernelKeepingScope();
    ~KernelKeepingScope();
    // Whether one is alive on this thread: the operators created now are kept between runs.
    static bool active();
    KernelKeepingScope(const KernelKeepingScope &) = delete;
    KernelKeepingScope &operator=(const KernelKeepingScope &) = delete;

private:
    bool outer_;
};
} // namespace onnxstream
