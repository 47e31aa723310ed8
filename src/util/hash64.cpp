#include "util/hash64.h"

namespace onnxstream {

uint64_t hash_bytes(const void *p, size_t n) {
    Hash64 h;
    h.update(p, n);
    return h.digest();
}

} // namespace onnxstream
