#include "weights/cache_file_io.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <sys/stat.h>

#include "util/error.h"

namespace onnxstream::weight_cache {

void pwrite_all(int fd, const void *data, uint64_t n, uint64_t offset, const std::string &path) {
    const uint8_t *p = static_cast<const uint8_t *>(data);
    while (n) {
        ssize_t w = ::pwrite(fd, p, static_cast<size_t>(std::min<uint64_t>(n, 1u << 30)), static_cast<off_t>(offset));
        if (w < 0) {
            if (errno == EINTR) continue;
            fail(ONNXSTREAM_ERR_IO, "cannot write weights cache file ", path, ": ", std::strerror(errno));
        }
        p += w;
        n -= static_cast<uint64_t>(w);
        offset += static_cast<uint64_t>(w);
    }
}

bool pread_all(int fd, void *data, uint64_t n, uint64_t offset) {
    uint8_t *p = static_cast<uint8_t *>(data);
    while (n) {
        ssize_t r = ::pread(fd, p, static_cast<size_t>(std::min<uint64_t>(n, 1u << 30)), static_cast<off_t>(offset));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= static_cast<uint64_t>(r);
        offset += static_cast<uint64_t>(r);
    }
    return true;
}

std::string join_path(const std::string &folder, const std::string &file) {
    return folder.back() == '/' ? folder + file : folder + "/" + file;
}

std::string base_name(const std::string &path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool stat_file(const std::string &path, uint64_t &size, int64_t &mtime_ns) {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    size = static_cast<uint64_t>(st.st_size);
    mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    return true;
}

std::shared_ptr<Mapping> map_file(int fd, uint64_t bytes) {
    if (bytes > std::numeric_limits<size_t>::max()) {
        errno = ENOMEM;
        return nullptr;
    }
    auto m = std::make_shared<Mapping>();
    void *p = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return nullptr;
    m->base = p;
    m->bytes = static_cast<size_t>(bytes);
    return m;
}

} // namespace onnxstream::weight_cache
