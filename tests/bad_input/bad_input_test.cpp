// Runs every case of corpus.tsv through the public C API, with each built-in weights provider, and
// checks the exact status and that the message contains the expected text (file:line:column for parse
// errors; several fragments separated by '|' must all appear). A case fails at one stage: load, push (the last line of its push.txt) or run; every earlier
// stage must succeed. After the failure the handle must stay sane: a failed load leaves it reusable,
// a failed run leaves no outputs and no intermediates alive.
//
// push.txt, when present, lists the tensors to push: `NAME DTYPE DIMS [BYTES]` (DTYPE a model.txt name
// or a number, DIMS comma-separated or `-` for a scalar, BYTES defaults to the exact size). Without it
// every graph input is pushed as float32 zeros of its declared shape.
// A name ending in @32 or @64 is a case for builds whose size_t has that many bits only (a size that fits a
// 64-bit address space but not a 32-bit one); several such lines may share the folder named before the '@'.
// Set ONNXSTREAM_BAD_INPUT_VERBOSE=1 to print every case's status and message.
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "onnxstream.h"

namespace {

struct Case {
    std::string name, stage, status, message, what;
    std::string folder; // name without its @32/@64 suffix
    unsigned bits = 0;  // 32 or 64 for a case of one size_t width only
};

std::ostream &operator<<(std::ostream &os, const Case &c) { return os << c.name << " (" << c.what << ")"; }

std::string bad_input_dir() {
    const char *dir = std::getenv("ONNXSTREAM_BAD_INPUT_DIR");
    return dir ? dir : "";
}

std::vector<Case> read_manifest() {
    std::vector<Case> cases;
    std::ifstream in(bad_input_dir() + "/corpus.tsv");
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::vector<std::string> f;
        std::stringstream ss(line);
        std::string field;
        while (std::getline(ss, field, '\t')) f.push_back(field);
        if (f.size() != 5) {
            cases.push_back({"malformed_manifest_line", "", "", line, "", "", 0});
            continue;
        }
        Case c{f[0], f[1], f[2], f[3], f[4], f[0], 0};
        const size_t at = c.name.find('@');
        if (at != std::string::npos) {
            c.folder = c.name.substr(0, at);
            c.bits = static_cast<unsigned>(std::atoi(c.name.c_str() + at + 1));
            c.name = c.folder + "_on" + c.name.substr(at + 1); // test names are identifiers
        }
        cases.push_back(c);
    }
    return cases;
}

extern "C" onnxstream_status_t bad_input_push_tensor(onnxstream_model_t *model, const char *name, int dtype,
                                                     size_t rank, const int64_t *shape, const void *data,
                                                     size_t byte_size); // push_int.c

struct Push {
    std::string name;
    int dtype = ONNXSTREAM_DTYPE_FLOAT32; // an int: push.txt may name a value outside the enum on purpose
    std::vector<int64_t> shape;
    size_t bytes = 0;
};

bool parse_dtype(const std::string &text, int &out) {
    for (int d = ONNXSTREAM_DTYPE_FLOAT32; d <= ONNXSTREAM_DTYPE_BOOL; ++d)
        if (text == onnxstream_dtype_name(static_cast<onnxstream_dtype_t>(d))) {
            out = d;
            return true;
        }
    char *end = nullptr;
    long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || v < INT_MIN || v > INT_MAX) return false;
    out = static_cast<int>(v);
    return true;
}

