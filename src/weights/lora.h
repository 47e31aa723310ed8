// LoRA while streaming: a LoRA file (safetensors) holds, for some linear and convolution layers of a
// model, two small matrices `up` [out, rank] and `down` [rank, in] and a scalar alpha. The layer's weight
// is then W + scale · (alpha / rank) · up · down. Nothing merged is ever stored: each time the executor
// fetches a weight a LoRA touches (whole, or one chunk of rows of a streamed weight), the delta of just
// those rows is computed from up and down, read from the LoRA file at that moment, and added to a copy.
//
// Which weight a LoRA module changes is decided by name. A module key ("lora_unet_down_blocks_0_..._to_q"
// in kohya/A1111 files, "unet.down_blocks.0....to_q" in diffusers/PEFT files) is compared with '.' read as
// '_': it matches the layer whose path, taken from the op name the converter keeps from the ONNX export
// ("/down_blocks.0/.../to_q/MatMul" is layer "down_blocks.0....to_q"), ends the key at a '_' boundary
// (the longest such path wins). docs/lora.md lists the key forms and layer kinds.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <pthreadpool.h>

#include "graph/graph.h"
#include "tensor/tensor.h"

namespace onnxstream {

class SafetensorsIndex;

// How the weight's rows relate to the layer's [out, in] matrix.
enum class LoraTargetKind {
    InOut,  // [in, out]: MatMul's B, Gemm's B without transB (rows are input features)
    OutIn,  // [out, in]: Gemm's B with transB, the GEGLU block's transposed W1 (rows are outputs)
    Kernel, // [out, in, kh, kw] convolution kernel, stored OIHW or OHWI (rows are output channels)
};

class LoraSet {
public:
    LoraSet();
    ~LoraSet();

    // Adds the modules of the LoRA file at `path` whose key starts with `key_prefix` ("" takes all), each
    // scaled by `scale`. Every taken module must match a float weight of `graph` with the shapes its up and
    // down imply. Returns the number of modules taken. Throws IO / INVALID_MODEL (unreadable file or
    // header), INVALID_ARGUMENT (unpaired, mis-shaped or unmatched modules: one message lists them) and
    // UNSUPPORTED (LoRA variants other than up/down pairs, 8-bit target weights). On a throw nothing is
    // added.
    size_t add(const Graph &graph, const std::string &path, float scale, const std::string &key_prefix);

    bool empty() const { return deltas_.empty(); }
    // Whether weight file `file` has deltas.
    bool touches(const std::string &file) const { return deltas_.count(file) != 0; }
    // `stored` (a whole weight, or its rows [first_row, ...) along dim 0, in its own layout) plus its
    // deltas, as a new tensor of the same dtype, shape and layout from `alloc`. `stored` is not changed
    // (a provider may keep it). Throws IO (the LoRA file became unreadable) and OUT_OF_MEMORY.
    Tensor apply(const WeightSpec &spec, const Tensor &stored, int64_t first_row, const Allocator &alloc,
                 pthreadpool_t pool) const;

    struct Delta; // one module's up/down on one weight (lora.cpp)

private:
    std::map<std::string, std::vector<std::shared_ptr<const Delta>>> deltas_; // by weight file
};

} // namespace onnxstream
