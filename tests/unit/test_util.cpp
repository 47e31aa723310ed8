#include "test_util.h"

#include <cstring>
#include <fstream>
#include <ftw.h>
#include <sstream>
#include <unistd.h>

namespace onnxstream::test {

const char *status_name(Status status) {
    // The core's name without its prefix: "ONNXSTREAM_ERR_IO" -> "IO", "ONNXSTREAM_OK" -> "OK".
    const char *full = onnxstream::status_name(status);
    for (const char *prefix : {"ONNXSTREAM_ERR_", "ONNXSTREAM_"})
        if (std::strncmp(full, prefix, std::strlen(prefix)) == 0) return full + std::strlen(prefix);
    return full;
}

TempDir::TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/onnxstream-unit-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
    path_ = buf.data();
}

TempDir::~TempDir() {
    ::nftw(
        path_.c_str(), [](const char *p, const struct stat *, int, struct FTW *) { return ::remove(p); }, 16,
        FTW_DEPTH | FTW_PHYS);
}

void write_file(const std::string &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

void write_floats(const std::string &path, const std::vector<float> &values) {
    write_file(path, std::string(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(float)));
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace onnxstream::test
