// onnxstream-run: run any model.txt model on .npy / raw .bin inputs, print timing and memory.
// Written against the public C API only (plus the .npy helper), like any user program would be.
#include <sys/resource.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "onnxstream.h"
#include "tensor/float8.h"
#include "tensor/half.h"
#include "util/strings.h"
#include "util/npy.h"

using onnxstream::json_escape;
using onnxstream::tools::NpyArray;

namespace {

const char *kUsage =
    "usage: onnxstream-run MODEL_DIR_OR_MODEL_TXT [--input NAME=FILE]... [--input-dtype NAME=DTYPE]...\n"
    "                      [--output-dir DIR] [--threads N]\n"
    "                      [--memory-mode min|balanced|max-speed] [--provider nocache|prefetch|mmap|ram]\n"
    "                      [--attention auto|full|sliced|flash] [--attention-slices N] [--chunk-mb N]\n"
    "                      [--kept-kernels-mb N]\n"
    "                      [--cache PATH] [--runs N] [--nchw-only] [--ops-printf] [--json] [--range-data FILE]\n"
    "                      [--calibrate OUT/range_data.txt] [--max-bytes N[K|M|G]]\n"
    "                      [--arithmetic auto|fp32|fp16] [--profile TRACE.json] [--profile-summary]\n"
    "                      [--roofline] [--spin-workers] [--dequantize-weights] [--lora FILE[:SCALE]]...\n"
    "                      [--lora-prefix PREFIX] [--version]\n"
    "  --memory-mode  min: smallest working set; balanced (default); max-speed: keep prepared weights in RAM\n"
    "  --chunk-mb     stream weights bigger than N MiB in chunks (0: never; default from the memory mode)\n"
    "  --kept-kernels-mb  keep up to N MiB of prepared convolutions between runs, chosen after the first run\n"
    "                 (0: none; default from the memory mode: balanced 24, min 0)\n"
    "  --max-bytes    budget of tracked tensor memory (K/M/G = KiB/MiB/GiB); a run over it fails with\n"
    "                 ONNXSTREAM_ERR_OUT_OF_MEMORY instead of being killed by the OS (default: no limit)\n"
    "  --cache        persistent prepared-weights cache file (built on the first run, shared afterwards)\n"
    "  --nchw-only    keep every activation NCHW (no channels-last plan between convolutions)\n"
    "  --spin-workers keep the thread pool's workers spinning between parallel sections: a little faster\n"
    "                 when the threads have the cores to themselves, much slower when other processes run\n"
    "  --dequantize-weights  compute 8-bit weights in float32 even where int8 kernels exist (XNNPACK 2024:\n"
    "                 per-channel int8 MatMul/Gemm/Conv weights otherwise compute in int8)\n"
    "  --arithmetic   how Conv/MatMul/Gemm compute float16 activations: auto (default: fp16 only on CPUs with\n"
    "                 native float16 arithmetic), fp32 (widen), fp16 (XNNPACK's f16 kernels; float32 where\n"
    "                 the CPU has none)\n"
    "  --range-data   activation ranges for static W8A8 (default: range_data.txt in the model folder, if any)\n"
    "  --calibrate    run in float over the given inputs (--runs times), record the activation ranges of\n"
    "                 Conv/MatMul/Gemm inputs and outputs and write them to this file\n"
    "  --profile      write the last run's per-op profile as Chrome trace events (open in Perfetto or\n"
    "                 chrome://tracing): op slices with shapes, FLOPs, weight bytes, weight wait, kernel\n"
    "                 preparation and memory; weight reads on the track of the thread that read them\n"
    "  --profile-summary  print the last run's profile as a table per op type, slowest first\n"
    "  --roofline     measure this machine's float32 GEMM rate and memory bandwidth (about a second) and\n"
    "                 print them; with --profile-summary, each op type's fraction of them\n"
    "  --lora         apply a LoRA (safetensors up/down pairs) while the weights stream, scaled by SCALE\n"
    "                 (default 1); repeatable, the LoRAs add up\n"
    "  --lora-prefix  take only the LoRA modules whose keys start with PREFIX (e.g. lora_unet_, lora_te_)\n"
    "  FILE is .npy (dtype and shape from its header) or raw little-endian .bin (shape from the model's\n"
    "  declaration of NAME; dtype float32, int64, float16 or uint8 chosen by the file size).\n"
    "  --input-dtype  push input NAME's elements as DTYPE, of the same size as the file's (bfloat16 from a\n"
    "                 uint16 .npy of bit patterns, float8e4m3fn and the other float8 types from uint8 ones:\n"
    "                 .npy has neither; int4 from int8 and uint4 from uint8, one value per byte)\n"
    "  Outputs go to --output-dir as .npy: float16, bfloat16 and float8 widened to float32, int4 and\n"
    "  uint4 as int8 and uint8.\n";

struct Args {
    std::string model;
    std::vector<std::pair<std::string, std::string>> inputs;
    std::vector<std::pair<std::string, std::string>> input_dtypes; // --input-dtype NAME=DTYPE
    std::string output_dir;
    int threads = 0;
    int provider = ONNXSTREAM_PROVIDER_AUTO;
    int memory_mode = ONNXSTREAM_MEMORY_BALANCED;
    int attention = ONNXSTREAM_ATTENTION_AUTO;
    int attention_slices = 0;
    int arithmetic = ONNXSTREAM_ARITHMETIC_AUTO;
    long long chunk_mb = -1, kept_kernels_mb = -1;
    uint64_t max_bytes = 0;
    std::string cache, range_data, calibrate;
    std::vector<std::pair<std::string, float>> loras; // file, scale
    std::string lora_prefix;
    int runs = 1;
    bool ops_printf = false;
    bool json = false;
    bool nchw_only = false, spin_workers = false, dequantize_weights = false;
    std::string profile;
    bool profile_summary = false, roofline = false;
};

// The library's warnings (e.g. fp16 arithmetic falling back to float32) go to stderr.
void print_warning(void *, onnxstream_log_level_t, const char *message) {
    std::fprintf(stderr, "onnxstream-run: warning: %s\n", message);
}

[[noreturn]] void die(const std::string &message) {
    std::fprintf(stderr, "onnxstream-run: %s\n", message.c_str());
    std::exit(1);
}

int parse_count(const std::string &flag, const std::string &text, int min) {
    char *end = nullptr;
    long v = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || v < min || v > 100000) die(flag + " expects an integer >= " + std::to_string(min) + ", got '" + text + "'");
    return static_cast<int>(v);
}

