// libFuzzer target: safetensors (see fuzz_entry.h). Build with -Dfuzzing=true and clang; run tests/fuzz/run_fuzz.sh.
#include "fuzz_entry.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    try {
        onnxstream::fuzz::safetensors(data, size);
    } catch (const onnxstream::Error &) {
        // The expected outcome for bad input; any other exception escapes and libFuzzer reports it.
    }
    return 0;
}
