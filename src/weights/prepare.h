// The one place where a weight as stored (what a provider hands over: the file's dtype, the file's layout)
// becomes what a kernel reads.
//
// A request names a layout and an element type (ops/op.h WeightPrep). The layout is Plain (the ONNX order)
// or OHWI (output channel, kernel positions, input channel: XNNPACK's convolution order, for any kernel
// rank); the element type is the stored one or float32, reached by widening float16 or dequantizing 8-bit
// weights. Both changes happen in one pass over the weight, plane by plane (one output channel at a time),
// and nothing is copied when the weight already is what was asked. The result comes from the tracked
// allocator, so it carries XNNPACK's read-past-the-end slack.
//
// Ops reach it through RunContext::kernel_weight (the executor passes prepare_weight in, since ops sit
// below this layer); the persistent weight cache calls it when it builds, so a cached weight is served
// exactly as its op asks and the op's own call then copies nothing.
#pragma once

#include <atomic>
#include <cstdint>

#include "graph/graph.h"
#include "ops/op.h"
#include "tensor/tensor.h"

namespace onnxstream {

// `stored`: a whole weight or its rows [first_row, ...) along dim 0 (per-channel 8-bit scales are indexed
// by whole-weight rows). Adds the bytes it writes to *bytes_copied when given. Throws UNSUPPORTED for a
// conversion it does not know (e.g. float32 to float16) and OUT_OF_MEMORY from the allocator.
Tensor prepare_weight(const Tensor &stored, const WeightPrep &want, int64_t first_row, const Allocator &alloc,
                      pthreadpool_t pool, uint64_t *bytes_copied);

// What a provider serves for a weight reference: the stored tensor as it is when the op prepares the layout
// itself (spec.wanted OHWI: the consumer calls kernel_weight), else in Plain order (a folder that ships only
// the "_nhwc.bin" twin of a weight that another op reads).
Tensor serve_layout(Tensor stored, const WeightSpec &spec, const Allocator &alloc, std::atomic<uint64_t> *copied);

} // namespace onnxstream
