// Every extern "C" entry point runs its body through guard(): C++ exceptions become a status plus a
// message stored per model and per thread, so nothing ever unwinds into C.
#pragma once

#include <exception>
#include <new>
#include <string>

#include "capi/handles.h"
#include "util/error.h"

namespace onnxstream::capi {

// The thread's last error message (onnxstream_last_error).
std::string &thread_last_error();

inline onnxstream_status_t record(onnxstream_model_t *model, onnxstream_status_t status, const std::string &message) {
    thread_last_error() = message;
    if (model) model->last_error = message;
    return status;
}

template <typename Body> onnxstream_status_t guard(onnxstream_model_t *model, Body &&body) noexcept {
    try {
        body();
        if (model) model->last_error.clear();
        return ONNXSTREAM_OK;
    } catch (const Error &e) {
        return record(model, e.status(), e.what());
    } catch (const std::bad_alloc &) {
        return record(model, ONNXSTREAM_ERR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception &e) {
        return record(model, ONNXSTREAM_ERR_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return record(model, ONNXSTREAM_ERR_INTERNAL, "internal error: unknown exception");
    }
}

} // namespace onnxstream::capi
