// This machine's ceilings for the profile summary's "% peak" column: the float32 GEMM rate XNNPACK reaches
// and the memory bandwidth, each measured with the thread count the model uses.
#pragma once

#include <cstddef>

#include "exec/profiler.h"

namespace onnxstream {

// About a second. Throws OUT_OF_MEMORY when the 2 x 64 MiB copy buffers cannot be allocated.
Roofline measure_roofline(size_t threads);

} // namespace onnxstream
