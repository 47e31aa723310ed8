#include "onnx/ir.h"

#include <algorithm>
#include <functional>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <queue>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/half.h"
#include "util/error.h"
#include "util/paths.h"
#include "util/strings.h"

namespace onnxstream::importer {

const char *onnx_type_name(int32_t type) {
    switch (type) {
    case kOnnxFloat: return "float";
    case kOnnxUint8: return "uint8";
    case kOnnxInt8: return "int8";
    case kOnnxUint16: return "uint16";
    case kOnnxInt16: return "int16";
    case kOnnxInt32: return "int32";
    case kOnnxInt64: return "int64";
    case kOnnxString: return "string";
    case kOnnxBool: return "bool";
    case kOnnxFloat16: return "float16";
    case kOnnxDouble: return "double";
    case kOnnxUint32: return "uint32";
    case kOnnxUint64: return "uint64";
    case kOnnxBfloat16: return "bfloat16";
    case kOnnxFloat8E4M3FN: return "float8e4m3fn";
    case kOnnxFloat8E4M3FNUZ: return "float8e4m3fnuz";
    case kOnnxFloat8E5M2: return "float8e5m2";
    case kOnnxFloat8E5M2FNUZ: return "float8e5m2fnuz";
    case kOnnxUint4: return "uint4";
    case kOnnxInt4: return "int4";
    case 14: return "complex64";
    case 15: return "complex128";
    }
    return "unknown type";
}

size_t onnx_type_size(int32_t type) {
    switch (type) {
    case kOnnxUint8:
    case kOnnxInt8:
    case kOnnxBool:
    case kOnnxFloat8E4M3FN:
    case kOnnxFloat8E4M3FNUZ:
    case kOnnxFloat8E5M2:
    case kOnnxFloat8E5M2FNUZ:
    case kOnnxUint4:
    case kOnnxInt4: return 1;
    case kOnnxUint16:
    case kOnnxInt16:
    case kOnnxFloat16:
    case kOnnxBfloat16: return 2;
    case kOnnxFloat:
    case kOnnxInt32:
    case kOnnxUint32: return 4;
    case kOnnxInt64:
    case kOnnxDouble:
    case kOnnxUint64:
    case 14: return 8;
    case 15: return 16;
    }
    return 0;
}

bool dtype_of(int32_t type, DType &out) { return dtype_from_onnx(type, out); }

int32_t onnx_type_of(DType dtype) { return dtype_onnx_type(dtype); }

// ---------------------------------------------------------------------------------------------------------
// SpillFile, ConstantData

SpillFile::SpillFile(const std::string &dir) {
    std::string templ = (dir.empty() ? std::string(".") : dir) + "/.onnxstream-convert-spill-XXXXXX";
    fd_ = ::mkstemp(templ.data());
    if (fd_ < 0) fail(ONNXSTREAM_ERR_IO, "cannot create a scratch file in ", dir, ": ", std::strerror(errno));
    ::unlink(templ.c_str());
}

SpillFile::~SpillFile() {
    if (fd_ >= 0) ::close(fd_);
}

uint64_t SpillFile::append(const void *data, size_t n) {
    const uint64_t at = size_;
    const char *p = static_cast<const char *>(data);
    for (size_t done = 0; done < n;) {
        ssize_t w = ::pwrite(fd_, p + done, n - done, static_cast<off_t>(at + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0)
            fail(ONNXSTREAM_ERR_IO, "cannot write the scratch file for folded constants: ", std::strerror(errno));
        done += static_cast<size_t>(w);
    }
    size_ += n;
    return at;
}

void SpillFile::read(uint64_t offset, void *dst, size_t n) const {
    char *p = static_cast<char *>(dst);
    for (size_t done = 0; done < n;) {
        ssize_t r = ::pread(fd_, p + done, n - done, static_cast<off_t>(offset + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            fail(ONNXSTREAM_ERR_IO, "cannot read the scratch file for folded constants: ", std::strerror(errno));
        done += static_cast<size_t>(r);
    }
}

ConstantData ConstantData::spilled(const ConstantData &c, const std::shared_ptr<SpillFile> &spill) {
    auto bytes = c.bytes();
    ConstantData s;
    s.type_ = c.type_;
    s.shape_ = c.shape_;
    s.spill_ = spill;
    s.offset_ = spill->append(bytes->data(), bytes->size());
    return s;
}

ConstantData ConstantData::in_memory(int32_t type, Shape shape, std::string bytes) {
    ConstantData c;
    c.type_ = type;
    c.shape_ = std::move(shape);
    c.bytes_ = std::make_shared<const std::string>(std::move(bytes));
    return c;
}

ConstantData ConstantData::external(int32_t type, Shape shape, std::string path, uint64_t offset) {
    ConstantData c;
    c.type_ = type;
    c.shape_ = std::move(shape);
    c.path_ = std::move(path);
    c.offset_ = offset;
    return c;
}

std::shared_ptr<const std::string> ConstantData::bytes() const {
    if (!is_external()) return bytes_ ? bytes_ : std::make_shared<const std::string>();
    std::string data(checked::to_size(byte_size(), "a constant"), '\0');
    if (!data.empty()) read(0, data.data(), data.size());
    return std::make_shared<const std::string>(std::move(data));
}

void ConstantData::read(uint64_t offset, void *dst, size_t n) const {
    uint64_t end = 0;
    if (!checked::add(offset, static_cast<uint64_t>(n), end) || end > byte_size())
        fail(ONNXSTREAM_ERR_INTERNAL, "constant read of ", n, " bytes at ", offset, " past its ", byte_size(),
             " bytes");
    if (!is_external()) {
        if (n) std::memcpy(dst, bytes_->data() + offset, n);
        return;
    }
    if (spill_) {
        spill_->read(offset_ + offset, dst, n);
        return;
    }
    FILE *f = std::fopen(path_.c_str(), "rb");
    if (!f) fail(ONNXSTREAM_ERR_IO, "cannot open external data file ", path_, ": ", std::strerror(errno));
    bool ok = ::fseeko(f, static_cast<off_t>(offset_ + offset), SEEK_SET) == 0;
    size_t got = ok ? std::fread(dst, 1, n, f) : 0;
    std::fclose(f);
    if (got != n)
        fail(ONNXSTREAM_ERR_IO, "external data file ", path_, " is truncated: cannot read ", n, " bytes at offset ",
             offset_ + offset);
}

namespace {
template <typename T> T load(const char *p, size_t i) {
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    return v;
}
} // namespace

std::vector<int64_t> ConstantData::int_values() const {
    auto data = bytes();
    const char *p = data->data();
    std::vector<int64_t> out(checked::to_size(static_cast<uint64_t>(numel()), "a constant"));
    for (size_t i = 0; i < out.size(); ++i) {
        switch (type_) {
        case kOnnxInt64: out[i] = load<int64_t>(p, i); break;
        case kOnnxUint64: out[i] = static_cast<int64_t>(load<uint64_t>(p, i)); break;
        case kOnnxInt32: out[i] = load<int32_t>(p, i); break;
        case kOnnxUint32: out[i] = load<uint32_t>(p, i); break;
        case kOnnxInt16: out[i] = load<int16_t>(p, i); break;
        case kOnnxUint16: out[i] = load<uint16_t>(p, i); break;
        case kOnnxInt8:
        case kOnnxInt4: out[i] = load<int8_t>(p, i); break;
        case kOnnxUint8:
        case kOnnxUint4:
        case kOnnxBool: out[i] = load<uint8_t>(p, i); break;
        default: fail(ONNXSTREAM_ERR_INTERNAL, "int_values of a ", onnx_type_name(type_), " constant");
        }
    }
    return out;
}

std::vector<float> ConstantData::float_values() const {
    auto data = bytes();
    const char *p = data->data();
    std::vector<float> out(checked::to_size(static_cast<uint64_t>(numel()), "a constant"));
    for (size_t i = 0; i < out.size(); ++i) {
        switch (type_) {
        case kOnnxFloat: out[i] = load<float>(p, i); break;
        case kOnnxFloat16: out[i] = half_to_float(load<uint16_t>(p, i)); break;
        case kOnnxDouble: out[i] = static_cast<float>(load<double>(p, i)); break;
        default: fail(ONNXSTREAM_ERR_INTERNAL, "float_values of a ", onnx_type_name(type_), " constant");
        }
    }
    return out;
}

namespace {

template <typename T, typename Field> std::string pack(const Field &field) {
    std::string bytes(static_cast<size_t>(field.size()) * sizeof(T), '\0');
    for (int i = 0; i < field.size(); ++i) {
        T v = static_cast<T>(field.Get(i));
        std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(T), &v, sizeof(T));
    }
    return bytes;
}

// The typed-field representation of a tensor as raw little-endian bytes.
std::string typed_field_bytes(const onnx::TensorProto &t, int64_t &count) {
    switch (t.data_type()) {
    case kOnnxFloat: count = t.float_data_size(); return pack<float>(t.float_data());
    case kOnnxDouble: count = t.double_data_size(); return pack<double>(t.double_data());
    case kOnnxInt64: count = t.int64_data_size(); return pack<int64_t>(t.int64_data());
    case kOnnxUint32: count = t.uint64_data_size(); return pack<uint32_t>(t.uint64_data());
    case kOnnxUint64: count = t.uint64_data_size(); return pack<uint64_t>(t.uint64_data());
    case kOnnxInt32: count = t.int32_data_size(); return pack<int32_t>(t.int32_data());
    case kOnnxInt16: count = t.int32_data_size(); return pack<int16_t>(t.int32_data());
    case kOnnxUint16:
    case kOnnxFloat16:
    case kOnnxBfloat16: count = t.int32_data_size(); return pack<uint16_t>(t.int32_data());
    case kOnnxInt8: count = t.int32_data_size(); return pack<int8_t>(t.int32_data());
    case kOnnxUint8:
    case kOnnxBool:
    case kOnnxFloat8E4M3FN: // float8 bytes, one per int32 (ONNX's rule for the 8-bit types)
    case kOnnxFloat8E4M3FNUZ:
    case kOnnxFloat8E5M2:
    case kOnnxFloat8E5M2FNUZ:
    case kOnnxUint4: // two values per byte, one byte per int32
    case kOnnxInt4: count = t.int32_data_size(); return pack<uint8_t>(t.int32_data());
    }
    count = 0;
    return std::string();
}

bool unsafe_location(const std::string &location) {
    if (location.empty() || location[0] == '/' || location.find('\\') != std::string::npos) return true;
    for (auto part : split(location, '/'))
        if (part == "..") return true;
    return false;
}

} // namespace

uint64_t onnx_stored_bytes(int32_t type, const Shape &shape, const std::string &what) {
    if (!onnx_4bit_type(type)) return checked::bytes_or_fail(shape, onnx_type_size(type), what);
    return (static_cast<uint64_t>(checked::numel_or_fail(shape, what)) + 1) / 2;
}

namespace {

// ONNX packs int4/uint4 two per byte, the first in the low nibble; the importer holds one per byte, int4
// sign-extended.
std::string unpack_4bit(const std::string &packed, int64_t n, bool is_signed) {
    std::string out(static_cast<size_t>(n), '\0');
    for (int64_t i = 0; i < n; ++i) {
        const int nibble = (static_cast<uint8_t>(packed[static_cast<size_t>(i / 2)]) >> (i % 2 ? 4 : 0)) & 0xF;
        out[static_cast<size_t>(i)] = static_cast<char>(is_signed && nibble >= 8 ? nibble - 16 : nibble);
    }
    return out;
}

ConstantData unpacked_4bit(const onnx::TensorProto &t, const Shape &shape, uint64_t stored, const std::string &what) {
    const int32_t type = t.data_type();
    std::string packed;
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
        fail(ONNXSTREAM_ERR_UNSUPPORTED, what, ": ", onnx_type_name(type),
             " data in an external file is not supported; save the model with its 4-bit tensors inside");
    } else if (t.has_raw_data()) {
        packed = t.raw_data();
    } else {
        int64_t count = 0;
        packed = typed_field_bytes(t, count);
    }
    if (packed.size() != stored)
        fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " holds ", packed.size(), " bytes but ", onnx_type_name(type), " ",
             shape_str(shape), " needs ", stored, " (two values per byte)");
    return ConstantData::in_memory(type, shape, unpack_4bit(packed, shape_numel(shape), type == kOnnxInt4));
}

} // namespace

ConstantData constant_from_proto(onnx::TensorProto &t, const std::string &model_dir, const std::string &what) {
    Shape shape;
    for (int64_t d : t.dims()) {
        if (d < 0) fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " has a negative dimension ", d);
        shape.push_back(d);
    }
    const int32_t type = t.data_type();
    const size_t esize = onnx_type_size(type);
    if (type == kOnnxString) return ConstantData::in_memory(type, shape, std::string()); // rejected where used
    if (esize == 0) fail(ONNXSTREAM_ERR_UNSUPPORTED, what, " has ONNX data type ", type, ", which is not supported");
    if (t.has_segment()) fail(ONNXSTREAM_ERR_UNSUPPORTED, what, " is a segmented tensor, which is not supported");
    const uint64_t expected = onnx_stored_bytes(type, shape, what);
    if (onnx_4bit_type(type)) return unpacked_4bit(t, shape, expected, what);

    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
        std::string location;
        uint64_t offset = 0, length = expected;
        bool has_length = false;
        for (const auto &kv : t.external_data()) {
            int64_t v = 0;
            if (kv.key() == "location") {
                location = kv.value();
            } else if (kv.key() == "offset" || kv.key() == "length") {
                if (!parse_int64(kv.value(), v) || v < 0)
                    fail(ONNXSTREAM_ERR_INVALID_MODEL, what, ": external data ", kv.key(), " '", kv.value(),
                         "' is not a non-negative integer");
                if (kv.key() == "offset")
                    offset = static_cast<uint64_t>(v);
                else
                    length = static_cast<uint64_t>(v), has_length = true;
            }
        }
        if (location.empty()) fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " has external data without a location");
        if (unsafe_location(location))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, what, ": external data location '", location,
                 "' must be a relative path inside the model's folder");
        if (has_length && length != expected)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, what, ": external data length ", length, " does not match ",
                 onnx_type_name(type), " ", shape_str(shape), " (", expected, " bytes)");
        std::string path = path_inside_folder(model_dir, location, what + ": external data file");
        struct stat st;
        if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
            fail(ONNXSTREAM_ERR_IO, what, ": external data file '", location, "' not found (looked for ", path, ")");
        if (static_cast<uint64_t>(st.st_size) < offset + expected)
            fail(ONNXSTREAM_ERR_IO, what, ": external data file ", path, " has ", st.st_size,
                 " bytes but the tensor needs ", expected, " bytes at offset ", offset, " (the file is truncated)");
        return ConstantData::external(type, shape, path, offset);
    }

    if (t.has_raw_data()) {
        std::string bytes;
        bytes.swap(*t.mutable_raw_data());
        if (bytes.size() != expected)
            fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " holds ", bytes.size(), " bytes but ", onnx_type_name(type), " ",
                 shape_str(shape), " needs ", expected);
        return ConstantData::in_memory(type, shape, std::move(bytes));
    }
    int64_t count = 0;
    std::string bytes = typed_field_bytes(t, count);
    if (count != shape_numel(shape))
        fail(ONNXSTREAM_ERR_INVALID_MODEL, what, " holds ", count, " values but its shape ", shape_str(shape),
             " needs ", shape_numel(shape));
    return ConstantData::in_memory(type, shape, std::move(bytes));
}

