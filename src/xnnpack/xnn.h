// The core of the XNNPACK wrapper: one-time initialisation, status checking and an owning operator
// handle. Only files in src/xnnpack/ include <xnnpack.h>; ops use the per-family headers here
// (conv.h, elementwise.h, ...), so replacing the kernel library touches this directory only.
#pragma once

#include <memory>

#include <xnnpack.h>

namespace onnxstream::xnn {

// Initialise XNNPACK once per process (thread-safe). Throws Error(INTERNAL) if the CPU is unsupported.
void ensure_initialized();

// Throw an Error naming the XNNPACK call when status is not success.
void check(enum xnn_status status, const char *call);

struct OperatorDeleter {
    void operator()(xnn_operator_t op) const;
};
using Operator = std::unique_ptr<struct xnn_operator, OperatorDeleter>;

// setup then run, with checks.
void run(const Operator &op, pthreadpool_t pool);

} // namespace onnxstream::xnn
