/* One error path for the example's components: a status with a one-line message written into err. */
#ifndef SD_STATUS_H
#define SD_STATUS_H

#include <stddef.h>

#include "onnxstream.h"

/* Formats the message into err (when err is not NULL and err_size > 0) and returns s. */
onnxstream_status_t sd_fail(char *err, size_t err_size, onnxstream_status_t s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

#endif
