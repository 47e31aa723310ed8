// Replays every input the fuzzers found a bug with (tests/fuzz/regressions/<target>/<name>, and the shared
// crashers ../shared/data/crashers/<target>-<name>) through the same entry points the fuzz targets call. An
// input must end in onnxstream::Error with a message, or, when its name starts with "valid_" (an input that
// is fine and used to crash), in success. ONNX crashers also go through the C API's conversion entry.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz_entry.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace onnxstream;

namespace {

fs::path regressions_dir() {
    const char *dir = std::getenv("ONNXSTREAM_FUZZ_REGRESSIONS");
    return dir ? fs::path(dir) : fs::path("tests/fuzz/regressions");
}

std::string read_file(const fs::path &path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const fuzz::Target *find_target(const std::string &name) {
    for (const fuzz::Target &t : fuzz::targets())
        if (name == t.name) return &t;
    return nullptr;
}

void replay(const fuzz::Target &target, const std::string &name, const std::string &bytes) {
    const bool valid = name.rfind("valid_", 0) == 0;
    SCOPED_TRACE(std::string(target.name) + "/" + name);
    try {
        target.run(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
        EXPECT_TRUE(valid) << "accepted an input that is not valid";
    } catch (const Error &e) {
        EXPECT_FALSE(valid) << "rejected a valid input: " << e.what();
        EXPECT_STRNE(e.what(), "") << "an error without a message";
    } catch (const std::exception &e) {
        ADD_FAILURE() << "threw a foreign exception: " << e.what();
    }
}

} // namespace

TEST(FuzzRegressions, SharedCrashers) {
    const char *shared = std::getenv("ONNXSTREAM_SHARED_DIR");
    const fs::path dir = fs::path(shared ? shared : "../shared") / "data" / "crashers";
    if (!fs::is_directory(dir)) GTEST_SKIP() << dir << " is missing";
    size_t replayed = 0;
    for (const auto &entry : fs::directory_iterator(dir)) {
        const std::string name = entry.path().filename().string();
        const size_t dash = name.find('-');
        if (!entry.is_regular_file() || dash == std::string::npos) continue;
        const fuzz::Target *target = find_target(name.substr(0, dash));
        if (!target) continue; // a target this build lacks (no ONNX importer)
        const std::string bytes = read_file(entry.path());
        replay(*target, name, bytes);
        ++replayed;
        if (target->name == std::string("onnx_import")) {
            // Option byte 0: a plain conversion.
            replay(*find_target("convert_capi"), name, std::string(1, '\0') + bytes);
            ++replayed;
        }
    }
    EXPECT_GT(replayed, 0u) << "no <target>-<name> file in " << dir;
    std::cout << replayed << " shared crashers replayed\n";
}

TEST(FuzzRegressions, EveryInputEndsInSuccessOrError) {
    ASSERT_TRUE(fs::is_directory(regressions_dir())) << regressions_dir() << " is missing";
    size_t replayed = 0;
    for (const fuzz::Target &target : fuzz::targets()) {
        const fs::path dir = regressions_dir() / target.name;
        if (!fs::is_directory(dir)) continue;
        for (const auto &entry : fs::directory_iterator(dir)) {
            if (!entry.is_regular_file() || entry.path().filename().string()[0] == '.') continue;
            replay(target, entry.path().filename().string(), read_file(entry.path()));
            ++replayed;
        }
    }
    std::cout << replayed << " regression inputs replayed\n";
}
