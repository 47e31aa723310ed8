// The code under fuzzing, shared by the libFuzzer targets (fuzz_<target>.cpp) and the regression test that
// replays every crasher they found (fuzz_regressions_test.cpp).
//
// Each entry point feeds one input to one front end of the engine. It returns normally when the input is
// valid and throws onnxstream::Error when it is not: both are expected outcomes. Anything else (a crash, a
// sanitizer report, another exception, a broken invariant, reported as std::logic_error) is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace onnxstream::fuzz {

// Inputs above this size are skipped (they only slow the fuzzer down; the parsers are linear).
constexpr size_t kMaxInputBytes = 1 << 20;

// model.txt: parse (checking that writing it back gives the same bytes), build the graph, plan it (shape
// and dtype inference of every op, with small weights synthesized from their file names) and plan NHWC
// layouts.
void model_txt(const uint8_t *data, size_t size);
// A .npy file's bytes.
void npy(const uint8_t *data, size_t size);
// range_data.txt text.
void range_data(const uint8_t *data, size_t size);
// A whole safetensors file (weights/safetensors.h), parsed in memory: the first 8 bytes are the header
// length, the rest the header and data. An index it accepts is checked against the header parsed as a JSON
// document: the same tensors, dtypes, shapes and ranges.
void safetensors(const uint8_t *data, size_t size);
// An ONNX ModelProto's bytes: load (no external data: it would be looked up in a folder that does not
// exist), shape inference and every simplification pass, the check that the engine runs every op. Nothing is
// written.
void onnx_import(const uint8_t *data, size_t size);
// The C API's conversion entry, onnxstream_convert_onnx: the first byte picks the options (bit 0 fp16,
// bit 1 keep every weight float32, bit 2 int8 weight quantization, bit 3 an input shape "x=1,3,8,8"), the
// rest is the ONNX file, converted into a scratch folder. A failure must leave no output folder behind.
void convert_capi(const uint8_t *data, size_t size);
// model.txt through the C API, run: loaded with small weights synthesized from their file names (a weights
// provider), every input pushed as zeros, one run under a tight max_bytes, so huge shapes must end in
// OUT_OF_MEMORY instead of an allocation.
void model_run(const uint8_t *data, size_t size);

struct Target {
    const char *name;
    void (*run)(const uint8_t *, size_t);
};
// The targets this build has (onnx_import only with the ONNX importer).
const std::vector<Target> &targets();

} // namespace onnxstream::fuzz
