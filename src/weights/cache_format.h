// The weights cache's file format (weight_cache.h describes the file and when it is rebuilt): a header
// page, the prepared weights, then an index of entries. Everything is in the writing machine's byte order;
// the header records it, and a file from another byte order is rebuilt rather than read.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace onnxstream::weight_cache {

// Bump when the file layout (header, index encoding) changes.
constexpr uint32_t kWeightCacheFormatVersion = 1;
// Bump when what "prepared" means changes (which weights are widened, transposed, dequantized), i.e.
// whenever the bytes an op receives from the cache would differ.
constexpr uint32_t kWeightCacheLayoutVersion = 2;
constexpr char kMagic[8] = {'O', 'S', 'W', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kEndianMark = 0x01020304u;
constexpr uint64_t kDataStart = 4096; // header page; data starts page-aligned
constexpr uint64_t kHeaderBytes = 96;
// Weights are aligned like tensors and followed by kTensorPadding readable bytes, so served tensors
// are padded (XNNPACK may read XNN_EXTRA_BYTES past its inputs) and need no copy in the executor.
constexpr uint64_t kEntryAlign = kTensorAlignment;
constexpr uint64_t kEntrySlack = kTensorPadding;

enum class Prep : uint32_t { AsIs = 0, WidenF16 = 1, DequantizeToF32 = 2 };

struct Entry {
    std::string file;  // as referenced in model.txt
    Layout wanted = Layout::Plain;
    DType src_dtype = DType::F32; // as model.txt declares it
    Shape shape;
    Prep prep = Prep::AsIs;
    std::string source; // base name of the file actually read (the "_nhwc" twin or the file itself)
    uint64_t offset = 0, bytes = 0;

    DType stored_dtype() const { return prep == Prep::AsIs ? src_dtype : DType::F32; }
};

struct SourceFile {
    std::string name;
    uint64_t size = 0;
    int64_t mtime_ns = 0;
};

inline std::string entry_key(const std::string &file, Layout wanted) {
    return file + '\0' + (wanted == Layout::OHWI ? 'O' : 'P');
}

// Bytes of e's stored form (checked::bytes_or_fail: INVALID_MODEL when they overflow 64 bits).
uint64_t stored_bytes(const Entry &e);

struct Header {
    uint32_t format = 0, engine = 0, layout = 0;
    uint64_t file_size = 0, index_offset = 0, index_size = 0, index_hash = 0, content_hash = 0, text_hash = 0;
};

// kHeaderBytes, ending in a checksum of the fields before it.
std::vector<uint8_t> encode_header(const Header &h);
// Reads kHeaderBytes at `bytes`: false with the reason when the magic, the checksum, the byte order, the
// format versions or the engine version do not match this build.
bool decode_header(const uint8_t *bytes, Header &h, std::string &reason);

// The index: the identity string (xnnpack_identity), the source files with their sizes and mtimes, and the
// entries. decode_index checks every entry against the data area [kDataStart, data_end).
std::vector<uint8_t> encode_index(const std::string &identity, const std::vector<SourceFile> &sources,
                                  const std::vector<Entry> &entries);
bool decode_index(const std::vector<uint8_t> &index, uint64_t data_end, const std::string &identity,
                  std::unordered_map<std::string, Entry> &entries, std::vector<SourceFile> &sources,
                  std::string &reason);

// The prepared-layout version and the loaded XNNPACK library, as recorded in the index.
std::string xnnpack_identity();

} // namespace onnxstream::weight_cache
