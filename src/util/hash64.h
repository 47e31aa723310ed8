// XXH64 (libxxhash) of byte streams: fast enough to hash every weight byte while the weights cache is built.
// The values are part of the cache's file format (weights/cache_format.h), so they must stay XXH64's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

struct XXH64_state_s; // <xxhash.h>'s XXH64_state_t, so that includers need not include <xxhash.h>

namespace onnxstream {

class Hash64 {
public:
    explicit Hash64(uint64_t seed = 0);
    ~Hash64();
    Hash64(const Hash64 &) = delete;
    Hash64 &operator=(const Hash64 &) = delete;

    void update(const void *data, size_t len);
    // In the machine's byte order: the cache files record theirs and are rebuilt on another.
    void update_u64(uint64_t v) { update(&v, sizeof v); }
    // Length first, so that consecutive strings cannot run into each other.
    void update_str(const std::string &s) {
        update_u64(s.size());
        update(s.data(), s.size());
    }
    uint64_t digest() const;

private:
    XXH64_state_s *state_;
};

// XXH64 with seed 0 of n bytes at p.
uint64_t hash_bytes(const void *p, size_t n);

} // namespace onnxstream