// ---------------------------------------------------------------------------------------------------------
// ValueType

bool ValueType::is_static() const {
    if (!has_shape) return false;
    for (int64_t d : dims)
        if (d < 0) return false;
    return true;
}

std::string ValueType::shape_text() const {
    if (!has_shape) return "(unknown rank)";
    std::string out = "(";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i) out += ",";
        if (dims[i] >= 0)
            out += std::to_string(dims[i]);
        else
            out += dim_params[i].empty() ? "?" : dim_params[i];
    }
    return out + ")";
}

ValueType value_type_from_proto(const onnx::TypeProto &t) {
    ValueType v;
    if (!t.has_tensor_type()) return v;
    v.elem_type = t.tensor_type().elem_type();
    if (!t.tensor_type().has_shape()) return v;
    v.has_shape = true;
    for (const auto &d : t.tensor_type().shape().dim()) {
        v.dims.push_back(d.has_dim_value() && d.dim_value() >= 0 ? d.dim_value() : -1);
        v.dim_params.push_back(d.has_dim_param() ? d.dim_param() : std::string());
    }
    return v;
}

void value_type_to_proto(const ValueType &v, onnx::TypeProto *t) {
    auto *tt = t->mutable_tensor_type();
    tt->set_elem_type(v.elem_type);
    if (!v.has_shape) return;
    auto *shape = tt->mutable_shape();
    for (size_t i = 0; i < v.dims.size(); ++i) {
        auto *d = shape->add_dim();
        if (v.dims[i] >= 0)
            d->set_dim_value(v.dims[i]);
        else if (i < v.dim_params.size() && !v.dim_params[i].empty())
            d->set_dim_param(v.dim_params[i]);
    }
}

