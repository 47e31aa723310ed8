#include "util/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "util/checked.h"
#include "util/error.h"

namespace onnxstream::tools {

namespace {
struct DescrMap {
    const char *descr;
    onnxstream_dtype_t dtype;
};
const DescrMap kDescrs[] = {
    {"<f4", ONNXSTREAM_DTYPE_FLOAT32}, {"<f2", ONNXSTREAM_DTYPE_FLOAT16}, {"<i8", ONNXSTREAM_DTYPE_INT64},
    {"|u1", ONNXSTREAM_DTYPE_UINT8},   {"|i1", ONNXSTREAM_DTYPE_INT8},    {"<i4", ONNXSTREAM_DTYPE_INT32},
    {"|b1", ONNXSTREAM_DTYPE_BOOL},    {"<f8", ONNXSTREAM_DTYPE_FLOAT64}, {"<i2", ONNXSTREAM_DTYPE_INT16},
    {"<u2", ONNXSTREAM_DTYPE_UINT16},  {"<u4", ONNXSTREAM_DTYPE_UINT32},  {"<u8", ONNXSTREAM_DTYPE_UINT64},
};

[[noreturn]] void bad(const std::string &source, const std::string &what) {
    throw Error(ONNXSTREAM_ERR_INVALID_ARGUMENT, source + ": " + what);
}

// The text after 'key': in the header dict: a (tuple), a 'string' or a bare word up to ',' or '}'.
std::string header_value(const std::string &header, const std::string &key, const std::string &source) {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) bad(source, ".npy header has no '" + key + "'");
    size_t colon = header.find(':', k + key.size() + 2);
    size_t start = colon == std::string::npos ? colon : header.find_first_not_of(' ', colon + 1);
    if (start == std::string::npos) bad(source, ".npy header has no value for '" + key + "'");
    char open = header[start];
    size_t end = open == '(' ? header.find(')', start) : open == '\'' ? header.find('\'', start + 1)
                                                                      : header.find_first_of(",}", start);
    if (end == std::string::npos) bad(source, ".npy header value of '" + key + "' is not terminated");
    if (open == '(' || open == '\'') return header.substr(start + 1, end - start - 1);
    size_t last = header.find_last_not_of(' ', end - 1);
    return header.substr(start, last == std::string::npos || last < start ? 0 : last + 1 - start);
}

uint64_t parse_dim(const std::string &part, const std::string &source) {
    size_t b = part.find_first_not_of(' '), e = part.find_last_not_of(' ');
    std::string digits = part.substr(b, e + 1 - b);
    if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos)
        bad(source, ".npy shape entry '" + digits + "' is not a non-negative integer");
    return std::stoull(digits);
}
} // namespace

NpyArray parse_npy(const std::string &bytes, const std::string &source) {
    if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) bad(source, "not a .npy file");
    const unsigned char *b = reinterpret_cast<const unsigned char *>(bytes.data());
    const unsigned major = b[6];
    if (major < 1 || major > 3) bad(source, "unsupported .npy format version " + std::to_string(major));
    size_t header_len = 0, offset = 0;
    if (major == 1) {
        header_len = b[8] | (b[9] << 8);
        offset = 10;
    } else {
        if (bytes.size() < 12) bad(source, "truncated .npy header");
        header_len = b[8] | (b[9] << 8) | (b[10] << 16) | (static_cast<uint32_t>(b[11]) << 24);
        offset = 12;
    }
    if (header_len > (1u << 20) || header_len > bytes.size() - offset)
        bad(source, "bad .npy header length " + std::to_string(header_len));
    const std::string header = bytes.substr(offset, header_len);
    offset += header_len;
    NpyArray a;
    std::string descr = header_value(header, "descr", source);
    bool found = false;
    for (const auto &d : kDescrs)
        if (descr == d.descr) {
            a.dtype = d.dtype;
            found = true;
        }
    if (!found) bad(source, "unsupported .npy dtype '" + descr + "'");
    if (header_value(header, "fortran_order", source) != "False")
        bad(source, "Fortran-ordered .npy arrays are not supported");
    std::string shape = header_value(header, "shape", source);
    size_t pos = 0;
    const uint64_t esize = onnxstream_dtype_size(a.dtype);
    const uint64_t data_bytes = bytes.size() - offset;
    uint64_t n = 1;
    while (pos < shape.size()) {
        size_t end = shape.find(',', pos);
        std::string part = shape.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        if (part.find_first_not_of(' ') != std::string::npos) {
            if (a.shape.size() >= 32) bad(source, ".npy shape has more than 32 dimensions");
            uint64_t d = parse_dim(part, source);
            a.shape.push_back(static_cast<int64_t>(d));
            if (!checked::mul(n, d, n) || n > (uint64_t(1) << 60))
                bad(source, ".npy shape (" + shape + ") has too many elements");
        }
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    if (n > data_bytes / esize)
        bad(source, "truncated: expected " + std::to_string(n * esize) + " data bytes, the file holds " +
                        std::to_string(data_bytes));
    a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(offset),
                  bytes.begin() + static_cast<std::ptrdiff_t>(offset + n * esize));
    return a;
}

NpyArray read_npy(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(ONNXSTREAM_ERR_IO, "cannot open " + path);
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw Error(ONNXSTREAM_ERR_IO, "cannot read " + path);
    return parse_npy(text.str(), path);
}

void write_npy(const std::string &path, onnxstream_dtype_t dtype, const std::vector<int64_t> &shape,
               const void *data, size_t bytes) {
    const char *descr = nullptr;
    for (const auto &d : kDescrs)
        if (d.dtype == dtype) descr = d.descr;
    if (!descr) throw std::runtime_error("cannot write dtype to .npy");
    std::string s = "(";
    for (size_t i = 0; i < shape.size(); ++i) s += std::to_string(shape[i]) + (shape.size() == 1 || i + 1 < shape.size() ? "," : "");
    s += ")";
    std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + s + ", }";
    size_t total = 10 + header.size() + 1;
    header.append((64 - total % 64) % 64, ' ');
    header += '\n';
    std::ofstream out(path, std::ios::binary);
    if (!out) throw std::runtime_error("cannot create " + path);
    out.write("\x93NUMPY\x01\x00", 8);
    unsigned char len[2] = {static_cast<unsigned char>(header.size() & 0xFF), static_cast<unsigned char>(header.size() >> 8)};
    out.write(reinterpret_cast<char *>(len), 2);
    out << header;
    out.write(static_cast<const char *>(data), static_cast<std::streamsize>(bytes));
    if (!out) throw std::runtime_error("cannot write " + path);
}

} // namespace onnxstream::tools
