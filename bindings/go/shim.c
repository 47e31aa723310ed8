// The static vtable the C library calls; each entry forwards to an exported Go function.
#include "shim.h"

#include <string.h>

#include "_cgo_export.h"

static onnxstream_status_t shim_read(void *user_data, const onnxstream_weight_request_t *req, void *dst) {
    return onnxstreamGoRead((uintptr_t)user_data, (onnxstream_weight_request_t *)req, dst);
}

static onnxstream_status_t shim_acquire(void *user_data, const onnxstream_weight_request_t *req, const void **data,
                                        void **token) {
    uintptr_t d = 0, t = 0;
    onnxstream_status_t s = onnxstreamGoAcquire((uintptr_t)user_data, (onnxstream_weight_request_t *)req, &d, &t);
    *data = (const void *)d;
    *token = (void *)t;
    return s;
}

static void shim_release(void *user_data, void *token) {
    (void)user_data;
    onnxstreamGoRelease((uintptr_t)token);
}

static void shim_prefetch(void *user_data, const onnxstream_weight_request_t *req) {
    onnxstreamGoPrefetch((uintptr_t)user_data, (onnxstream_weight_request_t *)req);
}

static void shim_destroy(void *user_data) { onnxstreamGoDestroy((uintptr_t)user_data); }

static int shim_progress(void *user_data, const onnxstream_progress_t *p) {
    return onnxstreamGoProgress((uintptr_t)user_data, (onnxstream_progress_t *)p);
}

static void shim_log(void *user_data, onnxstream_log_level_t level, const char *message) {
    onnxstreamGoLog((uintptr_t)user_data, (int)level, (char *)message);
}

onnxstream_status_t onnxstream_go_set_provider(onnxstream_model_t *model, uintptr_t handle, int lends, int prefetches) {
    onnxstream_weights_provider_t vt;
    memset(&vt, 0, sizeof(vt));
    vt.struct_size = sizeof(vt);
    if (lends) {
        vt.acquire = shim_acquire;
        vt.release = shim_release;
    } else {
        vt.read = shim_read;
    }
    if (prefetches) vt.prefetch = shim_prefetch;
    vt.destroy = shim_destroy;
    return onnxstream_model_set_weights_provider(model, &vt, (void *)handle);
}

onnxstream_status_t onnxstream_go_set_progress(onnxstream_model_t *model, uintptr_t handle) {
    return onnxstream_model_set_progress_callback(model, handle ? shim_progress : NULL, (void *)handle);
}

onnxstream_status_t onnxstream_go_set_log(onnxstream_model_t *model, uintptr_t handle, int min_level) {
    return onnxstream_model_set_log_callback(model, handle ? shim_log : NULL, (void *)handle,
                                             (onnxstream_log_level_t)min_level);
}
