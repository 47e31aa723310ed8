// The safetensors header reader (weights/safetensors.h): a valid header's index (absolute offsets, shapes,
// dtypes, metadata), then one header per way the format can be broken, each refused with its status and a
// message naming the file and, where there is one, the tensor; then the reader on real files and the
// per-folder store cache.
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "test_util.h"
#include "weights/safetensors.h"

using namespace onnxstream;
using onnxstream::test::expect_error;
using onnxstream::test::TempDir;

namespace {

const std::string kPath = "dir/t.safetensors";

// The parse of a file made of the 8-byte length, `header` and `data_bytes` bytes of data: parse() is given
// the whole file's size, as read() gives it.
SafetensorsIndex parse_header(const std::string &header, uint64_t data_bytes) {
    return SafetensorsIndex::parse(header.data(), header.size(), 8 + header.size() + data_bytes, kPath);
}

// The whole file: little-endian header length, header, data.
std::string file_bytes(const std::string &header, const std::string &data) {
    std::string out(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i, n >>= 8) out[static_cast<size_t>(i)] = static_cast<char>(n & 0xff);
    return out + header + data;
}

void write_bytes(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    ASSERT_TRUE(out) << "cannot write " << path;
}

// Every dtype the engine reads, the metadata first, fields in any order, padding spaces after the object
// (writers pad the header to a multiple of 8).
const std::string kValidHeader = R"({"__metadata__": {"format": "pt", "producer": "onnxstream \u00e9"},
 "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
 "b": {"shape": [4], "dtype": "F16", "data_offsets": [24, 32]},
 "c": {"data_offsets": [32, 34], "dtype": "BF16", "shape": []},
 "d": {"dtype": "I64", "shape": [1, 1], "data_offsets": [34, 42]},
 "e": {"dtype": "I32", "shape": [2], "data_offsets": [42, 50]},
 "f": {"dtype": "I8", "shape": [3], "data_offsets": [50, 53]},
 "g.weight": {"dtype": "U8", "shape": [1], "data_offsets": [53, 54]},
 "h": {"dtype": "BOOL", "shape": [2, 1], "data_offsets": [54, 56]}}   )";
constexpr uint64_t kValidData = 56;

void expect_tensor(const SafetensorsIndex &index, const std::string &name, StoredDType dtype,
                   std::vector<int64_t> shape, uint64_t begin, uint64_t end, uint64_t data_start) {
    SCOPED_TRACE(name);
    const StoredTensor *t = index.find(name);
    ASSERT_NE(t, nullptr);
    EXPECT_STREQ(stored_dtype_name(t->dtype), stored_dtype_name(dtype));
    EXPECT_EQ(t->shape, shape);
    EXPECT_EQ(t->offset, data_start + begin);
    EXPECT_EQ(t->bytes, end - begin);
}

void expect_valid_index(const SafetensorsIndex &index, uint64_t data_start) {
    EXPECT_EQ(index.size(), 8u);
    expect_tensor(index, "a", StoredDType::F32, {2, 3}, 0, 24, data_start);
    expect_tensor(index, "b", StoredDType::F16, {4}, 24, 32, data_start);
    expect_tensor(index, "c", StoredDType::BF16, {}, 32, 34, data_start);
    expect_tensor(index, "d", StoredDType::I64, {1, 1}, 34, 42, data_start);
    expect_tensor(index, "e", StoredDType::I32, {2}, 42, 50, data_start);
    expect_tensor(index, "f", StoredDType::I8, {3}, 50, 53, data_start);
    expect_tensor(index, "g.weight", StoredDType::U8, {1}, 53, 54, data_start);
    expect_tensor(index, "h", StoredDType::Bool, {2, 1}, 54, 56, data_start);
    EXPECT_EQ(index.find("g"), nullptr);
    EXPECT_EQ(index.find("__metadata__"), nullptr) << "the metadata is not a tensor";
    const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"producer", "onnxstream \xc3\xa9"}};
    EXPECT_EQ(index.metadata(), metadata);
}

} // namespace