// ---------------------------------------------------------------------------------------------------------
// Node, IrGraph

const onnx::AttributeProto *Node::attr(const std::string &key) const {
    for (const auto &a : attrs)
        if (a.name() == key) return &a;
    return nullptr;
}

int64_t Node::attr_int(const std::string &key, int64_t fallback) const {
    const auto *a = attr(key);
    return a && a->has_i() ? a->i() : fallback;
}

float Node::attr_float(const std::string &key, float fallback) const {
    const auto *a = attr(key);
    return a && a->has_f() ? a->f() : fallback;
}

std::vector<int64_t> Node::attr_ints(const std::string &key) const {
    const auto *a = attr(key);
    return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>();
}

std::string Node::describe() const { return cat("node '", name, "' (", engine_type(), ")"); }

std::string Node::engine_type() const { return default_domain() ? op_type : domain + ":" + op_type; }

const ValueType *IrGraph::type_of(const std::string &name) const {
    auto it = types.find(name);
    return it == types.end() ? nullptr : &it->second;
}

std::string IrGraph::fresh_name(const std::string &base) const {
    std::unordered_set<std::string> used;
    for (const auto &kv : constants) used.insert(kv.first);
    for (const auto &n : inputs) used.insert(n);
    for (const Node &node : nodes) {
        used.insert(node.inputs.begin(), node.inputs.end());
        used.insert(node.outputs.begin(), node.outputs.end());
    }
    if (!used.count(base)) return base;
    for (int i = 1;; ++i) {
        std::string name = cat(base, "_", i);
        if (!used.count(name)) return name;
    }
}

