// Which weights the cache stores for a graph and how each is prepared (weights/cache_format.h's entries).
#pragma once

#include <vector>

#include "graph/graph.h"
#include "weights/cache_format.h"
#include "weights/provider.h"

namespace onnxstream::weight_cache {

// The cache's entries for a graph: one per distinct (file, wanted), in first-use order, with how each
// is prepared. A float16 file is widened only when every reference to it, in any layout, is a slot
// that widens it anyway; then all its entries are float32 and no op sees a dtype it does not expect.
std::vector<Entry> plan_entries(const Graph &graph);

// The reference the inner provider is asked for when the cache reads e's source file.
WeightSpec spec_of(const Entry &e, const QuantParams &quant);

} // namespace onnxstream::weight_cache