TEST(Safetensors, DTypeNamesAndSizes) {
    const struct {
        StoredDType dtype;
        const char *name;
        size_t size;
    } expected[] = {{StoredDType::F32, "F32", 4}, {StoredDType::F16, "F16", 2}, {StoredDType::BF16, "BF16", 2},
                    {StoredDType::I64, "I64", 8}, {StoredDType::I32, "I32", 4}, {StoredDType::I8, "I8", 1},
                    {StoredDType::U8, "U8", 1},   {StoredDType::Bool, "BOOL", 1}};
    for (const auto &e : expected) {
        EXPECT_STREQ(stored_dtype_name(e.dtype), e.name);
        EXPECT_EQ(stored_dtype_size(e.dtype), e.size) << e.name;
    }
}

TEST(Safetensors, ValidHeaderGivesAbsoluteOffsetsShapesDTypesAndMetadata) {
    const SafetensorsIndex index = parse_header(kValidHeader, kValidData);
    EXPECT_EQ(index.path(), kPath);
    expect_valid_index(index, 8 + kValidHeader.size());
}

TEST(Safetensors, EmptyHeaderObjectIsAStoreWithoutTensors) {
    const SafetensorsIndex index = parse_header("{}", 0);
    EXPECT_EQ(index.size(), 0u);
    EXPECT_TRUE(index.metadata().empty());
}

TEST(Safetensors, ZeroSizeTensors) {
    // Zero-size tensors take no bytes, wherever they sit: before a tensor at the same offset, or alone.
    const std::string header = R"({"z": {"dtype": "F32", "shape": [0, 5], "data_offsets": [0, 0]},
        "a": {"dtype": "U8", "shape": [3], "data_offsets": [0, 3]},
        "y": {"dtype": "I64", "shape": [7, 0], "data_offsets": [3, 3]}})";
    const SafetensorsIndex index = parse_header(header, 3);
    const uint64_t start = 8 + header.size();
    expect_tensor(index, "z", StoredDType::F32, {0, 5}, 0, 0, start);
    expect_tensor(index, "a", StoredDType::U8, {3}, 0, 3, start);
    expect_tensor(index, "y", StoredDType::I64, {7, 0}, 3, 3, start);

    const std::string alone = R"({"z": {"dtype": "BF16", "shape": [0], "data_offsets": [0, 0]}})";
    const SafetensorsIndex only = parse_header(alone, 0);
    expect_tensor(only, "z", StoredDType::BF16, {0}, 0, 0, 8 + alone.size());
}

TEST(Safetensors, HeaderOfExactlyTheLimitIsRead) {
    std::string header(kMaxSafetensorsHeaderBytes, ' ');
    header.front() = '{';
    header.back() = '}';
    EXPECT_EQ(parse_header(header, 0).size(), 0u);
}

