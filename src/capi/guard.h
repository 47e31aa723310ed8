// Every extern "C" entry point runs its body through guard(): C++ exceptions become a status plus a
// message stored per model and per thread, so nothing ever unwinds into C.
#pragma once

#include <exception>
#include <new>
#include <string>
#include <thread>
#include <utility>

#include "capi/handles.h"
#include "util/error.h"

// An argument check inside a guarded body: INVALID_ARGUMENT with the message when cond is false.
#define REQUIRE_ARG(cond, ...)                                                                                  \
    do {                                                                                                       \
        if (!(cond)) ::onnxstream::fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, __VA_ARGS__);                         \
    } while (0)

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

// What a call does to its model, for calls made from a callback of the model's own run (same thread):
// reading is safe then, changing the model under the running op is not.
enum class Access { Read, Write };

// guard() plus the one-thread-at-a-time rule: the calling thread claims the model for the call. A call
// from another thread while it is claimed fails with BAD_STATE, recorded in that thread's last error only
// (the model's last_error belongs to the thread using the model). A NULL model goes straight to body,
// whose argument checks report it.
template <typename Body>
onnxstream_status_t guard_model(onnxstream_model_t *model, const char *fn, Access access, Body &&body) noexcept {
    if (!model) return guard(model, std::forward<Body>(body));
    const std::thread::id me = std::this_thread::get_id();
    std::thread::id owner{};
    if (model->user.compare_exchange_strong(owner, me)) {
        model->user_call.store(fn);
        onnxstream_status_t status = guard(model, std::forward<Body>(body));
        model->user_call.store(nullptr);
        model->user.store(std::thread::id());
        return status;
    }
    if (owner == me) {
        if (access == Access::Read) return guard(model, std::forward<Body>(body));
        const char *inside = model->user_call.load();
        return record(model, ONNXSTREAM_ERR_BAD_STATE,
                      std::string(fn) + ": called from a callback during " + (inside ? inside : "a call") +
                          " on this model; only reading calls are allowed there");
    }
    const char *inside = model->user_call.load();
    if (inside && std::string(inside) == "onnxstream_model_run")
        return record(nullptr, ONNXSTREAM_ERR_BAD_STATE,
                      std::string(fn) + ": another thread is running this model (a model handle is used by one "
                                        "thread at a time)");
    return record(nullptr, ONNXSTREAM_ERR_BAD_STATE,
                  std::string(fn) + ": another thread is using this model (in " + (inside ? inside : "a call") +
                      "; a model handle is used by one thread at a time)");
}

} // namespace onnxstream::capi