// "1500000", "512K", "16M", "2G" (binary units).
uint64_t parse_bytes(const std::string &flag, const std::string &text) {
    char *end = nullptr;
    errno = 0;
    unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    int shift = 0;
    if (end && *end) {
        char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(*end)));
        shift = unit == 'K' ? 10 : unit == 'M' ? 20 : unit == 'G' ? 30 : -1;
        ++end;
    }
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0])) || errno || shift < 0 || *end ||
        (shift && v > (UINT64_MAX >> shift)))
        die(flag + " expects a byte count like 1048576, 512K, 16M or 2G, got '" + text + "'");
    return static_cast<uint64_t>(v) << shift;
}

Args parse_args(int argc, char **argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) die(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--help" || arg == "-h") {
            std::fputs(kUsage, stdout);
            std::exit(0);
        } else if (arg == "--version") {
            std::printf("onnxstream-run %s, kernels: %s\n", onnxstream_version_string(), onnxstream_kernel_library());
            std::exit(0);
        } else if (arg == "--input") {
            std::string v = value();
            size_t eq = v.find('=');
            if (eq == std::string::npos || eq == 0) die("--input expects NAME=FILE, got '" + v + "'");
            a.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        } else if (arg == "--input-dtype") {
            std::string v = value();
            size_t eq = v.find('=');
            if (eq == std::string::npos || eq == 0) die("--input-dtype expects NAME=DTYPE, got '" + v + "'");
            a.input_dtypes.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        } else if (arg == "--output-dir") {
            a.output_dir = value();
        } else if (arg == "--threads") {
            a.threads = parse_count(arg, value(), 0);
        } else if (arg == "--nchw-only") {
            a.nchw_only = true;
        } else if (arg == "--spin-workers") {
            a.spin_workers = true;
        } else if (arg == "--dequantize-weights") {
            a.dequantize_weights = true;
        } else if (arg == "--runs") {
            a.runs = parse_count(arg, value(), 1);
        } else if (arg == "--provider") {
            std::string p = value();
            if (p == "nocache") a.provider = ONNXSTREAM_PROVIDER_NOCACHE;
            else if (p == "prefetch") a.provider = ONNXSTREAM_PROVIDER_PREFETCH;
            else if (p == "mmap") a.provider = ONNXSTREAM_PROVIDER_MMAP;
            else if (p == "ram") a.provider = ONNXSTREAM_PROVIDER_RAM;
            else die("--provider expects nocache, prefetch, mmap or ram, got '" + p + "'");
        } else if (arg == "--memory-mode") {
            std::string m = value();
            if (m == "min") a.memory_mode = ONNXSTREAM_MEMORY_MIN;
            else if (m == "balanced") a.memory_mode = ONNXSTREAM_MEMORY_BALANCED;
            else if (m == "max-speed") a.memory_mode = ONNXSTREAM_MEMORY_MAX_SPEED;
            else die("--memory-mode expects min, balanced or max-speed, got '" + m + "'");
        } else if (arg == "--attention") {
            std::string m = value();
            if (m == "auto") a.attention = ONNXSTREAM_ATTENTION_AUTO;
            else if (m == "full") a.attention = ONNXSTREAM_ATTENTION_FULL;
            else if (m == "sliced") a.attention = ONNXSTREAM_ATTENTION_SLICED;
            else if (m == "flash") a.attention = ONNXSTREAM_ATTENTION_FLASH;
            else die("--attention expects auto, full, sliced or flash, got '" + m + "'");
        } else if (arg == "--arithmetic") {
            std::string m = value();
            if (m == "auto") a.arithmetic = ONNXSTREAM_ARITHMETIC_AUTO;
            else if (m == "fp32") a.arithmetic = ONNXSTREAM_ARITHMETIC_FP32;
            else if (m == "fp16") a.arithmetic = ONNXSTREAM_ARITHMETIC_FP16;
            else die("--arithmetic expects auto, fp32 or fp16, got '" + m + "'");
        } else if (arg == "--attention-slices") {
            a.attention_slices = parse_count(arg, value(), 1);
        } else if (arg == "--chunk-mb") {
            a.chunk_mb = parse_count(arg, value(), 0);
        } else if (arg == "--kept-kernels-mb") {
            a.kept_kernels_mb = parse_count(arg, value(), 0);
        } else if (arg == "--max-bytes") {
            a.max_bytes = parse_bytes(arg, value());
        } else if (arg == "--cache") {
            a.cache = value();
            if (a.cache.empty()) die("--cache expects a file path");
        } else if (arg == "--lora") {
            const std::string v = value();
            // FILE:SCALE when what follows the last ':' is a number; else the whole is the file.
            const size_t colon = v.rfind(':');
            char *end = nullptr;
            const std::string tail = colon == std::string::npos ? "" : v.substr(colon + 1);
            const float scale = tail.empty() ? 0.0f : std::strtof(tail.c_str(), &end);
            if (!tail.empty() && end && *end == '\0') a.loras.emplace_back(v.substr(0, colon), scale);
            else a.loras.emplace_back(v, 1.0f);
            if (a.loras.back().first.empty()) die("--lora expects FILE or FILE:SCALE");
        } else if (arg == "--lora-prefix") {
            a.lora_prefix = value();
        } else if (arg == "--range-data") {
            if (i + 1 >= argc) die("--range-data expects a file path");
            a.range_data = argv[++i];
        } else if (arg == "--calibrate") {
            if (i + 1 >= argc) die("--calibrate expects an output file path");
            a.calibrate = argv[++i];
        } else if (arg == "--ops-printf") {
            a.ops_printf = true;
        } else if (arg == "--json") {
            a.json = true;
        } else if (arg == "--profile") {
            a.profile = value();
            if (a.profile.empty()) die("--profile expects a file path");
        } else if (arg == "--profile-summary") {
            a.profile_summary = true;
        } else if (arg == "--roofline") {
            a.roofline = true;
        } else if (!arg.empty() && arg[0] == '-') {
            die("unknown option " + arg + "\n" + kUsage);
        } else if (a.model.empty()) {
            a.model = arg;
        } else {
            die("unexpected argument '" + arg + "' (the model was already given as '" + a.model + "')");
        }
    }
    if (a.model.empty()) die(std::string("no model given\n") + kUsage);
    return a;
}

