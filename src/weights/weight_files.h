// Reading weight files from a model folder, shared by the file-based providers.
//
// OnnxStream names conv weights "<x>_nchw.bin" in model.txt and ships "<x>_nhwc.bin" (OHWI order)
// beside or instead of it. resolve_weight_file picks the file to read and the layout it holds.
#pragma once

#include <string>

#include "graph/graph.h"
#include "tensor/tensor.h"

namespace onnxstream {

struct ResolvedWeight {
    std::string path;
    Layout layout = Layout::Plain; // layout of the file's contents
};

// Throws IO naming the file (and the _nhwc twin tried) when neither exists or the size is wrong.
ResolvedWeight resolve_weight_file(const std::string &folder, const WeightSpec &spec);

// Read a whole weight file into a tracked tensor in spec's dtype/shape and the file's layout.
Tensor read_weight_file(const ResolvedWeight &file, const WeightSpec &spec, const Allocator &alloc);

// Read rows [begin, end) along dim 0 of a weight file (a chunk of output channels for OIHW and OHWI
// alike) into a tracked tensor in spec.wanted layout.
Tensor read_weight_rows(const ResolvedWeight &file, const WeightSpec &spec, int64_t begin, int64_t end,
                        const Allocator &alloc);

// Rows [begin, end) of a whole weight tensor, copied (for providers that hold whole weights).
Tensor copy_weight_rows(const Tensor &whole, int64_t begin, int64_t end, const Allocator &alloc);

// Bring a fetched weight to the layout the consumer wants (OIHW <-> OHWI transpose of a 4-D weight),
// so every provider hands ops exactly spec.wanted. Returns t itself when nothing needs to change.
Tensor adapt_weight_layout(Tensor t, const WeightSpec &spec, const Allocator &alloc);

} // namespace onnxstream
