// File helpers of the weights cache (weight_cache.cpp), also used by the weight file and safetensors
// readers: whole-range reads and writes, the identity of a source file (size and mtime), and the
// read-only shared mapping the cache serves tensors from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace onnxstream::weight_cache {

// Closed on every path out of opening or building the cache, including exceptions.
class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd &) = delete;
    Fd &operator=(const Fd &) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

// pwrite/pread loop until all n bytes moved (the calls may move less). pwrite_all throws an IO error
// naming `path`; pread_all returns false on an error or a short file.
void pwrite_all(int fd, const void *data, uint64_t n, uint64_t offset, const std::string &path);
bool pread_all(int fd, void *data, uint64_t n, uint64_t offset);

std::string join_path(const std::string &folder, const std::string &file);
std::string base_name(const std::string &path);
// Size and modification time (ns) of a regular file; false when it is missing or not a regular file.
bool stat_file(const std::string &path, uint64_t &size, int64_t &mtime_ns);

// Unmaps on destruction: served tensors share it, so the mapping lives as long as the last of them.
struct Mapping {
    void *base = nullptr;
    size_t bytes = 0;
    ~Mapping() {
        if (base) ::munmap(base, bytes);
    }
};

// nullptr with errno set on failure; ENOMEM when the file cannot fit the address space (32-bit builds).
std::shared_ptr<Mapping> map_file(int fd, uint64_t bytes);

} // namespace onnxstream::weight_cache