GraphIndex::GraphIndex(const IrGraph &g) {
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node &n = g.nodes[i];
        for (const auto &in : n.inputs)
            if (!in.empty()) consumers[in].push_back(static_cast<int>(i));
        for (const auto &in : n.captures) consumers[in].push_back(static_cast<int>(i));
        if (!n.guard.empty()) consumers[n.guard].push_back(static_cast<int>(i));
        for (const auto &out : n.outputs)
            if (!out.empty()) producer[out] = static_cast<int>(i);
    }
    graph_outputs.insert(g.outputs.begin(), g.outputs.end());
}

size_t GraphIndex::use_count(const std::string &value) const {
    auto it = consumers.find(value);
    return (it == consumers.end() ? 0 : it->second.size()) + graph_outputs.count(value);
}

void topo_sort(IrGraph &g) {
    const size_t n = g.nodes.size();
    std::unordered_map<std::string, int> producer;
    for (size_t i = 0; i < n; ++i)
        for (const auto &out : g.nodes[i].outputs) {
            if (out.empty()) continue;
            if (g.is_constant(out) || std::find(g.inputs.begin(), g.inputs.end(), out) != g.inputs.end())
                fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", g.nodes[i].describe(), " writes '", out,
                     "', which is already an initializer or graph input");
            auto [it, inserted] = producer.emplace(out, static_cast<int>(i));
            if (!inserted)
                fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": value '", out, "' is produced twice, by ",
                     g.nodes[static_cast<size_t>(it->second)].describe(), " and by ", g.nodes[i].describe());
        }
    std::unordered_set<std::string> available(g.inputs.begin(), g.inputs.end());
    std::vector<int> pending(n, 0);
    std::vector<std::vector<int>> readers(n);
    for (size_t i = 0; i < n; ++i) {
        std::unordered_set<int> deps;
        std::vector<std::string> reads = g.nodes[i].inputs;
        reads.insert(reads.end(), g.nodes[i].captures.begin(), g.nodes[i].captures.end());
        reads.push_back(g.nodes[i].guard);
        for (const auto &in : reads) {
            if (in.empty() || available.count(in) || g.is_constant(in)) continue;
            auto it = producer.find(in);
            if (it == producer.end())
                fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": ", g.nodes[i].describe(), " reads '", in,
                     "', which no node, initializer or graph input provides");
            deps.insert(it->second);
        }
        pending[i] = static_cast<int>(deps.size());
        for (int d : deps) readers[static_cast<size_t>(d)].push_back(static_cast<int>(i));
    }
    for (const auto &out : g.outputs)
        if (!available.count(out) && !g.is_constant(out) && !producer.count(out))
            fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": graph output '", out, "' is not produced by any node");

    // Kahn's algorithm with a min-heap on the original position keeps the model's own order stable.
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (size_t i = 0; i < n; ++i)
        if (pending[i] == 0) ready.push(static_cast<int>(i));
    std::vector<Node> sorted;
    sorted.reserve(n);
    std::vector<bool> done(n, false);
    while (!ready.empty()) {
        int i = ready.top();
        ready.pop();
        done[static_cast<size_t>(i)] = true;
        sorted.push_back(std::move(g.nodes[static_cast<size_t>(i)]));
        for (int r : readers[static_cast<size_t>(i)])
            if (--pending[static_cast<size_t>(r)] == 0) ready.push(r);
    }
    if (sorted.size() != n) {
        // Nodes left over are on a cycle or downstream of one; peel off the downstream ones (those no
        // other leftover node reads) so the message names the cycle itself.
        std::vector<int> live_readers(n, 0);
        for (size_t i = 0; i < n; ++i)
            if (!done[i])
                for (int r : readers[i])
                    if (!done[static_cast<size_t>(r)]) ++live_readers[i];
        std::vector<int> sinks;
        for (size_t i = 0; i < n; ++i)
            if (!done[i] && live_readers[i] == 0) sinks.push_back(static_cast<int>(i));
        std::vector<bool> removed(n, false);
        while (!sinks.empty()) {
            int s = sinks.back();
            sinks.pop_back();
            removed[static_cast<size_t>(s)] = true;
            for (size_t i = 0; i < n; ++i) {
                if (done[i] || removed[i]) continue;
                const auto &rs = readers[i];
                if (std::find(rs.begin(), rs.end(), s) != rs.end() && --live_readers[i] == 0)
                    sinks.push_back(static_cast<int>(i));
            }
        }
        std::string list;
        size_t on_cycle = 0;
        for (size_t i = 0; i < n; ++i) {
            if (done[i] || removed[i]) continue;
            if (on_cycle++ < 6) list += cat(on_cycle > 1 ? " -> " : "", g.nodes[i].describe());
        }
        fail(ONNXSTREAM_ERR_INVALID_MODEL, g.source, ": the graph has a cycle through ", on_cycle, " node",
             on_cycle == 1 ? "" : "s", ": ", list, on_cycle > 6 ? " -> ..." : "",
             " (each needs another's output before it can run)");
    }
    g.nodes = std::move(sorted);
}

