// XXH64 of byte streams: fast enough to hash every weight byte while the weights cache is built. The values
// are part of the cache's file format (weights/cache_format.h), so they must stay XXH64's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace onnxstream {

class Hash64 {
public:
    explicit Hash64(uint64_t seed = 0) {
        v_[0] = seed + P1 + P2;
        v_[1] = seed + P2;
        v_[2] = seed;
        v_[3] = seed - P1;
        seed_ = seed;
    }
    void update(const void *data, size_t len) {
        const uint8_t *p = static_cast<const uint8_t *>(data);
        total_ += len;
        if (buf_len_ + len < 32) {
            if (len) std::memcpy(buf_ + buf_len_, p, len);
            buf_len_ += len;
            return;
        }
        if (buf_len_) {
            size_t take = 32 - buf_len_;
            std::memcpy(buf_ + buf_len_, p, take);
            stripe(buf_);
            p += take;
            len -= take;
            buf_len_ = 0;
        }
        while (len >= 32) {
            stripe(p);
            p += 32;
            len -= 32;
        }
        if (len) std::memcpy(buf_, p, len);
        buf_len_ = len;
    }
    void update_u64(uint64_t v) { update(&v, sizeof v); }
    void update_str(const std::string &s) {
        update_u64(s.size());
        update(s.data(), s.size());
    }
    uint64_t digest() const {
        uint64_t h;
        if (total_ >= 32) {
            h = rotl(v_[0], 1) + rotl(v_[1], 7) + rotl(v_[2], 12) + rotl(v_[3], 18);
            for (uint64_t v : v_) h = (h ^ round(0, v)) * P1 + P4;
        } else {
            h = seed_ + P5;
        }
        h += total_;
        const uint8_t *p = buf_;
        size_t len = buf_len_;
        for (; len >= 8; p += 8, len -= 8) h = rotl(h ^ round(0, read64(p)), 27) * P1 + P4;
        if (len >= 4) {
            uint32_t k;
            std::memcpy(&k, p, 4);
            h = rotl(h ^ (static_cast<uint64_t>(k) * P1), 23) * P2 + P3;
            p += 4;
            len -= 4;
        }
        for (; len; ++p, --len) h = rotl(h ^ (*p * P5), 11) * P1;
        h ^= h >> 33;
        h *= P2;
        h ^= h >> 29;
        h *= P3;
        h ^= h >> 32;
        return h;
    }

private:
    static constexpr uint64_t P1 = 11400714785074694791ULL, P2 = 14029467366897019727ULL,
                              P3 = 1609587929392839161ULL, P4 = 9650029242287828579ULL,
                              P5 = 2870177450012600261ULL;
    static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
    static uint64_t round(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
    static uint64_t read64(const uint8_t *p) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        return v;
    }
    void stripe(const uint8_t *p) {
        for (int i = 0; i < 4; ++i) v_[i] = round(v_[i], read64(p + 8 * i));
    }
    uint64_t v_[4], seed_, total_ = 0;
    uint8_t buf_[32];
    size_t buf_len_ = 0;
};

// XXH64 with seed 0 of n bytes at p.
uint64_t hash_bytes(const void *p, size_t n);

} // namespace onnxstream
