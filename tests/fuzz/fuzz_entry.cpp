#include "fuzz_entry.h"

#include <cstring>
#include <stdexcept>

#include "graph/graph.h"
#include "graph/layout_plan.h"
#include "graph/model_txt.h"
#include "graph/planner.h"
#include "exec/range_data.h"
#include "tensor/allocator.h"
#include "tensor/half.h"
#include "tools/npy.h"
#include "util/error.h"

#ifdef ONNXSTREAM_WITH_ONNX_IMPORT
#include "onnx/importer.h"
#endif

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
        case DType::U8: t.data<uint8_t>()[i] = static_cast<uint8_t>(v + 2); break;
        case DType::Bool: t.data<uint8_t>()[i] = static_cast<uint8_t>(v > 0); break;
        }
    }
    return t;
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

const std::vector<Target> &targets() {
    static const std::vector<Target> list = {
        {"model_txt", model_txt},
        {"npy", npy},
        {"range_data", range_data},
#ifdef ONNXSTREAM_WITH_ONNX_IMPORT
        {"onnx_import", onnx_import},
#endif
    };
    return list;
}

} // namespace onnxstream::fuzz
