#include "xnnpack/xnn.h"

#include <mutex>

#include "util/error.h"

namespace onnxstream::xnn {

namespace {
const char *status_text(enum xnn_status s) {
    switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "XNNPACK not initialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
    }
    return "unknown status";
}
} // namespace

void ensure_initialized() {
    static std::once_flag once;
    static enum xnn_status init_status = xnn_status_uninitialized;
    std::call_once(once, [] { init_status = xnn_initialize(nullptr); });
    check(init_status, "xnn_initialize");
}

void check(enum xnn_status status, const char *call) {
    if (status == xnn_status_success) return;
    Status code = ONNXSTREAM_ERR_INTERNAL;
    if (status == xnn_status_out_of_memory) code = ONNXSTREAM_ERR_OUT_OF_MEMORY;
    if (status == xnn_status_unsupported_parameter || status == xnn_status_unsupported_hardware)
        code = ONNXSTREAM_ERR_UNSUPPORTED;
    fail(code, call, " failed: ", status_text(status));
}

void run(const Operator &op, pthreadpool_t pool) { check(xnn_run_operator(op.get(), pool), "xnn_run_operator"); }

} // namespace onnxstream::xnn

namespace onnxstream {
void init_kernels() { xnn::ensure_initialized(); }
} // namespace onnxstream
