// Prints the op types the engine registers, one a line: run_conformance.py counts the node tests of these
// op types apart from the others (neither onnxstream-run nor onnxstream-convert lists them).
#include <cstdio>

#include "ops/registry.h"

int main() {
    for (const std::string &type : onnxstream::Registry::builtin().types()) std::printf("%s\n", type.c_str());
    return 0;
}
