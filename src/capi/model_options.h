// onnxstream_model_options_t (already validated by onnxstream_model_create) into the engine's
// ModelOptions, in one step: what each memory mode (onnxstream_memory_mode_t) means for the weights
// provider, read-ahead, weight chunking, attention and the mapping cache, with the user's explicit choices
// taking precedence.
#pragma once

#include "exec/model.h"
#include "onnxstream.h"

namespace onnxstream {

ModelOptions model_options_from(const onnxstream_model_options_t &o);

} // namespace onnxstream