void check(onnxstream_model_t *model, onnxstream_status_t s) {
    if (s != ONNXSTREAM_OK) die(onnxstream_model_last_error(model));
}

bool ends_with(const std::string &s, const std::string &suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

NpyArray read_raw(const std::string &path, const onnxstream_tensor_view_t &decl) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) die("cannot open input file " + path);
    size_t size = static_cast<size_t>(in.tellg());
    in.seekg(0);
    int64_t n = 1;
    for (size_t i = 0; i < decl.rank; ++i) n *= decl.shape[i];
    NpyArray a;
    a.shape.assign(decl.shape, decl.shape + decl.rank);
    const onnxstream_dtype_t by_size[] = {ONNXSTREAM_DTYPE_FLOAT32, ONNXSTREAM_DTYPE_INT64, ONNXSTREAM_DTYPE_FLOAT16,
                                          ONNXSTREAM_DTYPE_UINT8};
    bool found = false;
    for (auto d : by_size)
        if (!found && static_cast<size_t>(n) * onnxstream_dtype_size(d) == size) {
            a.dtype = d;
            found = true;
        }
    if (!found)
        die(path + " has " + std::to_string(size) + " bytes, which fits no dtype for input '" + decl.name + "' of " +
            std::to_string(n) + " elements");
    a.data.resize(size);
    in.read(reinterpret_cast<char *>(a.data.data()), static_cast<std::streamsize>(size));
    return a;
}

