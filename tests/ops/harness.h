// Op conformance harness: runs every generated case of one op family through the public C API and compares
// the outputs with ONNX Runtime's (see tests/tools/opcase.py for how cases are written). A family's test file
// is just
//     #include "ops/harness.h"
//     ONNXSTREAM_OP_FAMILY_TEST(elementwise)
// which defines one gtest per case, named <family>.matches_ort/<case>, plus <family>_cases.generated, which
// fails when the family has no cases or its case file did not load.
//
// The cases are read from $ONNXSTREAM_OP_CASES_DIR/<family>/<case>/ (meson test sets it), else from the build
// folder the harness was compiled for.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace onnxstream::optest {

struct OpCase {
    std::string family;
    std::string name;
    std::string dir;
};

// Sorted case directories of a family; empty (never throws) when there are none, which check_family reports.
std::vector<OpCase> list_cases(const std::string &family);
// gtest failure when the family has no runnable case folder or the generator recorded an error for it.
void check_family(const std::string &family);
// Runs one case with each weights provider under test and records gtest failures.
void run_case(const OpCase &c);

// So `--gtest_filter` and failure lines show "family/case".
inline std::ostream &operator<<(std::ostream &os, const OpCase &c) { return os << c.family << "/" << c.name; }

} // namespace onnxstream::optest

#define ONNXSTREAM_OP_FAMILY_TEST(family)                                                                      \
    namespace onnxstream_op_tests {                                                                            \
    class family : public ::testing::TestWithParam<::onnxstream::optest::OpCase> {};                           \
    TEST_P(family, matches_ort) { ::onnxstream::optest::run_case(GetParam()); }                                \
    INSTANTIATE_TEST_SUITE_P(, family, ::testing::ValuesIn(::onnxstream::optest::list_cases(#family)),         \
                             [](const ::testing::TestParamInfo<::onnxstream::optest::OpCase> &info) {          \
                                 return info.param.name;                                                       \
                             });                                                                               \
    TEST(family##_cases, generated) { ::onnxstream::optest::check_family(#family); }                           \
    }
