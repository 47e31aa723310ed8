#include "status.h"

#include <stdarg.h>
#include <stdio.h>

onnxstream_status_t sd_fail(char *err, size_t err_size, onnxstream_status_t s, const char *fmt, ...) {
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return s;
}
