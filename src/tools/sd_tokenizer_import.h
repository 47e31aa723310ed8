// The tokenizer of an imported model: sd reads OnnxStream's tokenizer folder (vocab.txt, one token per
// line in id order, and merges.txt), while model hubs ship Hugging Face's (vocab.json, a token -> id map,
// and the same merges.txt). This writes the first from the second, or copies the first.
#pragma once

#include <string>

namespace onnxstream::tools {

// True when `dir` holds a tokenizer this can import: merges.txt with vocab.json or vocab.txt.
bool is_tokenizer_folder(const std::string &dir);

// Writes out_dir/tokenizer (vocab.txt + merges.txt) from the tokenizer folder `dir`, under a temporary name
// renamed into place when complete. vocab.json must map its tokens to the ids 0..N-1, each once, and no token
// may hold a line break (vocab.txt has one per line). Throws INVALID_MODEL (a malformed vocabulary, naming
// the file), INVALID_ARGUMENT (out_dir/tokenizer exists) or IO.
void import_tokenizer(const std::string &dir, const std::string &out_dir);

} // namespace onnxstream::tools
