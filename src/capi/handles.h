// What an onnxstream_model_t handle is.
#pragma once

#include <string>

#include "exec/model.h"
#include "onnxstream.h"

struct onnxstream_model {
    explicit onnxstream_model(const onnxstream::ModelOptions &o) : model(o) {}
    onnxstream::Model model;
    std::string last_error;
    onnxstream_progress_fn progress_fn = nullptr;
    void *progress_user_data = nullptr;
};
