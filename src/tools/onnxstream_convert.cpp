// onnxstream-convert: turn an ONNX model into an OnnxStream model folder (model.txt + .bin weights).
// Written against the public C API (plus the .npy helper for --check), like any user program would be.
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/convert_check.h"
#include "onnxstream.h"

namespace {

const char *kUsage =
    "usage: onnxstream-convert MODEL.onnx OUT_DIR [--fp16] [--keep-fp32 PATTERN]... [--input-shape NAME=d0,d1,...]...\n"
    "                          [--resizable NAME=d0,d1,...]... [--quantize w8|w4|w8a8] [--calibration-inputs DIR] [--report]\n"
    "  Converts MODEL.onnx (external data is read from next to it) into the new folder OUT_DIR.\n"
    "  --fp16                 store float32 weights as float16\n"
    "  --keep-fp32 PATTERN    with --fp16, keep weights whose ONNX name or file name matches this shell\n"
    "                         pattern (fnmatch) in float32, e.g. '*norm*' (repeatable)\n"
    "  --quantize w8          store Conv/Gemm/MatMul weights (>= 4096 elements) as int8 with one float32\n"
    "                         scale per output channel (about 1/4 of their float32 bytes)\n"
    "  --quantize w4          store MatMul/Gemm/GEGLU weights (>= 4096 elements, K a multiple of 32) as int4 in\n"
    "                         blocks of 32 with one bfloat16 scale each (about 1/7 of their float32 bytes;\n"
    "                         they run only on XNNPACK 2024 builds) and the other w8 weights as int8\n"
    "  --quantize w8a8        store the same weights as uint8 with one scale/zero point each and write a\n"
    "                         range_data.txt calibrated on --calibration-inputs, so those ops compute in uint8\n"
    "  --calibration-inputs DIR  calibration runs for w8a8: DIR/<run>/<input name>.npy (float32)\n"
    "  --input-shape N=d,...  fix the shape of input N where the model leaves dimensions symbolic (repeatable)\n"
    "  --resizable N=d,...    also convert for this second shape of input N, and write one model for any size\n"
    "                         following the same rules: each dim that differs becomes '?' (any size), each\n"
    "                         shape computed from the input size a rule over its dims (repeatable; give each\n"
    "                         varying dim a different value, e.g. sample=1,4,96,80 beside 1,4,64,64)\n"
    "  --input-value N=v,...  pin input N to these values: it becomes a constant, and an If that depends on it\n"
    "                         keeps only the branch taken (repeatable; as many values as its shape holds)\n"
    "  --report               print op-type counts before/after simplification, weight bytes, largest weight\n"
    "  --check                after converting, run the folder and ONNX Runtime (Node.js with the npm package\n"
    "                         onnxruntime-node, found through NODE_PATH) on the same inputs and print each\n"
    "                         output's relative L2 and largest absolute error; exit status 1 when one is over\n"
    "                         the tolerance. Inputs: random floats from a fixed seed, integers zero\n"
    "  --check-only           the same check of an existing OUT_DIR, without converting\n"
    "  --check-inputs DIR     take input NAME from DIR/NAME.npy where it exists\n"
    "  --check-tolerance X    largest relative L2 error accepted (default 1e-4; 1e-2 with --fp16 or --quantize,\n"
    "                         0.15 with --quantize w4)\n"
    "  --node PATH            the Node.js executable for --check (default: node)\n"
    "  --weights FORMAT       files (default: one .bin file per weight) or safetensors (one model.safetensors)\n"
    "\n"
    "       onnxstream-convert --pack DIR [--keep-files]\n"
    "  pack the weight files of an existing model folder (OnnxStream's or this tool's) into DIR/model.safetensors\n"
    "  and delete them (--keep-files: leave them)\n";

[[noreturn]] void die(std::string message) {
    // One line: messages relayed from the ONNX library may carry line breaks.
    for (char &c : message)
        if (c == '\n' || c == '\r') c = ' ';
    while (!message.empty() && message.back() == ' ') message.pop_back();
    std::fprintf(stderr, "onnxstream-convert: %s\n", message.c_str());
    std::exit(1);
}

struct Args {
    std::string model, out_dir;
    bool fp16 = false, report = false;
    int quantize = 0;
    std::vector<std::string> keep_fp32, input_shapes, input_values, resizable;
    std::string calibration_inputs;
    bool check = false, check_only = false;
    bool safetensors = false;
    std::string pack_dir;
    bool keep_files = false;
    std::string check_inputs, node = "node";
    double check_tolerance = -1; // from the conversion's options when not given
};

Args parse_args(int argc, char **argv) {
    Args a;
    std::vector<std::string> positional;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) die(arg + " needs a value (see --help)");
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (arg == "--fp16") {
            a.fp16 = true;
        } else if (arg == "--report") {
            a.report = true;
        } else if (arg == "--keep-fp32") {
            a.keep_fp32.push_back(value());
        } else if (arg.rfind("--keep-fp32=", 0) == 0) {
            a.keep_fp32.push_back(arg.substr(12));
        } else if (arg == "--quantize" || arg.rfind("--quantize=", 0) == 0) {
            std::string mode = arg == "--quantize" ? value() : arg.substr(11);
            if (mode == "w8") a.quantize = 1;
            else if (mode == "w8a8") a.quantize = 2;
            else if (mode == "w4") a.quantize = 3;
            else if (mode == "none") a.quantize = 0;
            else die("--quantize " + mode + " is not supported (expected w8, w4, w8a8 or none)");
        } else if (arg == "--calibration-inputs") {
            a.calibration_inputs = value();
        } else if (arg == "--input-shape") {
            a.input_shapes.push_back(value());
        } else if (arg.rfind("--input-shape=", 0) == 0) {
            a.input_shapes.push_back(arg.substr(14));
        } else if (arg == "--resizable") {
            a.resizable.push_back(value());
        } else if (arg.rfind("--resizable=", 0) == 0) {
            a.resizable.push_back(arg.substr(12));
        } else if (arg == "--input-value") {
            a.input_values.push_back(value());
        } else if (arg.rfind("--input-value=", 0) == 0) {
            a.input_values.push_back(arg.substr(14));
        } else if (arg == "--check") {
            a.check = true;
        } else if (arg == "--check-only") {
            a.check = a.check_only = true;
        } else if (arg == "--check-inputs") {
            a.check_inputs = value();
        } else if (arg == "--check-tolerance") {
            const std::string v = value();
            char *end = nullptr;
            a.check_tolerance = std::strtod(v.c_str(), &end);
            if (v.empty() || *end || !(a.check_tolerance >= 0)) die("--check-tolerance expects a number >= 0, got '" + v + "'");
        } else if (arg == "--weights") {
            const std::string format = value();
            if (format == "safetensors") a.safetensors = true;
            else if (format != "files") die("--weights " + format + " is not supported (expected files or safetensors)");
        } else if (arg == "--pack") {
            a.pack_dir = value();
        } else if (arg == "--keep-files") {
            a.keep_files = true;
        } else if (arg == "--node") {
            a.node = value();
        } else if (arg.size() > 1 && arg[0] == '-') {
            die("unknown option " + arg + " (see --help)");
        } else {
            positional.push_back(arg);
        }
    }
    if (!a.pack_dir.empty() || a.keep_files) {
        if (a.pack_dir.empty()) die("--keep-files goes with --pack DIR");
        if (!positional.empty() || argc != (a.keep_files ? 4 : 3)) die("--pack DIR takes no other arguments but --keep-files");
        return a;
    }
    if (positional.size() != 2) {
        std::fputs(kUsage, stderr);
        std::exit(2);
    }
    if (!a.keep_fp32.empty() && !a.fp16) die("--keep-fp32 only makes sense with --fp16");
    if ((a.quantize == 2) != !a.calibration_inputs.empty())
        die("--quantize w8a8 and --calibration-inputs DIR go together");
    if (!a.check && (!a.check_inputs.empty() || a.check_tolerance >= 0))
        die("--check-inputs and --check-tolerance go with --check or --check-only");
    a.model = positional[0];
    a.out_dir = positional[1];
    return a;
}

