/* One error path for the example's components: a status with a one-line message written into err. */
#ifndef SD_STATUS_H
#define SD_STATUS_H

#include <stddef.h>
#include <stdint.h>

#include "onnxstream.h"

/* Formats the message into err (when err is not NULL and err_size > 0) and returns s. */
onnxstream_status_t sd_fail(char *err, size_t err_size, onnxstream_status_t s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* onnxstream_model_run, then, when it succeeded, adds the weight bytes that run read to *weights_read: the
 * figure streaming is about, summed per model for the progress lines. */
onnxstream_status_t sd_run(onnxstream_model_t *model, uint64_t *weights_read);

#endif
