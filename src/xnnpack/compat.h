// The one place that knows which generation of XNNPACK's operator API this build compiles against. The
// family wrappers (conv.cpp, matmul.cpp, ...) call these and never an API-specific XNNPACK function.
//
// Debian 12 ships a 2022-02 snapshot; Debian 13 (and so Raspberry Pi OS trixie) a 2024-11 one. Between the
// two, XNNPACK:
//  - added a code cache and a weights cache argument after `flags` in every xnn_create_* of a weighted op;
//  - split xnn_setup_*(op, sizes..., buffers, pool) into xnn_reshape_*(op, sizes..., pool), which may ask
//    for a workspace, and xnn_setup_*(op, [workspace,] buffers);
//  - replaced the per-op unary operators (xnn_create_abs_nc_f32, ...) with one unary_elementwise operator;
//  - renamed the per-channel int8 convolution from qc8 to qs8_qc8w.
// meson.build defines ONNXSTREAM_XNNPACK_2024 (to 1 or 0) after probing for xnn_reshape_convolution2d_nhwc_f32.
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/kernel_timer.h"
#include "util/worker_policy.h"
#include "xnnpack/weights_cache.h"
#include "xnnpack/xnn.h"
#include "xnnpack/xnnpack_config.h"

#ifndef ONNXSTREAM_XNNPACK_2024
#error "ONNXSTREAM_XNNPACK_2024 must be defined by the build (src/xnnpack/meson.build)"
#endif

namespace onnxstream::xnn {

// Which API this build uses, for version strings and run reports.
const char *api_description();

// Flags every operator is created with: XNN_FLAG_YIELD_WORKERS lets the pool's workers sleep when an
// operator is done instead of spinning for the next one. A spinning worker takes a core that the calling
// thread, or another process, needs for the serial work between operators; with other processes on the
// cores that made 2-thread runs several times slower than 1-thread ones. Waking the workers costs a little
// on an idle machine (docs/benchmarks.md has both figures), so a model may ask to keep them spinning
// (ONNXSTREAM_FLAG_SPIN_WORKERS, util/worker_policy.h).
inline uint32_t operator_flags() { return spin_workers() ? 0 : XNN_FLAG_YIELD_WORKERS; }

// Calls an xnn_create_* of a weighted operator, named `function`: `args` are the arguments up to and
// including `flags`. Inside a PackingScope (2024 API), XNNPACK's weights cache looks the packed weights up
// in the scope's store first (weights_cache.h); the key covers `function` and every scalar argument.
template <typename Create, typename... Args>
enum xnn_status create_operator(Create create, const char *function, xnn_operator_t *out, Args... args) {
    KernelPrepareTimer timer; // creation packs the weights: the profiler reports it apart from compute
#if ONNXSTREAM_XNNPACK_2024
    uint64_t arguments_key = 0xcbf29ce484222325ull;
    ((arguments_key = mix_argument(arguments_key, args)), ...);
    struct xnn_weights_cache_provider *cache = begin_packing(function, arguments_key);
    enum xnn_status status = create(args..., /*code_cache=*/nullptr, cache, out);
    if (cache && !end_packing(status == xnn_status_success ? *out : nullptr)) {
        *out = nullptr;
        status = xnn_status_out_of_memory;
    }
    if (status == xnn_status_success) count_creation(cache);
    return status;
#else
    (void)function;
    const enum xnn_status status = create(args..., out);
    if (status == xnn_status_success) count_creation(nullptr);
    return status;
#endif
}

// Scratch memory an operator asks for at reshape time (2024 API convolutions); kept with the operator so
// repeated runs of one size reuse it.
class Workspace {
public:
    Workspace() = default;
    ~Workspace();
    Workspace(const Workspace &) = delete;
    Workspace &operator=(const Workspace &) = delete;
    // A block of at least `bytes` aligned to `alignment`; null when bytes is 0. Throws OUT_OF_MEMORY.
    void *reserve(size_t bytes, size_t alignment);

private:
    void *data_ = nullptr;
    size_t bytes_ = 0, alignment_ = 0;
};

// Shape a created operator for one run and bind its buffers (then xnn::run it). Each throws Error naming the
// failing XNNPACK call.
void setup_conv2d_f32(xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w, const float *input,
                      float *output, pthreadpool_t pool);
void setup_conv2d_f16(xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w, const void *input,
                      void *output, pthreadpool_t pool);
void setup_conv2d_qu8(xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w,
                      const uint8_t *input, uint8_t *output, pthreadpool_t pool);
void setup_conv2d_qs8_qc8w(xnn_operator_t op, Workspace &ws, size_t batch, size_t in_h, size_t in_w,
                           const int8_t *input, int8_t *output, pthreadpool_t pool);
void setup_deconv2d_f32(xnn_operator_t op, size_t batch, size_t in_h, size_t in_w, uint32_t adjustment_h,
                        uint32_t adjustment_w, const float *input, float *output, pthreadpool_t pool);
void setup_fully_connected_f32(xnn_operator_t op, size_t batch, const float *x, float *y, pthreadpool_t pool);
void setup_fully_connected_f16(xnn_operator_t op, size_t batch, const void *x, void *y, pthreadpool_t pool);
void setup_fully_connected_qu8(xnn_operator_t op, size_t batch, const uint8_t *x, uint8_t *y, pthreadpool_t pool);

// The per-channel int8 convolution's create function, for create_operator: renamed from qc8 (2022) to
// qs8_qc8w (2024), with the same arguments.
#if ONNXSTREAM_XNNPACK_2024
inline constexpr auto create_conv2d_qs8_qc8w = xnn_create_convolution2d_nhwc_qs8_qc8w;
#else
inline constexpr auto create_conv2d_qs8_qc8w = xnn_create_convolution2d_nhwc_qc8;
#endif

// Softmax over `rows` contiguous rows of `channels` floats, created, run and deleted.
void run_softmax_f32(size_t rows, size_t channels, const float *x, float *y, pthreadpool_t pool);

// Element-wise float32 unary operators over n contiguous values, created, run and deleted. `param` is the
// slope of LeakyRelu and the alpha of Elu, unused otherwise.
enum class UnaryKind { Abs, Negate, Floor, Ceiling, RoundEven, Sigmoid, HardSwish, LeakyRelu, Elu };
void run_unary_f32(UnaryKind kind, float param, const float *in, float *out, size_t n, pthreadpool_t pool);

} // namespace onnxstream::xnn
