#include "util/checked.h"

#include "util/strings.h"

namespace onnxstream::checked {

namespace {
std::string dims_text(const std::vector<int64_t> &dims) { return "(" + join_ints(dims) + ")"; }
} // namespace

int64_t numel_or_fail(const std::vector<int64_t> &dims, const std::string &what) {
    for (int64_t d : dims)
        if (d < 0) fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " has a negative dimension ", d, " in ", dims_text(dims));
    int64_t n = 0;
    if (!product(dims, n))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " has shape ", dims_text(dims),
             ", whose element count does not fit in 64 bits");
    return n;
}

uint64_t bytes_or_fail(const std::vector<int64_t> &dims, uint64_t element_size, const std::string &what) {
    const int64_t n = numel_or_fail(dims, what);
    uint64_t bytes = 0;
    if (!mul(static_cast<uint64_t>(n), element_size, bytes))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " has shape ", dims_text(dims), " (", n, " elements of ",
             element_size, " bytes), whose byte count does not fit in 64 bits");
    return bytes;
}

size_t to_size(uint64_t bytes, const std::string &what, uint64_t limit) {
    if (!fits_size(bytes, limit))
        fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, what, " needs ", bytes, " bytes, more than this platform can address (",
             limit, ")");
    return static_cast<size_t>(bytes);
}

size_t size_bytes(const std::vector<int64_t> &dims, uint64_t element_size, const std::string &what, uint64_t limit) {
    return to_size(bytes_or_fail(dims, element_size, what), what, limit);
}

} // namespace onnxstream::checked
