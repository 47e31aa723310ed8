#include "util/hash64.h"

#include <new>

#include <xxhash.h>

namespace onnxstream {

Hash64::Hash64(uint64_t seed) : state_(XXH64_createState()) {
    if (!state_) throw std::bad_alloc();
    XXH64_reset(state_, seed);
}

Hash64::~Hash64() { XXH64_freeState(state_); }

void Hash64::update(const void *data, size_t len) { XXH64_update(state_, data, len); }

uint64_t Hash64::digest() const { return XXH64_digest(state_); }

uint64_t hash_bytes(const void *p, size_t n) { return XXH64(p, n, 0); }

} // namespace onnxstream
