#include "fuzz_entry.h"

#include <cstring>
#include <memory>
#include <stdexcept>

#include "graph/graph.h"
#include "graph/layout_plan.h"
#include "graph/model_txt.h"
#include "graph/planner.h"
#include "exec/range_data.h"
#include "tensor/allocator.h"
#include "tensor/float8.h"
#include "tensor/half.h"
#include "util/npy.h"
#include "util/error.h"
#include "weights/safetensors.h"
#include "onnxstream.h"

#include <nlohmann/json.hpp>

#include "util/checked.h"

#ifdef ONNXSTREAM_WITH_ONNX_IMPORT
#include "onnx/importer.h"
#endif

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <utility>

namespace onnxstream::fuzz {

namespace {

uint64_t fnv1a(const std::string &s) {
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

// Graph inputs get a dtype picked by their name, so the fuzzer reaches every dtype by renaming them.
DType input_dtype(const std::string &name) {
    static const DType kTypes[] = {DType::F32, DType::F32, DType::F16, DType::I64, DType::Bool, DType::U8};
    return kTypes[fnv1a(name) % (sizeof kTypes / sizeof kTypes[0])];
}

// Small integer-ish values from the file name: shapes, axes and indices in the interesting range -2..5.
Tensor synth_constant(const Allocator &alloc, const WeightSpec &spec) {
    if (spec.byte_size() > (64u << 10)) return Tensor();
    Tensor t = make_tensor(alloc, spec.dtype, spec.shape);
    uint64_t h = fnv1a(spec.file);
    const size_t n = static_cast<size_t>(t.numel());
    for (size_t i = 0; i < n; ++i) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        const int v = static_cast<int>((h >> 33) % 8) - 2;
        switch (spec.dtype) {
        case DType::F32: t.data<float>()[i] = static_cast<float>(v); break;
        case DType::F16: t.data<uint16_t>()[i] = float_to_half(static_cast<float>(v)); break;
        case DType::I64: t.data<int64_t>()[i] = v; break;
        case DType::I32: t.data<int32_t>()[i] = v; break;
        case DType::I8: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
        case DType::U8:
        case DType::U4: t.data<uint8_t>()[i] = static_cast<uint8_t>(v + 2); break;
        case DType::I4: t.data<int8_t>()[i] = static_cast<int8_t>(v); break;
        case DType::Bool: t.data<uint8_t>()[i] = static_cast<uint8_t>(v > 0); break;
        case DType::F64: t.data<double>()[i] = v; break;
        case DType::I16: t.data<int16_t>()[i] = static_cast<int16_t>(v); break;
        case DType::U16: t.data<uint16_t>()[i] = static_cast<uint16_t>(v + 2); break;
        case DType::U32: t.data<uint32_t>()[i] = static_cast<uint32_t>(v + 2); break;
        case DType::U64: t.data<uint64_t>()[i] = static_cast<uint64_t>(v + 2); break;
        case DType::BF16: t.data<uint16_t>()[i] = float_to_bfloat16(static_cast<float>(v)); break;
        case DType::F8E4M3FN:
        case DType::F8E4M3FNUZ:
        case DType::F8E5M2:
        case DType::F8E5M2FNUZ: {
            Float8Format f;
            float8_format(spec.dtype, f);
            t.data<uint8_t>()[i] = double_to_float8(v, f, true);
            break;
        }
        }
    }
    return t;
}

// Fills a weight like synth_constant does, through the C API's weights provider.
onnxstream_status_t synth_read(void *, const onnxstream_weight_request_t *req, void *dst) {
    uint64_t h = fnv1a(req->file);
    const size_t esize = onnxstream_dtype_size(req->dtype);
    const size_t n = esize ? req->byte_size / esize : 0;
    for (size_t i = 0; i < n; ++i) {
        h = h * 6364136223846793005ull + 1442695040888963407ull;
        const int v = static_cast<int>((h >> 33) % 8) - 2;
        switch (req->dtype) {
        case ONNXSTREAM_DTYPE_FLOAT32: static_cast<float *>(dst)[i] = static_cast<float>(v); break;
        case ONNXSTREAM_DTYPE_FLOAT16: static_cast<uint16_t *>(dst)[i] = float_to_half(static_cast<float>(v)); break;
        case ONNXSTREAM_DTYPE_INT64: static_cast<int64_t *>(dst)[i] = v; break;
        case ONNXSTREAM_DTYPE_INT32: static_cast<int32_t *>(dst)[i] = v; break;
        case ONNXSTREAM_DTYPE_INT8: static_cast<int8_t *>(dst)[i] = static_cast<int8_t>(v); break;
        case ONNXSTREAM_DTYPE_UINT8: static_cast<uint8_t *>(dst)[i] = static_cast<uint8_t>(v + 2); break;
        case ONNXSTREAM_DTYPE_BOOL: static_cast<uint8_t *>(dst)[i] = static_cast<uint8_t>(v > 0); break;
        default: std::memset(dst, 0, req->byte_size); return ONNXSTREAM_OK;
        }
    }
    return ONNXSTREAM_OK;
}

[[noreturn]] void fail_with(onnxstream_status_t status, const char *message) {
    throw Error(status, *message ? message : "(no message)");
}

// A scratch folder per process for the conversion target (libFuzzer runs one input at a time).
const std::string &scratch_dir() {
    static const std::string dir = [] {
        const char *tmp = std::getenv("TMPDIR");
        std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/onnxstream-fuzz-XXXXXX";
        if (!::mkdtemp(templ.data())) throw std::logic_error("cannot create a scratch folder for convert_capi");
        return templ;
    }();
    return dir;
}

void remove_tree(const std::string &path) {
    if (DIR *d = ::opendir(path.c_str())) {
        while (const dirent *e = ::readdir(d)) {
            const std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            const std::string child = path + "/" + name;
            struct stat st;
            if (::lstat(child.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
                remove_tree(child);
            else
                ::unlink(child.c_str());
        }
        ::closedir(d);
    }
    ::rmdir(path.c_str());
}

bool folder_is_empty(const std::string &path) {
    DIR *d = ::opendir(path.c_str());
    if (!d) return true;
    size_t n = 0;
    while (const dirent *e = ::readdir(d)) n += std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..");
    ::closedir(d);
    return n == 0;
}

} // namespace

void model_txt(const uint8_t *data, size_t size) {
    if (size > kMaxInputBytes) return;
    const std::string text(reinterpret_cast<const char *>(data), size);
    const std::string source = "fuzz/model.txt";
    ModelText parsed = parse_model_txt(text, source);
    if (write_model_txt(parsed) != text)
        throw std::logic_error("model.txt round trip: write_model_txt(parse_model_txt(text)) != text");
    Graph graph(std::move(parsed), source);
    std::vector<TensorInfo> infos;
    for (int v : graph.inputs()) {
        const Value &value = graph.values()[static_cast<size_t>(v)];
        infos.push_back(TensorInfo{input_dtype(value.name), value.declared_shape, {}});
    }
    Allocator alloc;
    Plan plan = make_plan(graph, infos, [&](const WeightSpec &spec) { return synth_constant(alloc, spec); });
    plan_layouts(graph, plan);
}

void npy(const uint8_t *data, size_t size) {
    if (size > kMaxInputBytes) return;
    tools::NpyArray a = tools::parse_npy(std::string(reinterpret_cast<const char *>(data), size), "fuzz.npy");
    uint64_t n = 1;
    for (int64_t d : a.shape) n *= static_cast<uint64_t>(d);
    if (a.data.size() != n * dtype_size(static_cast<DType>(a.dtype)))
        throw std::logic_error("parse_npy: the data size does not match the shape");
}

void range_data(const uint8_t *data, size_t size) {
    if (size > kMaxInputBytes) return;
    parse_range_data(std::string(reinterpret_cast<const char *>(data), size), "fuzz/range_data.txt");
}

namespace {

// What an accepted safetensors index must agree with: the header as a JSON document (every entry but the
// metadata is a tensor with its dtype, shape and range; the metadata is a map of strings), each byte count
// the dtype times the shape, the ranges tiling the data up to the end of the file.
void check_safetensors_index(const SafetensorsIndex &index, const char *header, size_t header_bytes,
                             uint64_t file_size) {
    using json = nlohmann::json;
    const uint64_t data_start = 8 + static_cast<uint64_t>(header_bytes);
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    size_t tensors = 0;
    try {
        const json doc = json::parse(header, header + header_bytes);
        for (const auto &[name, entry] : doc.items()) {
            if (name == "__metadata__") {
                if (entry.get<std::map<std::string, std::string>>() != index.metadata())
                    throw std::logic_error("safetensors: the metadata differs from the header's");
                continue;
            }
            ++tensors;
            const StoredTensor *t = index.find(name);
            if (!t) throw std::logic_error("safetensors: tensor '" + name + "' of the header is not in the index");
            const auto offsets = entry.at("data_offsets").get<std::vector<uint64_t>>();
            uint64_t bytes = 0;
            if (entry.at("dtype").get<std::string>() != stored_dtype_name(t->dtype) ||
                entry.at("shape").get<std::vector<int64_t>>() != t->shape || offsets.size() != 2 ||
                t->offset != data_start + offsets[0] || t->bytes != offsets[1] - offsets[0] ||
                !checked::byte_count(t->shape, stored_dtype_size(t->dtype), bytes) || bytes != t->bytes)
                throw std::logic_error("safetensors: tensor '" + name + "' differs from the header's");
            ranges.emplace_back(t->offset, t->offset + t->bytes);
        }
    } catch (const json::exception &e) {
        throw std::logic_error(std::string("safetensors: accepted a header the JSON document disagrees with: ") +
                               e.what());
    }
    if (tensors != index.size()) throw std::logic_error("safetensors: the index has tensors the header lacks");
    std::sort(ranges.begin(), ranges.end());
    uint64_t end = data_start;
    for (const auto &[begin, stop] : ranges) {
        if (begin != end) throw std::logic_error("safetensors: accepted ranges with a gap or an overlap");
        end = stop;
    }
    if (end != file_size) throw std::logic_error("safetensors: accepted ranges that do not end at the end of the file");
}

} // namespace

void safetensors(const uint8_t *data, size_t size) {
    if (size > kMaxInputBytes) return;
    const std::string path = "fuzz.safetensors";
    if (size < 8) fail(ONNXSTREAM_ERR_INVALID_MODEL, "safetensors file ", path, ": shorter than the header length");
    uint64_t length = 0;
    for (int i = 7; i >= 0; --i) length = (length << 8) | data[i];
    // A length past the input is passed on as it is: parse() must refuse it from the file size alone, before
    // it reads a byte of the header (a read past the input is a sanitizer report).
    const size_t header_bytes = static_cast<size_t>(std::min<uint64_t>(length, SIZE_MAX));
    const char *header = reinterpret_cast<const char *>(data + 8);
    const SafetensorsIndex index = SafetensorsIndex::parse(header, header_bytes, size, path);
    check_safetensors_index(index, header, header_bytes, size);
}

#ifdef ONNXSTREAM_WITH_ONNX_IMPORT
void onnx_import(const uint8_t *data, size_t size) {
    if (size > kMaxInputBytes) return;
    importer::IrGraph g = importer::load_onnx_bytes(std::string(reinterpret_cast<const char *>(data), size),
                                                    "fuzz.onnx", "/nonexistent-onnxstream-fuzz", {});
    importer::check_input_shapes(g);
    // Folding is capped well below the converter's defaults so that one input stays fast.
    importer::FoldLimits limits;
    limits.small_bytes = 64u << 10;
    limits.max_bytes = 4u << 20;
    importer::ConstantEvaluator evaluator;
    importer::simplify(g, evaluator, limits);
    importer::check_supported(g);
}
#endif

void model_run(const uint8_t *data, size_t size) {
    if (size > kMaxInputBytes) return;
    const std::string text(reinterpret_cast<const char *>(data), size);
    if (text.find('\0') != std::string::npos) return; // load_string takes a C string
    onnxstream_model_options_t options;
    onnxstream_model_options_init(&options);
    options.threads = 1;
    options.max_bytes = 16u << 20;
    onnxstream_model_t *model = nullptr;
    if (onnxstream_model_create(&options, &model) != ONNXSTREAM_OK) throw std::logic_error("model_create failed");
    std::unique_ptr<onnxstream_model_t, void (*)(onnxstream_model_t *)> owner(model, onnxstream_model_destroy);
    onnxstream_weights_provider_t provider{};
    provider.struct_size = sizeof provider;
    provider.read = synth_read;
    if (onnxstream_model_set_weights_provider(model, &provider, nullptr) != ONNXSTREAM_OK)
        throw std::logic_error("set_weights_provider failed");
    onnxstream_status_t s = onnxstream_model_load_string(model, text.c_str(), nullptr);
    if (s != ONNXSTREAM_OK) fail_with(s, onnxstream_model_last_error(model));
    for (size_t i = 0; i < onnxstream_model_input_count(model); ++i) {
        onnxstream_tensor_view_t v{};
        v.struct_size = sizeof v;
        s = onnxstream_model_get_input(model, i, &v);
        if (s != ONNXSTREAM_OK) fail_with(s, onnxstream_model_last_error(model));
        const std::vector<int64_t> shape(v.shape, v.shape + v.rank);
        uint64_t bytes = 0;
        // Inputs beyond the budget could not be pushed anyway; the planner's own checks are what is fuzzed.
        if (!checked::byte_count(shape, onnxstream_dtype_size(v.dtype), bytes) || bytes > options.max_bytes) return;
        std::vector<uint8_t> zeros(static_cast<size_t>(bytes));
        s = onnxstream_model_push_tensor(model, v.name, v.dtype, v.rank, v.shape, zeros.data(), zeros.size());
        if (s != ONNXSTREAM_OK) fail_with(s, onnxstream_model_last_error(model));
    }
    s = onnxstream_model_run(model);
    if (s != ONNXSTREAM_OK) fail_with(s, onnxstream_model_last_error(model));
}

#ifdef ONNXSTREAM_WITH_ONNX_IMPORT
void convert_capi(const uint8_t *data, size_t size) {
    if (size < 1 || size > kMaxInputBytes) return;
    const std::string dir = scratch_dir();
    const std::string onnx_path = dir + "/model.onnx", out = dir + "/out";
    remove_tree(out);
    if (FILE *f = std::fopen(onnx_path.c_str(), "wb")) {
        const bool ok = std::fwrite(data + 1, 1, size - 1, f) == size - 1;
        if (std::fclose(f) != 0 || !ok) throw std::logic_error("cannot write the fuzz input to " + onnx_path);
    } else {
        throw std::logic_error("cannot write the fuzz input to " + onnx_path);
    }
    onnxstream_convert_options_t o;
    onnxstream_convert_options_init(&o);
    o.fp16 = data[0] & 1;
    o.keep_fp32_list = (data[0] & 2) ? "*" : nullptr;
    o.quantize = (data[0] & 4) ? 1 : 0;
    const char *const shapes[] = {"x=1,3,8,8", nullptr};
    o.input_shapes = (data[0] & 8) ? shapes : nullptr;
    const onnxstream_status_t s = onnxstream_convert_onnx(onnx_path.c_str(), out.c_str(), &o);
    const std::string message = onnxstream_last_error();
    struct stat st;
    const bool written = ::stat((out + "/model.txt").c_str(), &st) == 0;
    if (s == ONNXSTREAM_OK) {
        remove_tree(out);
        if (!written) throw std::logic_error("convert_onnx succeeded without writing model.txt");
        return;
    }
    if (!folder_is_empty(out)) throw std::logic_error("a failed conversion left files in the output folder");
    // Only the scratch folder's own two entries may remain (a failure leaves no temporary sibling).
    size_t entries = 0;
    if (DIR *d = ::opendir(dir.c_str())) {
        while (const dirent *e = ::readdir(d)) entries += std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..");
        ::closedir(d);
    }
    if (entries > 2) throw std::logic_error("a failed conversion left a temporary folder behind");
    fail_with(s, message.c_str());
}
#endif

const std::vector<Target> &targets() {
    static const std::vector<Target> list = {
        {"model_txt", model_txt},
        {"npy", npy},
        {"range_data", range_data},
        {"safetensors", safetensors},
        {"model_run", model_run},
#ifdef ONNXSTREAM_WITH_ONNX_IMPORT
        {"onnx_import", onnx_import},
        {"convert_capi", convert_capi},
#endif
    };
    return list;
}

} // namespace onnxstream::fuzz