// False if the case has no push.txt.
bool read_pushes(const std::string &dir, std::vector<Push> &pushes) {
    std::ifstream in(dir + "/push.txt");
    if (!in) return false;
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        std::stringstream ss(line);
        std::string dtype, dims;
        Push p;
        ss >> p.name >> dtype >> dims;
        if (!parse_dtype(dtype, p.dtype)) ADD_FAILURE() << "bad dtype in push.txt: " << line;
        if (dims != "-") {
            std::stringstream ds(dims);
            std::string d;
            while (std::getline(ds, d, ',')) p.shape.push_back(std::stoll(d));
        }
        uint64_t n = 1; // unsigned: the corpus has dims whose product overflows on purpose
        for (int64_t d : p.shape) n *= static_cast<uint64_t>(d);
        size_t elem = p.dtype >= ONNXSTREAM_DTYPE_FLOAT32 && p.dtype <= ONNXSTREAM_DTYPE_BOOL
                          ? onnxstream_dtype_size(static_cast<onnxstream_dtype_t>(p.dtype))
                          : 0;
        if (!(ss >> p.bytes)) p.bytes = static_cast<size_t>(n) * elem;
        pushes.push_back(p);
    }
    return true;
}

std::vector<Push> default_pushes(onnxstream_model_t *model) {
    std::vector<Push> pushes;
    for (size_t i = 0; i < onnxstream_model_input_count(model); ++i) {
        onnxstream_tensor_view_t v{};
        v.struct_size = sizeof v;
        if (onnxstream_model_get_input(model, i, &v) != ONNXSTREAM_OK) {
            ADD_FAILURE() << "get_input " << i << ": " << onnxstream_model_last_error(model);
            continue;
        }
        Push p;
        p.name = v.name;
        p.shape.assign(v.shape, v.shape + v.rank);
        int64_t n = 1;
        for (int64_t d : p.shape) n *= d;
        p.bytes = static_cast<size_t>(n) * 4;
        pushes.push_back(p);
    }
    return pushes;
}

const char *const kProviders[] = {"nocache", "prefetch", "mmap", "ram"};

class BadInput : public ::testing::TestWithParam<Case> {
protected:
    void expect_failure(onnxstream_model_t *model, onnxstream_status_t got, const std::string &where) {
        const Case &c = GetParam();
        std::string message = onnxstream_model_last_error(model);
        EXPECT_EQ(onnxstream_status_name(got), "ONNXSTREAM_ERR_" + c.status) << where << ": " << message;
        std::stringstream fragments(c.message);
        std::string fragment;
        while (std::getline(fragments, fragment, '|'))
            EXPECT_NE(message.find(fragment), std::string::npos)
                << where << ": message\n  " << message << "\ndoes not contain\n  " << fragment;
        EXPECT_EQ(message, onnxstream_last_error()) << "the thread's message differs from the model's";
        // A position in model.txt names the real file, not just "model.txt".
        if (c.message.rfind("model.txt:", 0) == 0) {
            EXPECT_NE(message.find(case_dir() + "/model.txt:"), std::string::npos) << message;
        }
        if (std::getenv("ONNXSTREAM_BAD_INPUT_VERBOSE"))
            std::printf("%-32s %-8s %-32s %s\n", c.name.c_str(), where.c_str(), onnxstream_status_name(got),
                        message.c_str());
    }

    std::string case_dir() const { return bad_input_dir() + "/corpus/" + GetParam().folder; }

