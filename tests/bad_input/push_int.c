/* onnxstream_model_push_tensor with the dtype as a plain int, as a C host may pass it: in C any int converts
 * to the enum type, while in C++ an enum value outside the enumerators' range is undefined behaviour
 * (UBSan reports it in the test before the library sees it). */
#include "onnxstream.h"

onnxstream_status_t bad_input_push_tensor(onnxstream_model_t *model, const char *name, int dtype, size_t rank,
                                          const int64_t *shape, const void *data, size_t byte_size);

onnxstream_status_t bad_input_push_tensor(onnxstream_model_t *model, const char *name, int dtype, size_t rank,
                                          const int64_t *shape, const void *data, size_t byte_size) {
    return onnxstream_model_push_tensor(model, name, (onnxstream_dtype_t)dtype, rank, shape, data, byte_size);
}
