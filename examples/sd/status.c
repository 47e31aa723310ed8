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

onnxstream_status_t sd_run(onnxstream_model_t *model, uint64_t *weights_read) {
    onnxstream_status_t s = onnxstream_model_run(model);
    onnxstream_run_stats_t stats;
    stats.struct_size = sizeof stats;
    if (s == ONNXSTREAM_OK && onnxstream_model_run_stats(model, &stats) == ONNXSTREAM_OK)
        *weights_read += stats.weight_bytes_read;
    return s;
}