struct ReportSink {
    bool print_report = false;
};

void on_report(void *user_data, onnxstream_log_level_t level, const char *message) {
    const auto *sink = static_cast<const ReportSink *>(user_data);
    if (level >= ONNXSTREAM_LOG_WARNING)
        std::fprintf(stderr, "onnxstream-convert: warning: %s\n", message);
    else if (sink->print_report)
        std::fputs(message, stdout);
}

} // namespace

// --check / --check-only: returns the exit status.
int check(const Args &args) {
    onnxstream::tools::CheckOptions o;
    o.model_onnx = args.model;
    o.folder = args.out_dir;
    o.input_shapes = args.input_shapes;
    o.input_values = args.input_values;
    o.inputs_dir = args.check_inputs;
    o.node = args.node;
    o.tolerance = args.check_tolerance >= 0     ? args.check_tolerance
                  : args.quantize == 3           ? 0.15
                  : (args.fp16 || args.quantize) ? 1e-2
                                                 : 1e-4;
    try {
        const bool ok = onnxstream::tools::check_conversion(o);
        std::printf("onnxstream-convert: check %s (tolerance %g)\n", ok ? "passed" : "FAILED", o.tolerance);
        return ok ? 0 : 1;
    } catch (const std::exception &e) {
        die(e.what());
    }
}

