// Checked arithmetic for sizes computed from untrusted dimensions (ONNX protobufs, model.txt, .npy
// headers, range data, tensors pushed through the C API).
//
// A shape's element count is an int64 product that a hostile file can push past 2^63 (undefined
// behaviour in C++), and a byte count that fits 64 bits can still wrap when narrowed to a 32-bit size_t
// on armhf: either way the allocation comes out too small and the code that fills it writes past its end.
// So counts are computed in 64 bits with overflow checks, and narrowed to size_t only through to_size(),
// which fails instead of wrapping. No byte count is ever multiplied in size_t before being checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "util/error.h"

namespace onnxstream::checked {

// a * b and a + b; false on overflow (out is then unspecified).
inline bool mul(int64_t a, int64_t b, int64_t &out) { return !__builtin_mul_overflow(a, b, &out); }
inline bool mul(uint64_t a, uint64_t b, uint64_t &out) { return !__builtin_mul_overflow(a, b, &out); }
inline bool add(int64_t a, int64_t b, int64_t &out) { return !__builtin_add_overflow(a, b, &out); }
inline bool add(uint64_t a, uint64_t b, uint64_t &out) { return !__builtin_add_overflow(a, b, &out); }

// The product of dims. Negative dims (unknown dimensions in the importer's types) multiply like any
// other value; false only when the product leaves int64.
inline bool product(const std::vector<int64_t> &dims, int64_t &out) {
    int64_t n = 1;
    for (int64_t d : dims)
        if (!mul(n, d, n)) return false;
    out = n;
    return true;
}

// Element count and byte count of a shape whose dims must all be >= 0; false when a dim is negative or
// a count leaves int64 (elements) or uint64 (bytes).
inline bool element_count(const std::vector<int64_t> &dims, int64_t &out) {
    for (int64_t d : dims)
        if (d < 0) return false;
    return product(dims, out);
}
inline bool byte_count(const std::vector<int64_t> &dims, uint64_t element_size, uint64_t &out) {
    int64_t n = 0;
    return element_count(dims, n) && mul(static_cast<uint64_t>(n), element_size, out);
}

// Whether v fits in a size_t whose largest value is `limit`; the limit is a parameter so tests can
// check a 32-bit build's behaviour on a 64-bit machine.
constexpr uint64_t kSizeMax = std::numeric_limits<size_t>::max();
inline bool fits_size(uint64_t v, uint64_t limit = kSizeMax) { return v <= limit; }

// The throwing forms. `what` names the tensor in the message ("model.onnx: initializer 'w'").

// Element count of dims (all >= 0): INVALID_MODEL when a dim is negative or the count passes 2^63.
int64_t numel_or_fail(const std::vector<int64_t> &dims, const std::string &what);
// Byte count of dims x element_size: INVALID_MODEL when it cannot be represented in 64 bits.
uint64_t bytes_or_fail(const std::vector<int64_t> &dims, uint64_t element_size, const std::string &what);
// bytes as size_t: OUT_OF_MEMORY when it passes `limit` (this platform's size_t unless a test says
// otherwise): such a tensor cannot be held in this process's address space.
size_t to_size(uint64_t bytes, const std::string &what, uint64_t limit = kSizeMax);
// Both at once: the size_t byte count of a tensor about to be allocated or read.
size_t size_bytes(const std::vector<int64_t> &dims, uint64_t element_size, const std::string &what,
                  uint64_t limit = kSizeMax);

} // namespace onnxstream::checked