    void run_with(int provider) {
        const Case &c = GetParam();
        onnxstream_model_options_t options;
        onnxstream_model_options_init(&options);
        options.threads = 1;
        options.provider = provider;
        onnxstream_model_t *model = nullptr;
        ASSERT_EQ(onnxstream_model_create(&options, &model), ONNXSTREAM_OK);

        onnxstream_status_t s = onnxstream_model_load(model, case_dir().c_str());
        if (c.stage == "load") {
            expect_failure(model, s, "load");
            // The handle stays empty and usable.
            EXPECT_EQ(onnxstream_model_input_count(model), 0u);
            EXPECT_EQ(onnxstream_model_load_string(model, "a:Relu*input:x(2)*output:y(2)\n", nullptr), ONNXSTREAM_OK)
                << onnxstream_model_last_error(model);
            onnxstream_model_destroy(model);
            return;
        }
        ASSERT_EQ(s, ONNXSTREAM_OK) << "load should succeed: " << onnxstream_model_last_error(model);

        std::vector<Push> pushes;
        if (!read_pushes(case_dir(), pushes)) pushes = default_pushes(model);
        size_t pushed_bytes = 0;
        for (size_t i = 0; i < pushes.size(); ++i) {
            const Push &p = pushes[i];
            std::vector<unsigned char> zeros(p.bytes + 1, 0);
            s = bad_input_push_tensor(model, p.name.c_str(), p.dtype, p.shape.size(), p.shape.data(),
                                      zeros.data(), p.bytes);
            if (c.stage == "push" && i + 1 == pushes.size()) {
                expect_failure(model, s, "push " + p.name);
            } else {
                EXPECT_EQ(s, ONNXSTREAM_OK) << "push " << p.name << ": " << onnxstream_model_last_error(model);
                pushed_bytes += p.bytes;
            }
        }
        if (c.stage == "push") {
            onnxstream_model_destroy(model);
            return;
        }

        s = onnxstream_model_run(model);
        expect_failure(model, s, "run");
        EXPECT_EQ(onnxstream_model_output_count(model), 0u);
        onnxstream_memory_stats_t stats{};
        stats.struct_size = sizeof stats;
        EXPECT_EQ(onnxstream_model_memory_stats(model, &stats, 0), ONNXSTREAM_OK);
        if (provider != ONNXSTREAM_PROVIDER_RAM) { // the RAM cache may keep weights it read
            EXPECT_EQ(stats.current_bytes, pushed_bytes) << "intermediates survived the failed run";
        }
        // The same failure again: nothing about the first attempt changed the model.
        s = onnxstream_model_run(model);
        expect_failure(model, s, "second run");
        onnxstream_model_destroy(model);
    }
};

TEST_P(BadInput, FailsWithTheRightStatusAndMessage) {
    const Case &c = GetParam();
    ASSERT_TRUE(c.stage == "load" || c.stage == "push" || c.stage == "run") << "bad manifest line: " << c.message;
    ASSERT_TRUE(c.bits == 0 || c.bits == 32 || c.bits == 64) << c.name << ": the suffix must be @32 or @64";
    if (c.bits && c.bits != sizeof(size_t) * CHAR_BIT)
        GTEST_SKIP() << "a case for " << c.bits << "-bit builds; the other width's line checks this one";
    for (int provider = ONNXSTREAM_PROVIDER_NOCACHE; provider <= ONNXSTREAM_PROVIDER_RAM; ++provider) {
        SCOPED_TRACE(std::string("provider ") + kProviders[provider]);
        run_with(provider);
    }
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadInput, ::testing::ValuesIn(read_manifest()),
                         [](const ::testing::TestParamInfo<Case> &info) { return info.param.name; });

TEST(Manifest, EveryCaseFolderIsListedOnce) {
    ASSERT_FALSE(bad_input_dir().empty()) << "ONNXSTREAM_BAD_INPUT_DIR is not set";
    std::vector<Case> cases = read_manifest();
    EXPECT_GE(cases.size(), 35u);
    std::set<std::string> names, listed;
    for (const Case &c : cases) {
        EXPECT_TRUE(names.insert(c.name).second) << c.name << " is listed twice";
        listed.insert(c.folder);
    }
    // Per-width cases come in pairs: every @32 line has its @64 line, so both widths say what happens.
    for (const Case &c : cases) {
        if (c.bits) {
            EXPECT_TRUE(names.count(c.folder + (c.bits == 32 ? "_on64" : "_on32"))) << c.name << " has no twin";
        }
    }
    std::set<std::string> folders;
    DIR *d = opendir((bad_input_dir() + "/corpus").c_str());
    ASSERT_NE(d, nullptr);
    while (dirent *e = readdir(d))
        if (e->d_name[0] != '.') folders.insert(e->d_name);
    closedir(d);
    EXPECT_EQ(folders, listed);
}

} // namespace
