#include "tools/sd_tokenizer_import.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/paths.h"
#include "util/strings.h"

namespace onnxstream::tools {

namespace fs = std::filesystem;

namespace {

std::string quoted(const std::string &token) { return "\"" + json_escape(token) + "\""; }

bool is_file(const fs::path &p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}

// vocab.json ({"token": id, ...}) as vocab.txt's text: the tokens in id order, one per line.
std::string vocab_lines(const fs::path &json_path) {
    const nlohmann::json vocab = nlohmann::json::parse(read_text_file(json_path.string()), nullptr, /*allow_exceptions=*/false);
    const std::string where = json_path.string();
    if (!vocab.is_object() || vocab.empty())
        fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": not a JSON object mapping tokens to ids");
    std::vector<const std::string *> by_id(vocab.size(), nullptr);
    for (const auto &[token, id] : vocab.items()) {
        if (!id.is_number_unsigned() || id.get<uint64_t>() >= by_id.size())
            fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": token ", quoted(token), " has id ", id.dump(),
                 ", not one of 0..", by_id.size() - 1);
        if (token.find_first_of("\r\n") != std::string::npos)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": token ", quoted(token), " holds a line break");
        const std::string *&slot = by_id[id.get<uint64_t>()];
        if (slot) fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": id ", id.dump(), " is given to two tokens");
        slot = &token;
    }
    std::string lines;
    for (const std::string *token : by_id) lines += *token + "\n";
    return lines;
}

void write_file(const fs::path &p, const std::string &text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
    out.close();
    if (!out) fail(ONNXSTREAM_ERR_IO, "cannot write ", p.string());
}

} // namespace

bool is_tokenizer_folder(const std::string &dir) {
    const fs::path d(dir);
    return is_file(d / "merges.txt") && (is_file(d / "vocab.json") || is_file(d / "vocab.txt"));
}

void import_tokenizer(const std::string &dir, const std::string &out_dir) {
    const fs::path src(dir), final_dir = fs::path(out_dir) / "tokenizer", tmp = fs::path(out_dir) / ".tokenizer.tmp";
    if (!is_tokenizer_folder(dir))
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "tokenizer folder ", dir, " holds no merges.txt with vocab.json or vocab.txt");
    std::error_code ec;
    if (fs::exists(fs::symlink_status(final_dir, ec)))
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, final_dir.string(), " already exists (delete it to import again)");
    // Read and check before anything is written.
    const std::string vocab = is_file(src / "vocab.json") ? vocab_lines(src / "vocab.json") : read_text_file((src / "vocab.txt").string());
    const std::string merges = read_text_file((src / "merges.txt").string());
    fs::remove_all(tmp, ec);
    if (!fs::create_directories(tmp, ec) || ec)
        fail(ONNXSTREAM_ERR_IO, "cannot create ", tmp.string(), ec ? ": " + ec.message() : std::string());
    try {
        write_file(tmp / "vocab.txt", vocab);
        write_file(tmp / "merges.txt", merges);
        fs::rename(tmp, final_dir, ec);
        if (ec) fail(ONNXSTREAM_ERR_IO, "cannot rename ", tmp.string(), " to ", final_dir.string(), ": ", ec.message());
    } catch (...) {
        std::error_code ignored;
        fs::remove_all(tmp, ignored);
        throw;
    }
}

} // namespace onnxstream::tools