void rename_reads(Node &n, const std::function<std::string(const std::string &)> &resolve) {
    for (auto &in : n.inputs)
        if (!in.empty()) in = resolve(in);
    if (!n.guard.empty()) n.guard = resolve(n.guard);
    std::unordered_map<std::string, std::string> rename;
    for (const auto &c : n.captures) {
        std::string to = resolve(c);
        if (to != c) rename.emplace(c, std::move(to));
    }
    if (rename.empty()) return;
    for (auto &a : n.attrs) {
        if (a.type() == onnx::AttributeProto::GRAPH) rename_captured(*a.mutable_g(), rename);
        for (auto &sub : *a.mutable_graphs()) rename_captured(sub, rename);
    }
    set_captures(n);
}

void replace_uses(IrGraph &g, const std::string &from, const std::string &to) {
    const auto resolve = [&](const std::string &v) { return v == from ? to : v; };
    for (Node &n : g.nodes) rename_reads(n, resolve);
    for (auto &out : g.outputs)
        if (out == from) out = to;
}

namespace {

// Names read in `graph` (and the subgraphs inside it) that it does not define; `defined` holds what the
// enclosing subgraphs define.
void collect_captures(const onnx::GraphProto &graph, std::unordered_set<std::string> defined,
                      std::vector<std::string> &out, std::unordered_set<std::string> &seen) {
    for (const auto &vi : graph.input()) defined.insert(vi.name());
    for (const auto &t : graph.initializer()) defined.insert(t.name());
    for (const auto &n : graph.node())
        for (const auto &o : n.output()) defined.insert(o);
    auto read = [&](const std::string &name) {
        if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
    };
    for (const auto &n : graph.node()) {
        for (const auto &i : n.input()) read(i);
        for (const auto &a : n.attribute()) {
            if (a.type() == onnx::AttributeProto::GRAPH) collect_captures(a.g(), defined, out, seen);
            for (const auto &sub : a.graphs()) collect_captures(sub, defined, out, seen);
        }
    }
    for (const auto &vi : graph.output()) read(vi.name());
}

} // namespace

