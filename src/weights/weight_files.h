// Reading weight files from a model folder, shared by the file-based providers.
//
// OnnxStream names conv weights "<x>_nchw.bin" in model.txt and ships "<x>_nhwc.bin" (OHWI order)
// beside or instead of it. resolve_weight_file picks the file to read and the layout it holds. A weight
// may also be a tensor of the folder's model.safetensors (weights/safetensors.h), named like its file
// without ".bin"; the store is looked in first.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "graph/graph.h"
#include "tensor/tensor.h"

namespace onnxstream {

struct ResolvedWeight {
    std::string path;
    Layout layout = Layout::Plain; // layout of the file's contents
    // Where the weight's bytes are in the file: the whole file for a .bin file, a range of the store.
    uint64_t offset = 0;
    bool whole_file = true;
    // The store holds it as bfloat16 (spec says float32 or float16): readers widen it.
    bool bf16 = false;
};

// Throws IO naming the file (and the _nhwc twin tried) when neither exists or the size is wrong, and
// INVALID_MODEL when the store's tensor of that name has another dtype or shape than model.txt says.
ResolvedWeight resolve_weight_file(const std::string &folder, const WeightSpec &spec);

// Read a whole weight file into a tracked tensor in spec's dtype/shape, in the layout serve_layout gives
// (weights/prepare.h: the file's own when the op prepares its kernel, else Plain).
// `copied` (optional) counts the bytes written by a layout change (WeightsProvider::bytes_copied).
Tensor read_weight_file(const ResolvedWeight &file, const WeightSpec &spec, const Allocator &alloc,
                        std::atomic<uint64_t> *copied = nullptr);

// Read rows [begin, end) along dim 0 of a weight file (a chunk of output channels for OIHW and OHWI
// alike) into a tracked tensor, in the layout serve_layout gives.
Tensor read_weight_rows(const ResolvedWeight &file, const WeightSpec &spec, int64_t begin, int64_t end,
                        const Allocator &alloc, std::atomic<uint64_t> *copied = nullptr);

// Rows [begin, end) of a whole weight tensor, copied (for providers that hold whole weights).
Tensor copy_weight_rows(const Tensor &whole, int64_t begin, int64_t end, const Allocator &alloc,
                        std::atomic<uint64_t> *copied = nullptr);

// Read the scales files of per-channel weights (int8[@scales.bin,axis]) from `folder` into the graph's weight
// specs, each file once. Call once at load, before planning. Throws IO naming a missing or unreadable file,
// INVALID_MODEL when a file's size is not channels x 4 bytes or a scale is not positive and finite,
// INVALID_ARGUMENT when a per-channel weight exists and `folder` is empty.
void load_quant_scales(Graph &graph, const std::string &folder);

} // namespace onnxstream