int print_op(void *, const onnxstream_progress_t *p) {
    // The peak so far rises at the op whose own working set (inputs, outputs, scratch) set it.
    std::printf("[%zu/%zu] %s %s %.3f ms, %.1f MB live, %.1f MB peak\n", p->op_index + 1, p->op_count, p->op_type,
                p->op_name, p->elapsed_us / 1000.0, p->current_bytes / 1e6, p->peak_bytes / 1e6);
    return 0;
}

// The model with the command line's options, loaded, with its range data and calibration set.
onnxstream_model_t *create_model(const Args &args) {
    onnxstream_model_options_t options;
    onnxstream_model_options_init(&options);
    options.threads = args.threads;
    options.provider = args.provider;
    options.memory_mode = args.memory_mode;
    options.attention = args.attention;
    options.attention_slices = args.attention_slices;
    options.arithmetic = args.arithmetic;
    if (args.kept_kernels_mb == 0) options.kept_kernel_bytes = UINT64_MAX;
    else if (args.kept_kernels_mb > 0) options.kept_kernel_bytes = static_cast<uint64_t>(args.kept_kernels_mb) << 20;
    if (args.chunk_mb == 0) options.weight_chunk_bytes = UINT64_MAX;
    else if (args.chunk_mb > 0) options.weight_chunk_bytes = static_cast<uint64_t>(args.chunk_mb) << 20;
    options.max_bytes = args.max_bytes;
    if (!args.cache.empty()) options.cache_path = args.cache.c_str();
    if (args.nchw_only) options.flags |= ONNXSTREAM_FLAG_NCHW_ONLY;
    if (args.spin_workers) options.flags |= ONNXSTREAM_FLAG_SPIN_WORKERS;
    if (args.dequantize_weights) options.flags |= ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS;
    if (!args.profile.empty() || args.profile_summary) options.flags |= ONNXSTREAM_FLAG_PROFILE;
    onnxstream_model_t *model = nullptr;
    if (onnxstream_model_create(&options, &model) != ONNXSTREAM_OK) die(onnxstream_last_error());
    check(model, onnxstream_model_set_log_callback(model, print_warning, nullptr, ONNXSTREAM_LOG_WARNING));
    check(model, onnxstream_model_load(model, args.model.c_str()));
    if (!args.range_data.empty()) check(model, onnxstream_model_read_range_data(model, args.range_data.c_str()));
    for (const auto &[file, scale] : args.loras) {
        size_t taken = 0;
        check(model, onnxstream_model_add_lora(model, file.c_str(), scale, args.lora_prefix.c_str(), &taken));
        std::fprintf(stderr, "onnxstream-run: LoRA %s: %zu module(s), scale %g\n", file.c_str(), taken, scale);
    }
    if (!args.calibrate.empty()) check(model, onnxstream_model_set_calibrate(model, 1));
    return model;
}

