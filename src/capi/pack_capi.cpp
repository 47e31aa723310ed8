// onnxstream_pack_weights: glue to weights/safetensors_pack.h.
#include "capi/guard.h"
#include "weights/safetensors_pack.h"

using namespace onnxstream;
using namespace onnxstream::capi;

extern "C" {

onnxstream_status_t onnxstream_pack_weights(const char *folder, int32_t remove_files) {
    return guard(nullptr, [&] {
        REQUIRE_ARG(folder, "onnxstream_pack_weights: folder is NULL");
        pack_weight_folder(folder, remove_files != 0);
    });
}

} // extern "C"
