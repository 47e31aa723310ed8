// Helpers shared by the unit tests: temporary folders, file I/O and error-message matching.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "util/error.h"

namespace onnxstream::test {

// A fresh directory under $TMPDIR, removed with its contents when the object goes away.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;
    const std::string &path() const { return path_; }
    std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

void write_file(const std::string &path, const std::string &bytes);
void write_floats(const std::string &path, const std::vector<float> &values);
std::string read_file(const std::string &path);

// The core library does not contain the C API, so the tests name statuses themselves.
const char *status_name(Status status);

// Run fn, expect it to throw onnxstream::Error with `status`, return the message ("" if it did not throw
// as expected, after recording a gtest failure).
template <typename Fn> std::string expect_error(Status status, Fn &&fn) {
    try {
        fn();
    } catch (const Error &e) {
        EXPECT_EQ(status_name(e.status()), std::string(status_name(status))) << e.what();
        return e.what();
    }
    ADD_FAILURE() << "expected an error with " << status_name(status) << ", nothing was thrown";
    return "";
}

} // namespace onnxstream::test

// gtest's HasSubstr without gmock.
#define EXPECT_CONTAINS(haystack, needle)                                                                     \
    EXPECT_NE(std::string(haystack).find(needle), std::string::npos)                                         \
        << "'" << (haystack) << "' does not contain '" << (needle) << "'"