void push_inputs(onnxstream_model_t *model, const Args &args) {
    for (const auto &named : args.input_dtypes) {
        bool given = false;
        for (const auto &in : args.inputs) given = given || in.first == named.first;
        if (!given) die("--input-dtype names '" + named.first + "', which no --input gives");
    }
    for (const auto &in : args.inputs) {
        NpyArray a;
        try {
            if (ends_with(in.second, ".npy")) {
                a = onnxstream::tools::read_npy(in.second);
            } else {
                onnxstream_tensor_view_t decl;
                decl.struct_size = sizeof(decl);
                bool found = false;
                for (size_t i = 0; i < onnxstream_model_input_count(model) && !found; ++i) {
                    check(model, onnxstream_model_get_input(model, i, &decl));
                    // NAME may be given escaped ("input_2E_1") or original ("input.1").
                    found = decl.name == in.first || decl.name == onnxstream::escape_name(in.first);
                }
                if (!found) {
                    // Let push_tensor produce the "not an input" message, which lists the inputs.
                    a.shape = {0};
                } else {
                    a = read_raw(in.second, decl);
                }
            }
        } catch (const std::exception &e) {
            die(e.what());
        }
        for (const auto &[name, dtype_text] : args.input_dtypes) {
            if (name != in.first) continue;
            onnxstream_dtype_t as = a.dtype;
            for (int d = 1; onnxstream_dtype_size(static_cast<onnxstream_dtype_t>(d)) != 0; ++d)
                if (dtype_text == onnxstream_dtype_name(static_cast<onnxstream_dtype_t>(d)))
                    as = static_cast<onnxstream_dtype_t>(d);
            if (dtype_text != onnxstream_dtype_name(as)) die("--input-dtype: unknown dtype '" + dtype_text + "'");
            if (onnxstream_dtype_size(as) != onnxstream_dtype_size(a.dtype))
                die("--input-dtype " + name + "=" + dtype_text + ": " + in.second + " holds " +
                    onnxstream_dtype_name(a.dtype) + ", whose elements are not the size of " + dtype_text + "'s");
            a.dtype = as;
        }
        check(model, onnxstream_model_push_tensor(model, in.first.c_str(), a.dtype, a.shape.size(), a.shape.data(),
                                                  a.data.data(), a.data.size()));
    }
}

struct RunReport {
    std::vector<double> times; // seconds per run
    std::string weights_json;  // one object per run for --json
};

// Runs the model --runs times, printing each run's figures unless --json.
RunReport run_model(onnxstream_model_t *model, const Args &args) {
    RunReport report;
    for (int r = 0; r < args.runs; ++r) {
        auto start = std::chrono::steady_clock::now();
        check(model, onnxstream_model_run(model));
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        report.times.push_back(s);
        onnxstream_run_stats_t rs;
        rs.struct_size = sizeof(rs);
        check(model, onnxstream_model_run_stats(model, &rs));
        char buf[512];
        const char *arith = rs.arithmetic == ONNXSTREAM_ARITHMETIC_FP16 ? "fp16" : "fp32";
        std::snprintf(buf, sizeof buf,
                      "{\"bytes_read\":%llu,\"read_s\":%.6f,\"wait_s\":%.6f,\"transposes\":%llu,"
                      "\"arithmetic\":\"%s\",\"fp16_ops\":%llu,\"fp16_fallbacks\":%llu,\"weight_bytes_copied\":%llu,"
                      "\"int8_ops\":%llu,\"packed_weights_mapped\":%llu,\"packed_weights_stored\":%llu,"
                      "\"kept_kernels\":%llu,\"kept_kernel_bytes\":%llu}",
                      static_cast<unsigned long long>(rs.weight_bytes_read), rs.weight_read_us / 1e6,
                      rs.weight_wait_us / 1e6, static_cast<unsigned long long>(rs.layout_transposes), arith,
                      static_cast<unsigned long long>(rs.fp16_ops), static_cast<unsigned long long>(rs.fp16_fallbacks),
                      static_cast<unsigned long long>(rs.weight_bytes_copied),
                      static_cast<unsigned long long>(rs.int8_ops),
                      static_cast<unsigned long long>(rs.packed_weights_mapped),
                      static_cast<unsigned long long>(rs.packed_weights_stored),
                      static_cast<unsigned long long>(rs.kept_kernels),
                      static_cast<unsigned long long>(rs.kept_kernel_bytes));
        report.weights_json += (report.weights_json.empty() ? "" : ",") + std::string(buf);
        if (!args.json) {
            std::string packed;
            if (rs.packed_weights_mapped || rs.packed_weights_stored)
                packed = "; packed weights: " + std::to_string(rs.packed_weights_mapped) + " mapped, " +
                         std::to_string(rs.packed_weights_stored) + " stored";
            if (rs.kept_kernels) {
                char kept[64];
                std::snprintf(kept, sizeof kept, "; %llu kept kernels (%.1f MB)",
                              static_cast<unsigned long long>(rs.kept_kernels), rs.kept_kernel_bytes / 1e6);
                packed += kept;
            }
            std::printf("run %d: %.3f s (weights: %.1f MB read in %.3f s, run waited %.3f s for them; %llu layout "
                        "transposes; arithmetic %s, %llu ops in fp16, %llu in int8%s)\n",
                        r + 1, s, rs.weight_bytes_read / 1e6, rs.weight_read_us / 1e6, rs.weight_wait_us / 1e6,
                        static_cast<unsigned long long>(rs.layout_transposes), arith,
                        static_cast<unsigned long long>(rs.fp16_ops), static_cast<unsigned long long>(rs.int8_ops),
                        packed.c_str());
        }
    }
    return report;
}

