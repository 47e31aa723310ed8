// The graphs onnxstream-sd-import fills with a checkpoint's weights: a folder with one subfolder per model,
// each holding model.txt (copied as is) and weights.tsv, which says how to make every weight file model.txt
// references, one line per file:
//
//   <file> TAB <component>:<key> TAB <transform> TAB <dtype> TAB <shape>     a checkpoint tensor
//   <file> TAB = TAB <hex>                                                  a constant (the file's bytes)
//
// component: text_encoder, unet or vae; key: the tensor's diffusers name in it; transform: as_is (same element
// order, any shape of the same count), transpose (2-D [a,b] stored [b,a]) or ohwi ([O,I,H,W] stored
// [O,H,W,I]); dtype: float32 or float16; shape: the file's, "768,3072". '#' lines and empty lines are
// comments.
#pragma once

#include <string>
#include <vector>

#include "graph/model_txt.h"

namespace onnxstream::tools {

enum class WeightTransform { AsIs, Transpose, Ohwi };

// The first `max` of `problems`, each on its own indented line (each line starts with "\n  "), then how
// many more there are: the body of a message that reports every problem at once.
std::string listed_problems(const std::vector<std::string> &problems, size_t max = 30);

// "as_is", "transpose", "ohwi".
const char *transform_name(WeightTransform transform);

struct GraphWeight {
    std::string file;          // in the model folder: a plain name
    int line = 0;              // in weights.tsv
    bool constant = false;
    std::string bytes;         // a constant's bytes
    std::string key;           // "unet:conv_in.weight"
    WeightTransform transform = WeightTransform::AsIs;
    DType dtype = DType::F32;  // F32 or F16
    Shape shape;               // the file's
};

struct GraphModel {
    std::string name; // the subfolder's name: "unet_fp16"
    std::string dir;  // its path
    std::vector<GraphWeight> weights;
};

// Parse weights.tsv text; `source` names it in messages. Throws INVALID_MODEL "source:line: reason" for a
// malformed line or a file named twice.
std::vector<GraphWeight> parse_weights_tsv(const std::string &text, const std::string &source);

// Checks that `weights` makes every weight file `model` references with the dtype and shape it is
// referenced with (for a Conv weight "x_nchw.bin", x_nchw.bin or its OHWI twin x_nhwc.bin is enough, as
// for the engine) and no file it does not reference. Throws INVALID_MODEL naming the lines.
void check_weights_match_model(const std::vector<GraphWeight> &weights, const std::string &tsv_source,
                               const ModelText &model, const std::string &model_source);

// Every subfolder of `dir` holding both model.txt and weights.tsv, sorted by name, parsed and checked.
// Throws IO (dir unreadable), INVALID_ARGUMENT (no such subfolder) or as above.
std::vector<GraphModel> read_graphs(const std::string &dir);

} // namespace onnxstream::tools
