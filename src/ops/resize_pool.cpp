#include "ops/registry.h"

namespace onnxstream {

void register_resize_pool_ops(Registry &) {}

} // namespace onnxstream
