#include "weights/lora.h"

#include <algorithm>
#include <cstring>

#include "ops/op.h"
#include "tensor/half.h"
#include "util/checked.h"
#include "util/error.h"
#include "util/strings.h"
#include "weights/safetensors.h"

namespace onnxstream {

struct LoraSet::Delta {
    std::string path, module; // the LoRA file and the module's key (messages)
    StoredTensor up, down;    // [out, rank(, 1, 1)] and [rank, in(, kh, kw)]
    float factor = 1.0f;      // scale * alpha / rank
    LoraTargetKind kind = LoraTargetKind::InOut;
    size_t out = 0, in = 0, rank = 0; // in: every input element of one output (in channels x kernel positions)
};

namespace {

// The parts of one module found in the file.
struct ModuleParts {
    const StoredTensor *up = nullptr, *down = nullptr, *alpha = nullptr;
};

// Key endings of the LoRA forms read: kohya/A1111, diffusers/PEFT, and diffusers' older attention processors
// (`….processor.to_q_lora.up.weight`) and LoRA linear layers (`….q_proj.lora_linear_layer.up.weight`).
struct PartSuffix {
    const char *suffix;
    const StoredTensor *ModuleParts::*part;
};
const PartSuffix kPartSuffixes[] = {
    {".lora_up.weight", &ModuleParts::up}, {".lora_down.weight", &ModuleParts::down},
    {".lora_B.weight", &ModuleParts::up},  {".lora_A.weight", &ModuleParts::down},
    {"_lora.up.weight", &ModuleParts::up}, {"_lora.down.weight", &ModuleParts::down},
    {".lora_linear_layer.up.weight", &ModuleParts::up}, {".lora_linear_layer.down.weight", &ModuleParts::down},
    {".alpha", &ModuleParts::alpha},
};

// A module key or layer path compared with '.' read as '_'.
std::string normalized(std::string s) {
    std::replace(s.begin(), s.end(), '.', '_');
    return s;
}

struct Target {
    std::string file;
    WeightSpec spec;
    LoraTargetKind kind;
};

// The layer path of an op: its name without the last component ("/a/b.0/c/MatMul" is "a_b_0_c").
std::string layer_path(const std::string &op_name) {
    std::string name = unescape_name(op_name), path;
    size_t start = 0;
    std::vector<std::string> parts;
    while (start <= name.size()) {
        size_t slash = name.find('/', start);
        if (slash == std::string::npos) slash = name.size();
        if (slash > start) parts.push_back(name.substr(start, slash - start));
        start = slash + 1;
    }
    if (parts.size() < 2) return "";
    for (size_t i = 0; i + 1 < parts.size(); ++i) path += (path.empty() ? "" : "_") + normalized(parts[i]);
    return path;
}

bool ends_with_part(const std::string &s, const std::string &tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Every weight a LoRA may change, by normalized layer path.
std::map<std::string, std::vector<Target>> lora_targets(const Graph &graph) {
    std::map<std::string, std::vector<Target>> targets;
    auto add = [&](const Node &node, size_t input, const std::string &path, LoraTargetKind kind) {
        if (path.empty() || input >= node.inputs.size() || node.inputs[input].kind != NodeInput::Weight) return;
        const WeightSpec &w = node.inputs[input].weight;
        const size_t rank = w.shape.size();
        if (kind == LoraTargetKind::Kernel ? rank < 3 : rank != 2) return;
        auto &list = targets[path];
        for (const Target &t : list)
            if (t.file == w.file) return;
        list.push_back({w.file, w, kind});
    };
    for (const Node &node : graph.nodes()) {
        const std::string &type = node.line->type, path = layer_path(node.line->name);
        if (type == "MatMul") {
            add(node, 1, path, LoraTargetKind::InOut);
        } else if (type == "Gemm") {
            add(node, 1, path, node.attrs.get_int("transB", 0) ? LoraTargetKind::OutIn : LoraTargetKind::InOut);
        } else if (type == "Conv") {
            add(node, 1, path, LoraTargetKind::Kernel);
        } else if (type == "GegluFeedForward") {
            // The fused feed-forward carries the name of its last layer, diffusers' `ff.net.2`; its first
            // layer (W1, stored transposed) is `ff.net.0.proj`.
            add(node, 3, path, LoraTargetKind::InOut);
            if (ends_with_part(path, "_net_2"))
                add(node, 1, path.substr(0, path.size() - 6) + "_net_0_proj", LoraTargetKind::OutIn);
        }
    }
    return targets;
}

// diffusers' older attention-processor keys name the layer inside the processor: `attn1.processor.to_q(_lora)`
// is `attn1.to_q`, `….to_out(_lora)` is `attn1.to_out.0`.
std::string processor_layer(std::string k) {
    const std::string proc = "_processor_to_";
    const size_t at = k.find(proc);
    if (at == std::string::npos) return k;
    if (ends_with_part(k, "_lora")) k.resize(k.size() - 5);
    k = k.substr(0, at) + "_to_" + k.substr(at + proc.size());
    if (ends_with_part(k, "_to_out")) k += "_0";
    return k;
}

// The targets of a module key: the longest layer path that ends the key at a '_' boundary.
const std::vector<Target> *match_module(const std::map<std::string, std::vector<Target>> &targets,
                                        const std::string &key) {
    const std::string k = processor_layer(normalized(key));
    auto it = targets.find(k);
    if (it != targets.end()) return &it->second;
    for (size_t p = k.find('_'); p != std::string::npos; p = k.find('_', p + 1)) {
        it = targets.find(k.substr(p + 1));
        if (it != targets.end()) return &it->second;
    }
    return nullptr;
}

bool float_stored(StoredDType d) { return d == StoredDType::F32 || d == StoredDType::F16 || d == StoredDType::BF16; }

// Checks up/down against the target weight; fills the delta's sizes. Empty string when they fit, else why not.
std::string fit(const Target &t, const ModuleParts &m, LoraSet::Delta &d) {
    const auto &up = m.up->shape, &down = m.down->shape;
    const Shape &w = t.spec.shape;
    if (up.size() != 2 && !(up.size() == 4 && up[2] == 1 && up[3] == 1))
        return "up is " + shape_str(up) + ", not [out, rank] or [out, rank, 1, 1]";
    if (down.size() < 2 || up[1] != down[0]) return "up " + shape_str(up) + " and down " + shape_str(down) + " disagree on the rank";
    d.out = static_cast<size_t>(up[0]);
    d.rank = static_cast<size_t>(up[1]);
    d.in = static_cast<size_t>(shape_numel(down)) / std::max<size_t>(1, d.rank);
    bool ok = false;
    if (t.kind == LoraTargetKind::InOut) ok = down.size() == 2 && w[0] == down[1] && w[1] == up[0];
    else if (t.kind == LoraTargetKind::OutIn) ok = down.size() == 2 && w[0] == up[0] && w[1] == down[1];
    else {
        // A kernel: down is [rank, in, kh, kw] (a 1x1 kernel's may be [rank, in]).
        Shape want_down = {down[0]};
        want_down.insert(want_down.end(), w.begin() + 1, w.end());
        uint64_t positions = 1;
        for (size_t i = 2; i < w.size(); ++i) positions *= static_cast<uint64_t>(w[i]);
        ok = w[0] == up[0] && (Shape(down.begin(), down.end()) == want_down ||
                               (positions == 1 && down.size() == 2 && down[1] == w[1]));
    }
    if (!ok) return "up " + shape_str(up) + " and down " + shape_str(down) + " do not fit weight " + t.file + " " + shape_str(w);
    if (d.rank == 0) return "its rank is 0";
    return "";
}

std::string listed(const std::vector<std::string> &items) {
    std::string s;
    for (size_t i = 0; i < items.size() && i < 8; ++i) s += (i ? ", " : "") + items[i];
    if (items.size() > 8) s += cat(" and ", items.size() - 8, " more");
    return s;
}

} // namespace

LoraSet::LoraSet() = default;
LoraSet::~LoraSet() = default;

size_t LoraSet::add(const Graph &graph, const std::string &path, float scale, const std::string &key_prefix) {
    const SafetensorsIndex index = SafetensorsIndex::read(path);
    std::map<std::string, ModuleParts> modules;
    std::vector<std::string> unknown;
    for (const auto &[key, tensor] : index.tensors()) {
        if (key.compare(0, key_prefix.size(), key_prefix) != 0) continue;
        bool known = false;
        for (const PartSuffix &p : kPartSuffixes) {
            if (ends_with_part(key, p.suffix)) {
                modules[key.substr(0, key.size() - std::strlen(p.suffix))].*(p.part) = &tensor;
                known = true;
                break;
            }
        }
        if (!known) unknown.push_back(key);
    }
    std::sort(unknown.begin(), unknown.end());
    if (!unknown.empty())
        fail(ONNXSTREAM_ERR_UNSUPPORTED, "LoRA file ", path, ": ", unknown.size(),
             " tensor(s) are not LoRA up/down/alpha tensors (LoHa, LoKr and DoRA are not supported): ", listed(unknown));

    const auto targets = lora_targets(graph);
    std::vector<std::string> unmatched, bad;
    std::map<std::string, std::vector<std::shared_ptr<const Delta>>> added;
    size_t taken = 0;
    for (const auto &[key, m] : modules) {
        if (!m.up || !m.down) {
            bad.push_back(key + " (" + (m.up ? "no down" : "no up") + " weight)");
            continue;
        }
        if (!float_stored(m.up->dtype) || !float_stored(m.down->dtype) || (m.alpha && !float_stored(m.alpha->dtype)) ||
            (m.alpha && shape_numel(m.alpha->shape) != 1)) {
            bad.push_back(key + " (its tensors must be F32, F16 or BF16, alpha one value)");
            continue;
        }
        const std::vector<Target> *found = match_module(targets, key);
        if (!found) {
            unmatched.push_back(key);
            continue;
        }
        for (const Target &t : *found) {
            auto d = std::make_shared<Delta>();
            d->path = path;
            d->module = key;
            d->up = *m.up;
            d->down = *m.down;
            d->kind = t.kind;
            const std::string why = fit(t, m, *d);
            if (!why.empty()) {
                bad.push_back(key + " (" + why + ")");
                continue;
            }
            if (t.spec.quant.present || (t.spec.dtype != DType::F32 && t.spec.dtype != DType::F16))
                fail(ONNXSTREAM_ERR_UNSUPPORTED, "LoRA file ", path, ": module ", key, " changes weight ", t.file,
                     ", which is ",
                     t.spec.quant.blockwise() ? "int4 quantized"
                     : t.spec.quant.present   ? "8-bit quantized"
                                              : dtype_name(t.spec.dtype),
                     "; a LoRA applies to float32 and float16 weights only");
            const float alpha = m.alpha ? read_stored_floats(path, *m.alpha)[0] : static_cast<float>(d->rank);
            d->factor = scale * alpha / static_cast<float>(d->rank);
            added[t.file].push_back(std::move(d));
        }
        ++taken;
    }
    if (!bad.empty())
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "LoRA file ", path, ": ", bad.size(), " module(s) cannot apply: ", listed(bad));
    if (!unmatched.empty())
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "LoRA file ", path, ": ", unmatched.size(),
             " module(s) match no MatMul, Gemm or Conv layer of this model (another base model?): ", listed(unmatched));
    for (auto &[file, list] : added) deltas_[file].insert(deltas_[file].end(), list.begin(), list.end());
    return taken;
}

