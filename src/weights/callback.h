// Adapts the C weights-provider vtable (onnxstream_weights_provider_t + user_data) to WeightsProvider.
#pragma once

#include <memory>

#include "weights/provider.h"

namespace onnxstream {

// Validates the vtable (throws INVALID_ARGUMENT) and takes ownership of user_data: the provider's
// destroy callback runs exactly once, when the returned object is destroyed.
std::unique_ptr<WeightsProvider> make_callback_provider(const onnxstream_weights_provider_t &vtable, void *user_data);

} // namespace onnxstream
