// Packing a model folder's weight files into its one-file store, model.safetensors (weights/safetensors.h).
#pragma once

#include <cstdint>
#include <string>

namespace onnxstream {

struct PackSummary {
    size_t tensors = 0;       // tensors written to the store
    uint64_t data_bytes = 0;  // their bytes
    size_t files_removed = 0; // loose files deleted after the store was complete
};

// Writes folder/model.safetensors holding every weight file folder/model.txt references: each .bin weight
// (both of a Conv weight's "_nchw"/"_nhwc" files when both exist) and each per-channel scales file, named
// by its file name without ".bin", with the dtype and shape model.txt gives (OHWI for "_nhwc"). Tensors
// are grouped by element size, widest first, so each starts at a multiple of its element size; within a
// group they follow model.txt's order, the order a run reads them. The data is copied in pieces of a few
// MiB, never a whole weight at once. The store is written under a temporary name and renamed into place;
// with remove_files the loose files go only after that. Throws INVALID_ARGUMENT (the folder already has a
// store), INVALID_MODEL (model.txt does not parse, or names one file with two types), IO (a file is
// missing, has the wrong size, or cannot be written).
PackSummary pack_weight_folder(const std::string &folder, bool remove_files);

} // namespace onnxstream
