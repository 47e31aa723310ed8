// onnxstream-sd-import: make the model folders of examples/sd from a Stable Diffusion 1.5 checkpoint, with no
// Python. The graphs are data (model.txt + weights.tsv per model, installed with the library); this program
// only fills them with the checkpoint's weights (tools/sd_import.h).
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "onnxstream.h"
#include "tools/sd_import.h"

namespace {

const char *kUsage =
    "usage: onnxstream-sd-import [--graphs DIR] [--tokenizer DIR] [--quiet] CHECKPOINT OUT_DIR\n"
    "  Makes the model folders of the sd example (text encoder, UNet, VAE decoders) from a Stable Diffusion 1.5\n"
    "  checkpoint, with no Python: one folder OUT_DIR/NAME (model.txt + model.safetensors) per graph of the\n"
    "  graphs folder. OUT_DIR is created if missing; a model folder already in it is an error (delete it).\n"
    "  CHECKPOINT is a single-file .safetensors checkpoint in the original (ldm / A1111) layout, or a\n"
    "  diffusers folder (text_encoder/model.safetensors, unet/diffusion_pytorch_model.safetensors,\n"
    "  vae/diffusion_pytorch_model.safetensors, or their .fp16.safetensors variants). Tensors may be F32, F16\n"
    "  or BF16. PyTorch pickle files (.ckpt) are not read.\n"
    "  Everything is checked before anything is written: every tensor missing from the checkpoint or of\n"
    "  the wrong shape is listed at once.\n"
    "\n"
    "  --graphs DIR   the graphs: one subfolder per model holding model.txt and weights.tsv (default:\n"
    "                 " ONNXSTREAM_SD_GRAPHS_INSTALLED " if installed, else the source tree's\n"
    "                 examples/sd/graphs/sd15; the environment variable ONNXSTREAM_SD_GRAPHS overrides it)\n"
    "  --tokenizer DIR  also write OUT_DIR/tokenizer (sd's default tokenizer) from a tokenizer folder:\n"
    "                 Hugging Face's vocab.json + merges.txt, or vocab.txt + merges.txt. A diffusers\n"
    "                 checkpoint's own tokenizer/ folder is taken without it\n"
    "  --quiet        no progress lines on stderr\n"
    "  --version      print the version\n"
    "\n"
    "  Exit status: 0 done, 1 error (nothing partial is left in OUT_DIR), 2 usage error.\n";

[[noreturn]] void usage_error(const std::string &message) {
    std::fprintf(stderr, "onnxstream-sd-import: %s (see --help)\n", message.c_str());
    std::exit(2);
}

bool is_dir(const char *path) {
    struct stat st;
    return ::stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

// --graphs, else ONNXSTREAM_SD_GRAPHS, else where `meson install` put the graphs, else the source tree of
// this build (a tool run from its build folder). Empty when none is there.
std::string default_graphs() {
    if (const char *env = std::getenv("ONNXSTREAM_SD_GRAPHS"); env && *env) return env;
    for (const char *path : {ONNXSTREAM_SD_GRAPHS_INSTALLED, ONNXSTREAM_SD_GRAPHS_SOURCE})
        if (is_dir(path)) return path;
    return "";
}

} // namespace

int main(int argc, char **argv) {
    onnxstream::tools::SdImportOptions o;
    bool quiet = false;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (arg == "--version") {
            std::printf("onnxstream-sd-import %s\n", onnxstream_version_string());
            return 0;
        } else if (arg == "--graphs") {
            if (i + 1 >= argc) usage_error("--graphs needs a folder");
            o.graphs = argv[++i];
        } else if (arg.rfind("--graphs=", 0) == 0) {
            o.graphs = arg.substr(9);
        } else if (arg == "--tokenizer") {
            if (i + 1 >= argc) usage_error("--tokenizer needs a folder");
            o.tokenizer = argv[++i];
        } else if (arg == "--quiet" || arg == "-q") {
            quiet = true;
        } else if (arg == "--") {
            positional.insert(positional.end(), argv + i + 1, argv + argc);
            break;
        } else if (arg.size() > 1 && arg[0] == '-') {
            usage_error("unknown option " + arg);
        } else {
            positional.push_back(arg);
        }
    }
    if (positional.size() != 2) usage_error("expected CHECKPOINT and OUT_DIR");
    o.checkpoint = positional[0];
    o.out_dir = positional[1];
    if (o.graphs.empty()) o.graphs = default_graphs();
    if (o.graphs.empty()) {
        std::fprintf(stderr,
                     "onnxstream-sd-import: no graphs folder: neither %s nor %s exists (give --graphs DIR or set "
                     "ONNXSTREAM_SD_GRAPHS)\n",
                     ONNXSTREAM_SD_GRAPHS_INSTALLED, ONNXSTREAM_SD_GRAPHS_SOURCE);
        return 1;
    }
    if (!quiet) o.progress = [](const std::string &line) { std::fprintf(stderr, "onnxstream-sd-import: %s\n", line.c_str()); };
    try {
        onnxstream::tools::sd_import(o);
    } catch (const std::exception &e) { // onnxstream::Error, and the library's own (filesystem, allocation)
        std::fprintf(stderr, "onnxstream-sd-import: %s\n", e.what());
        return 1;
    }
    return 0;
}
