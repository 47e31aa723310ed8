// The one exception type of the core. The C API layer turns it into a status + message.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "onnxstream.h"

namespace onnxstream {

using Status = onnxstream_status_t;

class Error : public std::runtime_error {
public:
    Error(Status status, const std::string &message) : std::runtime_error(message), status_(status) {}
    Status status() const noexcept { return status_; }

private:
    Status status_;
};

// Concatenate anything streamable into one string: cat("model.txt:", 12, ": bad shape").
template <typename... Args> std::string cat(Args &&...args) {
    std::ostringstream out;
    (out << ... << std::forward<Args>(args));
    return out.str();
}

// "ONNXSTREAM_ERR_IO"; "ONNXSTREAM_UNKNOWN_STATUS" for values this version lacks.
const char *status_name(Status status);

template <typename... Args>[[noreturn]] void fail(Status status, Args &&...args) {
    throw Error(status, cat(std::forward<Args>(args)...));
}

} // namespace onnxstream