namespace {

// up and down of one delta as float32; up transposed to [rank][out] for InOut weights, so that the inner
// loop runs along a row of the weight.
struct Factors {
    std::vector<float> up, down;
};

Factors read_factors(const LoraSet::Delta &d) {
    Factors f{read_stored_floats(d.path, d.up), read_stored_floats(d.path, d.down)};
    if (d.kind == LoraTargetKind::InOut) {
        std::vector<float> up_t(d.rank * d.out);
        for (size_t o = 0; o < d.out; ++o)
            for (size_t j = 0; j < d.rank; ++j) up_t[j * d.out + o] = f.up[o * d.rank + j];
        f.up.swap(up_t);
    }
    return f;
}

// Adds delta rows to float32 rows `w` (rows [first, first + count) of the weight along dim 0, each `row`
// floats). up as read_factors gives it, down [rank][in].
void add_delta(const LoraSet::Delta &d, const Factors &f, float *w, size_t first, size_t count, size_t row,
               Layout layout, size_t positions) {
    const float *up = f.up.data(), *down = f.down.data();
    if (d.kind == LoraTargetKind::InOut) {
        // Row i is input feature i: w[i][o] += f * sum_j down[j][i] * up[o][j].
        for (size_t r = 0; r < count; ++r) {
            float *wr = w + r * row;
            for (size_t j = 0; j < d.rank; ++j) {
                const float a = d.factor * down[j * d.in + first + r];
                const float *u = up + j * d.out;
                for (size_t o = 0; o < d.out; ++o) wr[o] += a * u[o];
            }
        }
        return;
    }
    // Row o is output o: w[o][:] += f * sum_j up[o][j] * down[j][:] (down's order: in channel, then kernel
    // position, as OIHW stores it; OHWI stores position first).
    std::vector<float> sum(d.in);
    for (size_t r = 0; r < count; ++r) {
        const size_t o = first + r;
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (size_t j = 0; j < d.rank; ++j) {
            const float a = d.factor * up[o * d.rank + j];
            const float *dn = down + j * d.in;
            for (size_t i = 0; i < d.in; ++i) sum[i] += a * dn[i];
        }
        float *wr = w + r * row;
        if (layout == Layout::OHWI && positions > 1) {
            const size_t channels = d.in / positions;
            for (size_t c = 0; c < channels; ++c)
                for (size_t p = 0; p < positions; ++p) wr[p * channels + c] += sum[c * positions + p];
        } else {
            for (size_t i = 0; i < d.in; ++i) wr[i] += sum[i];
        }
    }
}

} // namespace