namespace {

struct Rejection {
    const char *name;
    std::string header;
    uint64_t data_bytes;
    Status status;
    std::vector<std::string> message; // every part must appear
};

std::ostream &operator<<(std::ostream &os, const Rejection &r) { return os << r.name; }

// A one-tensor header.
std::string one(const std::string &fields) { return R"({"t": {)" + fields + "}}"; }

const Rejection kRejections[] = {
    {"not_starting_with_brace", R"( {"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"does not start with '{'"}},
    {"top_level_array", "[]", 0, ONNXSTREAM_ERR_INVALID_MODEL, {"does not start with '{'"}},
    {"invalid_json", R"({"t": {"dtype": "U8", "shape": [1], )", 0, ONNXSTREAM_ERR_INVALID_MODEL,
     {"not valid JSON"}},
    {"trailing_garbage", R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}} x)", 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"not valid JSON"}},
    {"second_object", "{} {}", 0, ONNXSTREAM_ERR_INVALID_MODEL, {"not valid JSON"}},
    {"comment", "{/* c */}", 0, ONNXSTREAM_ERR_INVALID_MODEL, {"not valid JSON"}},
    {"invalid_utf8_name", "{\"t\xff\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 1]}}", 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"not valid JSON", "UTF-8"}},
    {"lone_surrogate_escape", R"({"t\ud800": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"not valid JSON"}},
    {"duplicate_tensor",
     R"({"t": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]},
         "t": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})",
     2, ONNXSTREAM_ERR_INVALID_MODEL, {"entry 't' appears twice"}},
    {"duplicate_metadata", R"({"__metadata__": {}, "__metadata__": {}})", 0, ONNXSTREAM_ERR_INVALID_MODEL,
     {"entry '__metadata__' appears twice"}},
    {"duplicate_metadata_key", R"({"__metadata__": {"k": "a", "k": "b"}})", 0, ONNXSTREAM_ERR_INVALID_MODEL,
     {"__metadata__: key 'k' appears twice"}},
    {"duplicate_field", one(R"("dtype": "U8", "shape": [1], "dtype": "U8", "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': field dtype appears twice"}},
    {"unknown_field", one(R"("dtype": "U8", "shape": [1], "offsets": [0, 1])"), 1, ONNXSTREAM_ERR_INVALID_MODEL,
     {"tensor 't': unknown field 'offsets'"}},
    {"missing_data_offsets", one(R"("dtype": "U8", "shape": [1])"), 1, ONNXSTREAM_ERR_INVALID_MODEL,
     {"tensor 't': needs dtype, shape and data_offsets"}},
    {"missing_dtype", one(R"("shape": [1], "data_offsets": [0, 1])"), 1, ONNXSTREAM_ERR_INVALID_MODEL,
     {"tensor 't': needs dtype, shape and data_offsets"}},
    {"tensor_not_an_object", R"({"t": [0, 1]})", 1, ONNXSTREAM_ERR_INVALID_MODEL,
     {"entry 't' is an array, not an object"}},
    {"negative_dim", one(R"("dtype": "U8", "shape": [-1], "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': shape holds a negative number"}},
    {"fractional_dim", one(R"("dtype": "U8", "shape": [1.5], "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': shape holds a fractional"}},
    {"exponent_dim", one(R"("dtype": "U8", "shape": [1e0], "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': shape holds a fractional"}},
    {"dim_past_uint64", one(R"("dtype": "U8", "shape": [18446744073709551616], "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': shape holds a fractional or out-of-range number"}},
    {"dim_past_int64", one(R"("dtype": "U8", "shape": [9223372036854775808], "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': dimension 9223372036854775808 is too large"}},
    {"string_dim", one(R"("dtype": "U8", "shape": ["1"], "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': shape holds a string"}},
    {"nested_arrays", one(R"("dtype": "U8", "shape": [[1]], "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': shape holds an array"}},
    {"dtype_not_a_string", one(R"("dtype": 4, "shape": [1], "data_offsets": [0, 1])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': dtype is a number"}},
    {"dtype_f8e8m0", one(R"("dtype": "F8_E8M0", "shape": [1], "data_offsets": [0, 1])"), 1, ONNXSTREAM_ERR_UNSUPPORTED,
     {"tensor 't': dtype F8_E8M0 is not supported"}},
    {"dtype_f4", one(R"("dtype": "F4", "shape": [2], "data_offsets": [0, 1])"), 1, ONNXSTREAM_ERR_UNSUPPORTED,
     {"tensor 't': dtype F4 is not supported"}},
    {"dtype_unknown", one(R"("dtype": "F33", "shape": [1], "data_offsets": [0, 4])"), 4,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': unknown dtype 'F33'"}},
    {"dtype_lowercase", one(R"("dtype": "f32", "shape": [1], "data_offsets": [0, 4])"), 4,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': unknown dtype 'f32'"}},
    {"byte_count_mismatch", one(R"("dtype": "F32", "shape": [2, 3], "data_offsets": [0, 20])"), 20,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': F32 (2,3) needs 24 bytes but data_offsets give 20"}},
    {"offsets_end_before_begin", one(R"("dtype": "U8", "shape": [0], "data_offsets": [8, 4])"), 8,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': data_offsets [8, 4] end before they begin"}},
    {"offsets_three_numbers", one(R"("dtype": "U8", "shape": [1], "data_offsets": [0, 1, 2])"), 1,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': data_offsets needs 2 numbers, has 3"}},
    {"gap",
     R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
         "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
     12, ONNXSTREAM_ERR_INVALID_MODEL,
     {"tensor 'b': data_offsets begin at 8 but the previous tensor ends at 4", "without gaps or overlap"}},
    {"data_not_from_the_start", one(R"("dtype": "U8", "shape": [1], "data_offsets": [1, 2])"), 2,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': data_offsets begin at 1 but the previous tensor ends at 0"}},
    {"overlap",
     R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
         "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
     12, ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 'b': data_offsets begin at 4 but the previous tensor ends at 8"}},
    {"same_range_twice",
     R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
         "b": {"dtype": "I32", "shape": [1], "data_offsets": [0, 4]}})",
     4, ONNXSTREAM_ERR_INVALID_MODEL, {"data_offsets begin at 0 but the previous tensor ends at 4"}},
    {"short_of_end_of_file", one(R"("dtype": "F32", "shape": [1], "data_offsets": [0, 4])"), 8,
     ONNXSTREAM_ERR_INVALID_MODEL, {"the tensors cover 4 of the file's 8 data bytes"}},
    {"data_without_tensors", "{}", 3, ONNXSTREAM_ERR_INVALID_MODEL,
     {"the tensors cover 0 of the file's 3 data bytes"}},
    {"offsets_past_end_of_file", one(R"("dtype": "F32", "shape": [2], "data_offsets": [0, 8])"), 4,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': data_offsets end past the end of the file (4 data bytes)"}},
    {"huge_offsets",
     one(R"("dtype": "U8", "shape": [0], "data_offsets": [18446744073709551615, 18446744073709551615])"), 0,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': data_offsets begin at 18446744073709551615"}},
    {"metadata_number_value", R"({"__metadata__": {"k": 1}})", 0, ONNXSTREAM_ERR_INVALID_MODEL,
     {"__metadata__ value 'k' is a number, not a string"}},
    {"metadata_object_value", R"({"__metadata__": {"k": {"x": "y"}}})", 0, ONNXSTREAM_ERR_INVALID_MODEL,
     {"__metadata__ value 'k' is an object, not a string"}},
    {"metadata_not_an_object", R"({"__metadata__": "pt"})", 0, ONNXSTREAM_ERR_INVALID_MODEL,
     {"entry '__metadata__' is a string, not an object"}},
    {"element_count_past_int64", one(R"("dtype": "U8", "shape": [4294967296, 4294967296], "data_offsets": [0, 0])"),
     0, ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': U8 (4294967296,4294967296) has more bytes than 64 bits count"}},
    // 2^62 elements fit int64; 2^62 x 4 bytes do not fit uint64.
    {"byte_count_past_uint64", one(R"("dtype": "F32", "shape": [4611686018427387904], "data_offsets": [0, 0])"), 0,
     ONNXSTREAM_ERR_INVALID_MODEL, {"tensor 't': F32 (4611686018427387904) has more bytes than 64 bits count"}},
};

class SafetensorsRejects : public ::testing::TestWithParam<Rejection> {};

} // namespace

TEST_P(SafetensorsRejects, WithStatusAndMessage) {
    const Rejection &r = GetParam();
    const std::string message = expect_error(r.status, [&] { parse_header(r.header, r.data_bytes); });
    EXPECT_CONTAINS(message, "safetensors file " + kPath + ": ");
    for (const std::string &part : r.message) EXPECT_CONTAINS(message, part);
}

INSTANTIATE_TEST_SUITE_P(Header, SafetensorsRejects, ::testing::ValuesIn(kRejections),
                         [](const ::testing::TestParamInfo<Rejection> &info) { return std::string(info.param.name); });

TEST(Safetensors, HeaderLongerThanTheFile) {
    const std::string header = "{}";
    const std::string message = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] {
        SafetensorsIndex::parse(header.data(), header.size(), 9, kPath);
    });
    EXPECT_CONTAINS(message, "safetensors file " + kPath + ": header of 2 bytes does not fit the file's 9 bytes");
    // A file size below the length field itself cannot hold any header.
    expect_error(ONNXSTREAM_ERR_INVALID_MODEL,
                 [&] { SafetensorsIndex::parse(header.data(), header.size(), 4, kPath); });
}

TEST(Safetensors, EmptyHeader) {
    const std::string message =
        expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [] { SafetensorsIndex::parse("", 0, 8, kPath); });
    EXPECT_CONTAINS(message, "does not start with '{'");
}

TEST(Safetensors, HeaderOverTheLimit) {
    std::string header(kMaxSafetensorsHeaderBytes + 1, ' ');
    header.front() = '{';
    header.back() = '}';
    const std::string message = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { parse_header(header, 0); });
    EXPECT_CONTAINS(message, "header of 100000001 bytes is over the format's limit of 100000000");
}

TEST(Safetensors, ReadsARealFile) {
    TempDir dir;
    std::string data(kValidData, '\0');
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
    write_bytes(dir.file("w.safetensors"), file_bytes(kValidHeader, data));
    const SafetensorsIndex index = SafetensorsIndex::read(dir.file("w.safetensors"));
    EXPECT_EQ(index.path(), dir.file("w.safetensors"));
    expect_valid_index(index, 8 + kValidHeader.size());

    // The offsets point at the tensors' bytes in the file.
    std::ifstream in(dir.file("w.safetensors"), std::ios::binary);
    const StoredTensor *f = index.find("f");
    ASSERT_NE(f, nullptr);
    std::string bytes(f->bytes, '\0');
    in.seekg(static_cast<std::streamoff>(f->offset));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_EQ(bytes, data.substr(50, 3));
}

TEST(Safetensors, ReadRefusesBrokenFiles) {
    TempDir dir;
    const std::string path = dir.file("w.safetensors");
    std::string message = expect_error(ONNXSTREAM_ERR_IO, [&] { SafetensorsIndex::read(path); });
    EXPECT_CONTAINS(message, path);

    write_bytes(path, std::string(5, '\0'));
    message = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { SafetensorsIndex::read(path); });
    EXPECT_CONTAINS(message, "5 bytes, shorter than the 8-byte header length");

    // The length is read little-endian: 0x0100 is 256, more than the file holds.
    write_bytes(path, std::string("\x00\x01\0\0\0\0\0\0{}", 10));
    message = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { SafetensorsIndex::read(path); });
    EXPECT_CONTAINS(message, "header of 256 bytes does not fit the file's 10 bytes");

    // Refused from the length field alone, before anything that size is allocated or read.
    std::string over = file_bytes("{}", "");
    over.replace(0, 8, std::string("\x01\xe1\xf5\x05\0\0\0\0", 8)); // 100000001
    write_bytes(path, over);
    message = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { SafetensorsIndex::read(path); });
    EXPECT_CONTAINS(message, "header of 100000001 bytes is over the format's limit");

    write_bytes(path, file_bytes(one(R"("dtype": "F32", "shape": [2], "data_offsets": [0, 8])"), "1234"));
    message = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { SafetensorsIndex::read(path); });
    EXPECT_CONTAINS(message, "safetensors file " + path + ": tensor 't': data_offsets end past the end of the file");
}

TEST(Safetensors, WeightStoreOfAFolder) {
    TempDir dir;
    EXPECT_EQ(open_weight_store(dir.path()), nullptr) << "a folder without model.safetensors has no store";

    const std::string path = dir.file(kWeightStoreFile);
    write_bytes(path, file_bytes(one(R"("dtype": "F32", "shape": [1], "data_offsets": [0, 4])"), "abcd"));
    const std::shared_ptr<const SafetensorsIndex> first = open_weight_store(dir.path());
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->path(), path);
    ASSERT_NE(first->find("t"), nullptr);
    EXPECT_EQ(first->find("t")->bytes, 4u);
    EXPECT_EQ(open_weight_store(dir.path()), first) << "an unchanged file is parsed once";

    // Rewritten with another size: parsed again, and the index describes the new file.
    const std::string rewritten = R"({"u": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}})";
    write_bytes(path, file_bytes(rewritten, std::string(16, 'x')));
    const std::shared_ptr<const SafetensorsIndex> second = open_weight_store(dir.path());
    ASSERT_NE(second, nullptr);
    EXPECT_NE(second, first);
    EXPECT_EQ(second->find("t"), nullptr);
    ASSERT_NE(second->find("u"), nullptr);
    EXPECT_EQ(second->find("u")->bytes, 16u);
    EXPECT_EQ(open_weight_store(dir.path()), second);
    // The index handed out before stays valid for whoever holds it.
    EXPECT_NE(first->find("t"), nullptr);

    // A broken store is an error, not "no store".
    write_bytes(path, file_bytes("{", ""));
    const std::string message = expect_error(ONNXSTREAM_ERR_INVALID_MODEL, [&] { open_weight_store(dir.path()); });
    EXPECT_CONTAINS(message, path);
}

TEST(Safetensors, WeightStoreThatIsNotAFile) {
    TempDir dir;
    ASSERT_EQ(::mkdir(dir.file(kWeightStoreFile).c_str(), 0755), 0);
    const std::string message = expect_error(ONNXSTREAM_ERR_IO, [&] { open_weight_store(dir.path()); });
    EXPECT_CONTAINS(message, "is not a regular file");
}
