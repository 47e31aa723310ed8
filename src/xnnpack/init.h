// Kernel library start-up, callable from outside src/xnnpack without including <xnnpack.h>.
#pragma once

namespace onnxstream {
// Initialise the kernel library once per process; throws Error if the CPU is unsupported.
void init_kernels();
} // namespace onnxstream
