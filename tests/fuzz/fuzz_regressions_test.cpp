// Replays every input the fuzzers found a bug with (tests/fuzz/regressions/<target>/<name>) through the same
// entry points the fuzz targets call. An input must end in onnxstream::Error with a message, or, when its
// name starts with "valid_" (an input that is fine and used to crash), in success.
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

} // namespace

TEST(FuzzRegressions, EveryInputEndsInSuccessOrError) {
    ASSERT_TRUE(fs::is_directory(regressions_dir())) << regressions_dir() << " is missing";
    size_t replayed = 0;
    for (const fuzz::Target &target : fuzz::targets()) {
        const fs::path dir = regressions_dir() / target.name;
        if (!fs::is_directory(dir)) continue;
        for (const auto &entry : fs::directory_iterator(dir)) {
            if (!entry.is_regular_file() || entry.path().filename().string()[0] == '.') continue;
            const std::string name = entry.path().filename().string();
            const std::string bytes = read_file(entry.path());
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
            ++replayed;
        }
    }
    std::cout << replayed << " regression inputs replayed\n";
}