void set_captures(Node &n) {
    n.captures.clear();
    std::unordered_set<std::string> seen;
    for (const auto &a : n.attrs) {
        if (a.type() == onnx::AttributeProto::GRAPH) collect_captures(a.g(), {}, n.captures, seen);
        for (const auto &sub : a.graphs()) collect_captures(sub, {}, n.captures, seen);
    }
}

void rename_captured(onnx::GraphProto &graph, const std::unordered_map<std::string, std::string> &rename) {
    // Valid ONNX never reuses an outer name inside a subgraph, so every read of a renamed name is a read of
    // the outer value.
    auto map = [&](std::string *name) {
        auto it = rename.find(*name);
        if (it != rename.end()) *name = it->second;
    };
    for (auto &n : *graph.mutable_node()) {
        for (auto &i : *n.mutable_input()) map(&i);
        for (auto &a : *n.mutable_attribute()) {
            if (a.type() == onnx::AttributeProto::GRAPH) rename_captured(*a.mutable_g(), rename);
            for (auto &sub : *a.mutable_graphs()) rename_captured(sub, rename);
        }
    }
    for (auto &vi : *graph.mutable_output()) map(vi.mutable_name());
}

void drop_nodes(IrGraph &g, const std::vector<bool> &removed) {
    std::vector<Node> kept;
    kept.reserve(g.nodes.size());
    for (size_t i = 0; i < g.nodes.size(); ++i)
        if (!removed[i]) kept.push_back(std::move(g.nodes[i]));
    g.nodes = std::move(kept);
}

