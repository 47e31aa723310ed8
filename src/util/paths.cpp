#include "util/paths.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "util/error.h"

namespace onnxstream {

namespace {

bool canonical(const std::string &path, std::string &out) {
    char *resolved = ::realpath(path.c_str(), nullptr);
    if (!resolved) return false;
    out = resolved;
    std::free(resolved);
    return true;
}

// True when some component of `name` below `folder` is a symbolic link (a link to a folder counts too).
bool passes_a_link(const std::string &folder, const std::string &name) {
    std::string path = folder;
    size_t start = 0;
    while (start <= name.size()) {
        size_t end = name.find('/', start);
        if (end == std::string::npos) end = name.size();
        path += "/" + name.substr(start, end - start);
        struct stat st;
        if (::lstat(path.c_str(), &st) != 0) return false;
        if (S_ISLNK(st.st_mode)) return true;
        start = end + 1;
    }
    return false;
}

} // namespace

std::string path_inside_folder(const std::string &folder, const std::string &name, const std::string &what) {
    const std::string base = folder.empty() ? "." : folder;
    const std::string joined = folder.empty() ? name : (folder.back() == '/' ? folder + name : folder + "/" + name);
    if (!passes_a_link(base, name)) return joined;
    std::string real_folder, target;
    if (!canonical(base, real_folder))
        fail(ONNXSTREAM_ERR_IO, what, " ", joined, ": cannot resolve the model folder ", base);
    if (!canonical(joined, target))
        fail(ONNXSTREAM_ERR_IO, what, " ", joined, " is a symbolic link that leads nowhere (a dangling link)");
    const std::string prefix = real_folder == "/" ? "/" : real_folder + "/";
    if (target.compare(0, prefix.size(), prefix) != 0)
        fail(ONNXSTREAM_ERR_IO, what, " ", joined, " is a symbolic link to ", target,
             ", outside the model folder ", real_folder, "; copy the file into the folder instead");
    return target;
}

std::string read_text_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    if (!in || in.bad()) fail(ONNXSTREAM_ERR_IO, "cannot read ", path, ": ", errno ? std::strerror(errno) : "read error");
    return text.str();
}

} // namespace onnxstream