int main(int argc, char **argv) {
    Args args = parse_args(argc, argv);
    if (!args.pack_dir.empty()) {
        if (onnxstream_pack_weights(args.pack_dir.c_str(), args.keep_files ? 0 : 1) != ONNXSTREAM_OK)
            die(onnxstream_last_error());
        std::printf("onnxstream-convert: packed the weights of %s into %s/model.safetensors\n", args.pack_dir.c_str(),
                    args.pack_dir.c_str());
        return 0;
    }
    if (args.check_only) return check(args);
    std::vector<const char *> keep, shapes;
    for (const auto &p : args.keep_fp32) keep.push_back(p.c_str());
    keep.push_back(nullptr);
    for (const auto &s : args.input_shapes) shapes.push_back(s.c_str());
    shapes.push_back(nullptr);
    std::vector<const char *> values;
    for (const auto &v : args.input_values) values.push_back(v.c_str());
    values.push_back(nullptr);
    std::vector<const char *> resizable;
    for (const auto &r : args.resizable) resizable.push_back(r.c_str());
    resizable.push_back(nullptr);

    ReportSink sink;
    sink.print_report = args.report;
    onnxstream_convert_options_t options;
    onnxstream_convert_options_init(&options);
    options.fp16 = args.fp16 ? 1 : 0;
    options.quantize = args.quantize;
    options.weights_format = args.safetensors ? ONNXSTREAM_WEIGHTS_SAFETENSORS : ONNXSTREAM_WEIGHTS_FILES;
    options.calibration_inputs = args.calibration_inputs.empty() ? nullptr : args.calibration_inputs.c_str();
    options.keep_fp32 = keep.data();
    options.input_shapes = shapes.data();
    options.input_values = values.data();
    options.resizable_shapes = resizable.data();
    options.report_fn = on_report;
    options.report_user_data = &sink;
    onnxstream_status_t status = onnxstream_convert_onnx(args.model.c_str(), args.out_dir.c_str(), &options);
    if (status != ONNXSTREAM_OK) die(onnxstream_last_error());
    if (!args.report) std::printf("onnxstream-convert: wrote %s\n", args.out_dir.c_str());
    return args.check ? check(args) : 0;
}
