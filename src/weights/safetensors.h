// One-file weight stores in the safetensors format: an 8-byte little-endian header length N, N bytes of
// JSON naming each tensor's dtype, shape and byte range ("data_offsets", relative to the end of the
// header), then the data. A model folder may hold its weights in model.safetensors instead of one .bin
// file per weight (docs/model-format.md says which name a model.txt reference resolves to).
//
// The header is untrusted input. It is parsed as a stream of JSON events (no document tree, so a 100 MB
// header does not take a gigabyte) and checked the way the format's reference implementation checks it:
// every tensor's byte count matches its dtype and shape, the ranges cover the data without gaps or overlap
// and end at the end of the file, names are unique, the JSON is valid UTF-8. A failure names the file and,
// where there is one, the tensor.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/dtype.h"

namespace onnxstream {

// The element types a store may hold. A BF16 tensor also serves a float32 or float16 weight: readers widen
// it on load.
enum class StoredDType { F32, F16, BF16, I64, I32, I8, U8, Bool, F64, I16, U16, U32, U64, F8_E4M3, F8_E5M2 };

// "F32", "BF16", ...: the format's own names.
const char *stored_dtype_name(StoredDType dtype);
size_t stored_dtype_size(StoredDType dtype);
// How a tensor of an engine dtype is stored. The format has no names for float8e4m3fnuz and float8e5m2fnuz:
// their bytes are stored as U8 and model.txt gives the type. int4 and uint4 are stored one value per byte, as
// I8 and U8.
StoredDType stored_dtype_of(DType dtype);

struct StoredTensor {
    StoredDType dtype = StoredDType::F32;
    std::vector<int64_t> shape;
    uint64_t offset = 0; // from the start of the file
    uint64_t bytes = 0;
};

// The format's reference implementation refuses headers over 100 MB; so do we.
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100000000;
// The store a model folder's weights may live in.
constexpr const char *kWeightStoreFile = "model.safetensors";

class SafetensorsIndex {
public:
    // Parse and check the header. `header` is the N bytes after the length field, `file_size` the whole
    // file's size; `path` names the file in messages. Throws INVALID_MODEL (malformed or inconsistent
    // header) or UNSUPPORTED (a dtype this engine does not read, e.g. F64).
    static SafetensorsIndex parse(const char *header, size_t header_bytes, uint64_t file_size,
                                  const std::string &path);
    // Read and check the header of the file at `path`. Throws IO (unreadable, truncated) or as parse().
    static SafetensorsIndex read(const std::string &path);

    const StoredTensor *find(const std::string &name) const;
    const std::string &path() const { return path_; }
    size_t size() const { return tensors_.size(); }
    // Every tensor, by name (in no particular order).
    const std::unordered_map<std::string, StoredTensor> &tensors() const { return tensors_; }
    // The optional "__metadata__" map (string to string).
    const std::map<std::string, std::string> &metadata() const { return metadata_; }

private:
    std::string path_;
    std::unordered_map<std::string, StoredTensor> tensors_;
    std::map<std::string, std::string> metadata_;
    friend struct SafetensorsParser;
};

// The store of `folder` (folder/model.safetensors), parsed once per file version (path, size, mtime) and
// shared by every reader; nullptr when the folder has none. Throws as SafetensorsIndex::read.
std::shared_ptr<const SafetensorsIndex> open_weight_store(const std::string &folder);

// Elements [first, first + count) of a float tensor of the safetensors file at `path` (its index gave `t`),
// widened to float32 from F32, F16 or BF16; count is cut at the tensor's end, so the default reads it all.
// A range lets callers copy a big tensor in pieces. Throws UNSUPPORTED (another dtype), INVALID_ARGUMENT
// (first past the end) or IO (the file cannot be opened or read: it changed since its header was read).
std::vector<float> read_stored_floats(const std::string &path, const StoredTensor &t, size_t first = 0,
                                      size_t count = SIZE_MAX);

} // namespace onnxstream
