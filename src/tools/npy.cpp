#include "tools/npy.h"

#include <cstring>
#include <fstream>
#include <stdexcept>

namespace onnxstream::tools {

namespace {
struct DescrMap {
    const char *descr;
    onnxstream_dtype_t dtype;
};
const DescrMap kDescrs[] = {
    {"<f4", ONNXSTREAM_DTYPE_FLOAT32}, {"<f2", ONNXSTREAM_DTYPE_FLOAT16}, {"<i8", ONNXSTREAM_DTYPE_INT64},
    {"|u1", ONNXSTREAM_DTYPE_UINT8},   {"|i1", ONNXSTREAM_DTYPE_INT8},    {"<i4", ONNXSTREAM_DTYPE_INT32},
    {"|b1", ONNXSTREAM_DTYPE_BOOL},
};

std::string header_value(const std::string &header, const std::string &key, const std::string &path) {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) throw std::runtime_error(path + ": .npy header has no '" + key + "'");
    size_t colon = header.find(':', k);
    size_t start = header.find_first_not_of(' ', colon + 1);
    if (header[start] == '(') return header.substr(start + 1, header.find(')', start) - start - 1);
    if (header[start] == '\'') return header.substr(start + 1, header.find('\'', start + 1) - start - 1);
    return header.substr(start, header.find_first_of(",}", start) - start);
}
} // namespace

NpyArray read_npy(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    char magic[8];
    if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
        throw std::runtime_error(path + " is not a .npy file");
    uint32_t header_len = 0;
    if (magic[6] == 1) {
        unsigned char b[2];
        in.read(reinterpret_cast<char *>(b), 2);
        header_len = b[0] | (b[1] << 8);
    } else {
        unsigned char b[4];
        in.read(reinterpret_cast<char *>(b), 4);
        header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
    }
    if (!in || header_len > (1u << 20)) throw std::runtime_error(path + ": bad .npy header");
    std::string header(header_len, '\0');
    in.read(&header[0], header_len);
    NpyArray a;
    std::string descr = header_value(header, "descr", path);
    bool found = false;
    for (const auto &d : kDescrs)
        if (descr == d.descr) {
            a.dtype = d.dtype;
            found = true;
        }
    if (!found) throw std::runtime_error(path + ": unsupported .npy dtype '" + descr + "'");
    if (header_value(header, "fortran_order", path) != "False")
        throw std::runtime_error(path + ": Fortran-ordered .npy arrays are not supported");
    std::string shape = header_value(header, "shape", path);
    size_t pos = 0;
    while (pos < shape.size()) {
        size_t end = shape.find(',', pos);
        std::string part = shape.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        if (part.find_first_not_of(' ') != std::string::npos) a.shape.push_back(std::stoll(part));
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    int64_t n = 1;
    for (int64_t d : a.shape) n *= d;
    size_t bytes = static_cast<size_t>(n) * onnxstream_dtype_size(a.dtype);
    a.data.resize(bytes);
    if (bytes && !in.read(reinterpret_cast<char *>(a.data.data()), static_cast<std::streamsize>(bytes)))
        throw std::runtime_error(path + " is truncated: expected " + std::to_string(bytes) + " data bytes");
    return a;
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