Tensor LoraSet::apply(const WeightSpec &spec, const Tensor &stored, int64_t first_row, const Allocator &alloc,
                      pthreadpool_t pool) const {
    auto it = deltas_.find(spec.file);
    if (it == deltas_.end() || stored.empty()) return stored;
    Tensor out = make_tensor(alloc, stored.dtype(), stored.shape());
    out.set_layout(stored.layout());
    out.set_quant(stored.quant());
    const size_t rows = static_cast<size_t>(stored.dim(0)), row = rows ? static_cast<size_t>(stored.numel()) / rows : 0;
    size_t positions = 1;
    for (size_t i = 2; i < stored.rank(); ++i) positions *= static_cast<size_t>(stored.dim(i));
    const bool f16 = stored.dtype() == DType::F16;
    if (!f16) std::memcpy(out.raw(), stored.raw(), stored.byte_size());
    // float16 weights are widened row block by row block, changed and rounded back once for all deltas.
    std::vector<Factors> factors;
    for (const auto &d : it->second) factors.push_back(read_factors(*d));
    parallel_for(pool, rows, std::max<size_t>(1, 16384 / std::max<size_t>(1, row)), [&](size_t b, size_t e) {
        std::vector<float> widened;
        float *w = nullptr;
        if (f16) {
            widened.resize((e - b) * row);
            half_to_float_n(stored.data<uint16_t>() + b * row, widened.data(), widened.size());
            w = widened.data();
        } else {
            w = out.data<float>() + b * row;
        }
        for (size_t k = 0; k < it->second.size(); ++k)
            add_delta(*it->second[k], factors[k], w, static_cast<size_t>(first_row) + b, e - b, row,
                      stored.layout(), positions);
        if (f16) float_to_half_n(widened.data(), out.data<uint16_t>() + b * row, widened.size());
    });
    return out;
}

} // namespace onnxstream