bool static_shape_of(const IrGraph &g, const std::string &name, Shape &shape) {
    auto it = g.constants.find(name);
    if (it != g.constants.end()) {
        shape = it->second.shape();
        return true;
    }
    const ValueType *t = g.type_of(name);
    if (!t || !t->is_static()) return false;
    shape = t->dims;
    return true;
}

int32_t elem_type_of(const IrGraph &g, const std::string &name) {
    auto it = g.constants.find(name);
    if (it != g.constants.end()) return it->second.type();
    const ValueType *t = g.type_of(name);
    return t ? t->elem_type : 0;
}

bool int_constant(const IrGraph &g, const std::string &name, std::vector<int64_t> &out) {
    auto it = g.constants.find(name);
    if (it == g.constants.end()) return false;
    int32_t t = it->second.type();
    if (t != kOnnxInt64 && t != kOnnxInt32) return false;
    out = it->second.int_values();
    return true;
}

onnx::AttributeProto ints_attr(const std::string &key, const std::vector<int64_t> &values) {
    onnx::AttributeProto a;
    a.set_name(key);
    a.set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a.add_ints(v);
    return a;
}

onnx::AttributeProto int_attr(const std::string &key, int64_t value) {
    onnx::AttributeProto a;
    a.set_name(key);
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(value);
    return a;
}

void set_attr(Node &n, onnx::AttributeProto attr) {
    for (auto &existing : n.attrs)
        if (existing.name() == attr.name()) {
            existing = std::move(attr);
            return;
        }
    n.attrs.push_back(std::move(attr));
}

} // namespace onnxstream::importer
