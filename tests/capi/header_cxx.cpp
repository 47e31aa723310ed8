// The public header must compile on its own as C++ (-Wall -Wextra -pedantic -Werror, built as
// C++11 so older host code can use it) with C linkage for every function.
#include "onnxstream.h"

#include <type_traits>

static_assert(ONNXSTREAM_OK == 0, "OK is 0");
static_assert(std::is_standard_layout<onnxstream_weights_provider_t>::value, "plain C structs");
static_assert(std::is_trivially_copyable<onnxstream_tensor_view_t>::value, "plain C structs");

extern "C" {
// Same declaration again inside extern "C": conflicts if the header gave it C++ linkage.
onnxstream_status_t onnxstream_model_run(onnxstream_model_t *model);
}

int main() {
    // Assignments check the documented function types (decltype would carry warn_unused_result).
    onnxstream_status_t (*run)(onnxstream_model_t *) = onnxstream_model_run;
    onnxstream_status_t (*create)(const onnxstream_model_options_t *, onnxstream_model_t **) = onnxstream_model_create;
    if (!run || !create) return 1;
    onnxstream_model_options_t options;
    onnxstream_model_options_init(&options);
    onnxstream_model_t *model = nullptr;
    if (onnxstream_model_create(&options, &model) != ONNXSTREAM_OK) return 1;
    onnxstream_model_destroy(model);
    return onnxstream_version() == ONNXSTREAM_VERSION ? 0 : 1;
}
