// onnxstream-sd-import's work (onnxstream_sd_import.cpp is only its command line): fill the graphs of a
// GRAPHS folder (tools/sd_graphs.h) with the weights of a Stable Diffusion 1.5 checkpoint, giving the model
// folders of examples/sd. No Python: the checkpoint is read with the engine's own safetensors reader.
#pragma once

#include <functional>
#include <string>

namespace onnxstream::tools {

struct SdImportOptions {
    // A single-file .safetensors checkpoint in the original (ldm / A1111) layout, or a diffusers folder
    // (text_encoder/model.safetensors, unet/ and vae/diffusion_pytorch_model.safetensors, or the
    // .fp16.safetensors variants).
    std::string checkpoint;
    std::string graphs;  // one subfolder per model, each with model.txt and weights.tsv
    std::string out_dir; // gets one model folder per graphs subfolder, of the same name; created if missing
    // A tokenizer folder (Hugging Face's vocab.json + merges.txt, or OnnxStream's vocab.txt + merges.txt) to
    // write as out_dir/tokenizer; empty: a diffusers checkpoint's own tokenizer/ folder, if it has one.
    std::string tokenizer;
    // Called with each progress line ("unet_fp16: 686 tensors, 1719.2 MB, 41.3 s"); empty: no progress.
    std::function<void(const std::string &)> progress;
};

// Checks everything first (every key of every weights.tsv is in the checkpoint with a shape that fits, no
// output folder exists yet) and writes nothing when something is wrong; then writes each model folder under
// a temporary name, packs its weights into model.safetensors and renames it into place, so a failure leaves
// no partial folder. Reads one tensor at a time in pieces of at most 1 Mi elements (transposed ones in
// bands of rows), so its memory does not grow with the checkpoint.
// Throws Error: INVALID_ARGUMENT (not a supported checkpoint, keys missing or mis-shaped, an output folder
// exists), UNSUPPORTED (a tensor's dtype), INVALID_MODEL (malformed graphs or checkpoint), IO.
void sd_import(const SdImportOptions &options);

} // namespace onnxstream::tools
