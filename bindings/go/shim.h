/* Glue between the C API and the Go package. Declarations only: a cgo preamble in a file with
 * //export may not contain definitions. Go passes cgo.Handle values as uintptr_t; they become the
 * callbacks' void *user_data here in C, so no Go code converts an integer into a pointer. */
#ifndef ONNXSTREAM_GO_SHIM_H
#define ONNXSTREAM_GO_SHIM_H

#include <stdint.h>
#include <stdlib.h>

#include <onnxstream.h>

/* Installs the Go provider behind handle. lends != 0 uses acquire/release instead of read;
 * prefetches != 0 forwards prefetch hints. The handle is owned by the model from then on (deleted
 * by the destroy callback), except when this fails. */
onnxstream_status_t onnxstream_go_set_provider(onnxstream_model_t *model, uintptr_t handle, int lends, int prefetches);

/* handle 0 clears. */
onnxstream_status_t onnxstream_go_set_progress(onnxstream_model_t *model, uintptr_t handle);
onnxstream_status_t onnxstream_go_set_log(onnxstream_model_t *model, uintptr_t handle, int min_level);

#endif
