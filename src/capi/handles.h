// What an onnxstream_model_t handle is.
#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "exec/model.h"
#include "onnxstream.h"

struct onnxstream_model {
    explicit onnxstream_model(const onnxstream::ModelOptions &o) : model(o) {}
    onnxstream::Model model;
    std::string last_error;
    std::string profile_text; // the last onnxstream_model_render_profile result
    onnxstream_progress_fn progress_fn = nullptr;
    void *progress_user_data = nullptr;
    // The thread inside a call on this model (std::thread::id() when none) and that call's name: concurrent
    // use from a second thread is refused (capi::guard_model) instead of racing on the engine's state.
    std::atomic<std::thread::id> user{};
    std::atomic<const char *> user_call{nullptr};
};