// The elements of a float16, bfloat16 or float8 output as float32 (.npy has neither bfloat16 nor float8);
// false for other dtypes.
bool widen_to_float(const onnxstream_tensor_view_t &v, std::vector<float> &f) {
    const auto dtype = static_cast<onnxstream::DType>(v.dtype);
    onnxstream::Float8Format format;
    if (onnxstream::float8_format(dtype, format)) {
        const uint8_t *bytes = static_cast<const uint8_t *>(v.data);
        f.resize(v.byte_size);
        for (size_t k = 0; k < f.size(); ++k) f[k] = onnxstream::float8_to_float(bytes[k], format);
        return true;
    }
    if (v.dtype != ONNXSTREAM_DTYPE_FLOAT16 && v.dtype != ONNXSTREAM_DTYPE_BFLOAT16) return false;
    f.resize(v.byte_size / 2);
    const uint16_t *bits = static_cast<const uint16_t *>(v.data);
    if (v.dtype == ONNXSTREAM_DTYPE_FLOAT16)
        onnxstream::half_to_float_n(bits, f.data(), f.size());
    else
        for (size_t k = 0; k < f.size(); ++k) f[k] = onnxstream::bfloat16_to_float(bits[k]);
    return true;
}

// Writes the outputs into --output-dir (float16, bfloat16 and float8 as float32) and prints them unless --json;
// returns their --json objects.
std::string write_outputs(onnxstream_model_t *model, const Args &args) {
    std::string outputs_json;
    if (!args.output_dir.empty()) ::mkdir(args.output_dir.c_str(), 0755);
    for (size_t i = 0; i < onnxstream_model_output_count(model); ++i) {
        onnxstream_tensor_view_t v;
        v.struct_size = sizeof(v);
        check(model, onnxstream_model_get_output(model, i, &v));
        std::string file;
        onnxstream_dtype_t dtype = v.dtype;
        if (!args.output_dir.empty()) {
            file = args.output_dir + "/" + v.name + ".npy";
            try {
                std::vector<float> f;
                if (widen_to_float(v, f)) {
                    onnxstream::tools::write_npy(file, ONNXSTREAM_DTYPE_FLOAT32, {v.shape, v.shape + v.rank}, f.data(),
                                                 f.size() * 4);
                    dtype = ONNXSTREAM_DTYPE_FLOAT32;
                } else {
                    // int4 and uint4 hold one value per byte: int8 and uint8 in the file.
                    dtype = v.dtype == ONNXSTREAM_DTYPE_INT4    ? ONNXSTREAM_DTYPE_INT8
                            : v.dtype == ONNXSTREAM_DTYPE_UINT4 ? ONNXSTREAM_DTYPE_UINT8
                                                                : v.dtype;
                    onnxstream::tools::write_npy(file, dtype, {v.shape, v.shape + v.rank}, v.data, v.byte_size);
                }
            } catch (const std::exception &e) {
                die(e.what());
            }
        }
        std::string shape;
        for (size_t k = 0; k < v.rank; ++k) shape += (k ? "," : "") + std::to_string(v.shape[k]);
        if (!args.json)
            std::printf("output %s: %s (%s)%s%s\n", v.name, onnxstream_dtype_name(v.dtype), shape.c_str(),
                        file.empty() ? "" : " -> ", file.c_str());
        outputs_json += std::string(outputs_json.empty() ? "" : ",") + "{\"name\":\"" + json_escape(v.name) +
                        "\",\"dtype\":\"" + onnxstream_dtype_name(dtype) + "\",\"shape\":[" + shape + "],\"file\":" +
                        (file.empty() ? "null" : "\"" + json_escape(file) + "\"") + "}";
    }
    return outputs_json;
}

