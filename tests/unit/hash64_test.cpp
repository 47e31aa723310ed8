// util/hash64 is libxxhash's XXH64. The weights cache stores these values (header and index checksums, the
// model.txt hash, the content hash), so a cache file written by an earlier build, whose XXH64 was
// hand-written, stays valid only if the library gives the same values. The expected values below are
// xxHash's own sanity-check vectors plus what the hand-written implementation returned around its 32-byte
// stripes and 8/4/1-byte tails.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "util/hash64.h"

using namespace onnxstream;

namespace {

constexpr uint64_t kPrime32 = 2654435761u;

// xxHash's sanity buffer: byte i is the top byte of kPrime32 * kPrime64^i.
std::vector<uint8_t> sanity_buffer(size_t n) {
    std::vector<uint8_t> b(n);
    uint64_t gen = kPrime32;
    for (uint8_t &byte : b) {
        byte = static_cast<uint8_t>(gen >> 56);
        gen *= 11400714785074694797ull;
    }
    return b;
}

struct Vector {
    size_t len;
    uint64_t seed;
    uint64_t expected;
};

const Vector kVectors[] = {
    // xxHash's sanity checks (xxhsum).
    {0, 0, 0xEF46DB3751D8E999ull},
    {0, kPrime32, 0xAC75FDA2929B17EFull},
    {1, 0, 0xE934A84ADB052768ull},
    {1, kPrime32, 0x5014607643A9B4C3ull},
    {14, 0, 0x8282DCC4994E35C8ull},
    {14, kPrime32, 0xC3BD6BF63DEB6DF0ull},
    {222, 0, 0xB641AE8CB691C174ull},
    {222, kPrime32, 0x20CB8AB7AE10C14Aull},
    // The hand-written implementation's values on the same buffer.
    {3, 0, 0xFF7E1959CB50794Aull},
    {4, 0, 0x9136A0DCA57457EEull},
    {7, 0, 0x6C83909A9F01ED25ull},
    {8, 0, 0xCDBCF538E71D1348ull},
    {31, 0, 0x299B39A290E6D783ull},
    {32, 0, 0x18B216492BB44B70ull},
    {33, 0, 0x55C8DC3E578F5B59ull},
    {63, 0, 0xA9EFBE0FA0F3F4E7ull},
    {64, 0, 0xEF558F8ACAC2B5CDull},
    {65, 0, 0xDE0F20DC2631AF7Aull},
    {100, 0, 0x4BFE019CD91D9EA4ull},
    {1000, 0, 0x52BD1358F22E9EF7ull},
    {4096, 0, 0xAB77F4AF85F4E70Bull},
    {33, kPrime32, 0xE92C292F64BC3071ull},
    {4096, kPrime32, 0xCB8B60CBA513125Dull},
};

} // namespace

TEST(Hash64, KnownVectorsOneShot) {
    const std::vector<uint8_t> buf = sanity_buffer(4096);
    for (const Vector &v : kVectors) {
        Hash64 h(v.seed);
        h.update(buf.data(), v.len);
        EXPECT_EQ(h.digest(), v.expected) << "len " << v.len << " seed " << v.seed;
        if (v.seed == 0) {
            EXPECT_EQ(hash_bytes(buf.data(), v.len), v.expected) << "len " << v.len;
        }
    }
}

// The cache hashes each weight in the pieces the provider hands it: any split must give the same value.
TEST(Hash64, KnownVectorsStreamedInUnevenPieces) {
    const std::vector<uint8_t> buf = sanity_buffer(4096);
    for (const Vector &v : kVectors) {
        Hash64 h(v.seed);
        size_t pos = 0, step = 1;
        while (pos < v.len) {
            const size_t k = std::min(step, v.len - pos);
            h.update(buf.data() + pos, k);
            pos += k;
            step = step * 3 % 37 + 1;
        }
        EXPECT_EQ(h.digest(), v.expected) << "len " << v.len << " seed " << v.seed;
    }
}

TEST(Hash64, Strings) {
    EXPECT_EQ(hash_bytes("", 0), 0xEF46DB3751D8E999ull);
    EXPECT_EQ(hash_bytes("a", 1), 0xD24EC4F1A98C6E5Bull);
    EXPECT_EQ(hash_bytes("abc", 3), 0x44BC2CF5AD770999ull);
    const std::string fox = "The quick brown fox jumps over the lazy dog";
    EXPECT_EQ(hash_bytes(fox.data(), fox.size()), 0x0B242D361FDA71BCull);
}

// update_u64 and update_str feed the bytes the cache's content hash has always hashed: the value in the
// machine's byte order, and a string's length before its bytes.
TEST(Hash64, U64AndStringsHashTheirBytes) {
    const std::string s = "model.txt text";
    const uint64_t v = 0x0102030405060708ull;
    Hash64 h;
    h.update_u64(v);
    h.update_str(s);
    std::vector<uint8_t> bytes(sizeof v + sizeof(uint64_t) + s.size());
    const uint64_t len = s.size();
    std::memcpy(bytes.data(), &v, sizeof v);
    std::memcpy(bytes.data() + sizeof v, &len, sizeof len);
    std::memcpy(bytes.data() + sizeof v + sizeof len, s.data(), s.size());
    EXPECT_EQ(h.digest(), hash_bytes(bytes.data(), bytes.size()));
}

TEST(Hash64, DigestDoesNotEndTheStream) {
    const std::vector<uint8_t> buf = sanity_buffer(100);
    Hash64 h;
    h.update(buf.data(), 40);
    (void)h.digest();
    h.update(buf.data() + 40, 60);
    EXPECT_EQ(h.digest(), 0x4BFE019CD91D9EA4ull);
}