// --roofline, --profile and --profile-summary, after the runs. Reports go to stdout, or to stderr under
// --json (stdout is then one JSON object).
void report_profile(onnxstream_model_t *model, const Args &args) {
    FILE *out = args.json ? stderr : stdout;
    onnxstream_roofline_t peak;
    peak.struct_size = sizeof(peak);
    if (args.roofline) {
        if (onnxstream_measure_roofline(args.threads, &peak) != ONNXSTREAM_OK) die(onnxstream_last_error());
        std::fprintf(out, "roofline: %.1f GFLOP/s float32 GEMM, %.2f GB/s memory (%d threads; 0 = one per core)\n",
                     peak.flops_per_s / 1e9, peak.bytes_per_s / 1e9, args.threads);
    }
    const char *text = nullptr;
    size_t length = 0;
    if (!args.profile.empty()) {
        check(model, onnxstream_model_render_profile(model, ONNXSTREAM_PROFILE_TRACE_JSON, nullptr, &text, &length));
        FILE *f = std::fopen(args.profile.c_str(), "wb");
        if (!f || std::fwrite(text, 1, length, f) != length || std::fclose(f) != 0)
            die("cannot write the profile to " + args.profile + ": " + std::strerror(errno));
        if (!args.json) std::printf("wrote %s\n", args.profile.c_str());
    }
    if (args.profile_summary) {
        check(model, onnxstream_model_render_profile(model, ONNXSTREAM_PROFILE_SUMMARY,
                                                     args.roofline ? &peak : nullptr, &text, &length));
        std::fputs(text, out);
    }
}

} // namespace

int main(int argc, char **argv) {
    Args args = parse_args(argc, argv);
    onnxstream_model_t *model = create_model(args);

    push_inputs(model, args);
    if (args.ops_printf) check(model, onnxstream_model_set_progress_callback(model, print_op, nullptr));

    const RunReport report = run_model(model, args);

    if (!args.calibrate.empty()) {
        check(model, onnxstream_model_write_range_data(model, args.calibrate.c_str()));
        if (!args.json) std::printf("wrote %s\n", args.calibrate.c_str());
    }

    onnxstream_memory_stats_t stats;
    stats.struct_size = sizeof(stats);
    check(model, onnxstream_model_memory_stats(model, &stats, 0));
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    uint64_t peak_rss = static_cast<uint64_t>(usage.ru_maxrss) * 1024;
    report_profile(model, args); // after the RSS reading: the roofline's buffers are not the model's

    const std::string outputs_json = write_outputs(model, args);
    if (args.json) {
        std::string runs;
        for (double t : report.times) runs += (runs.empty() ? "" : ",") + std::to_string(t);
        std::printf("{\"outputs\":[%s],\"runs_s\":[%s],\"peak_rss_bytes\":%llu,\"peak_tensor_bytes\":%llu,"
                    "\"weights\":[%s],\"kernels\":\"%s\"}\n",
                    outputs_json.c_str(), runs.c_str(), static_cast<unsigned long long>(peak_rss),
                    static_cast<unsigned long long>(stats.peak_bytes), report.weights_json.c_str(),
                    json_escape(onnxstream_kernel_library()).c_str());
    } else {
        std::printf("peak RSS: %.1f MB, peak tensor bytes: %.1f MB\n", peak_rss / 1e6, stats.peak_bytes / 1e6);
    }
    onnxstream_model_destroy(model);
    return 0;
}
