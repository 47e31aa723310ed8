// The importer's working graph: ONNX nodes with their attributes, constant tensors (initializers and
// folded values) whose bytes stay on disk until someone needs them, and the inferred type of every value.
// Passes rewrite it; the writer turns it into model.txt.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include "tensor/tensor.h"
#include "util/checked.h"

namespace onnxstream::importer {

// ONNX TensorProto.DataType values the importer names.
enum OnnxType : int32_t {
    kOnnxFloat = 1,
    kOnnxUint8 = 2,
    kOnnxInt8 = 3,
    kOnnxUint16 = 4,
    kOnnxInt16 = 5,
    kOnnxInt32 = 6,
    kOnnxInt64 = 7,
    kOnnxString = 8,
    kOnnxBool = 9,
    kOnnxFloat16 = 10,
    kOnnxDouble = 11,
    kOnnxUint32 = 12,
    kOnnxUint64 = 13,
    kOnnxBfloat16 = 16,
    kOnnxFloat8E4M3FN = 17,
    kOnnxFloat8E4M3FNUZ = 18,
    kOnnxFloat8E5M2 = 19,
    kOnnxFloat8E5M2FNUZ = 20,
    kOnnxUint4 = 21,
    kOnnxInt4 = 22,
};

const char *onnx_type_name(int32_t type); // "float", "int64", ... ("type 42" style text is not static)
// 0 for strings and unknown values; 1 for int4 and uint4, whose ONNX data packs two values per byte but
// whose constants the importer holds one value per byte (as the engine does).
size_t onnx_type_size(int32_t type);
inline bool onnx_4bit_type(int32_t type) { return type == kOnnxUint4 || type == kOnnxInt4; }
// The bytes ONNX stores n elements of a type in (two 4-bit values per byte).
uint64_t onnx_stored_bytes(int32_t type, const Shape &shape, const std::string &what);
// bfloat16 and the float8 types: constants the importer moves as bytes but never reads as values.
inline bool onnx_bits_only_type(int32_t type) { return type == kOnnxBfloat16 || (type >= kOnnxFloat8E4M3FN && type <= kOnnxFloat8E5M2FNUZ); }
// The engine dtype of an ONNX type; false when model.txt cannot store it.
bool dtype_of(int32_t type, DType &out);
int32_t onnx_type_of(DType dtype);

// A scratch file for big constants the importer computes (folded weights), so converting a multi-gigabyte
// model does not hold a second copy of its weights in RAM. The file is unlinked as soon as it is created:
// nothing is left on disk whatever happens to the process.
class SpillFile {
public:
    explicit SpillFile(const std::string &dir); // throws IO
    ~SpillFile();
    SpillFile(const SpillFile &) = delete;
    SpillFile &operator=(const SpillFile &) = delete;
    uint64_t append(const void *data, size_t n); // returns the offset written at
    void read(uint64_t offset, void *dst, size_t n) const;

private:
    int fd_ = -1;
    uint64_t size_ = 0;
};

// The bytes of a constant tensor (little-endian, row-major): held in memory, or a range of an external
// data file (or of the spill file) that is read only when asked for, so multi-gigabyte models never sit
// in RAM whole.
class ConstantData {
public:
    ConstantData() = default;
    static ConstantData in_memory(int32_t type, Shape shape, std::string bytes);
    static ConstantData external(int32_t type, Shape shape, std::string path, uint64_t offset);
    // Moves an in-memory constant's bytes to the spill file.
    static ConstantData spilled(const ConstantData &c, const std::shared_ptr<SpillFile> &spill);

    int32_t type() const { return type_; }
    const Shape &shape() const { return shape_; }
    int64_t numel() const { return shape_numel(shape_); }
    uint64_t byte_size() const { return checked::bytes_or_fail(shape_, onnx_type_size(type_), "a constant"); }
    bool is_external() const { return !path_.empty() || spill_; }

    // All bytes (reads an external file each call; throws IO).
    std::shared_ptr<const std::string> bytes() const;
    // n bytes starting at offset, for streaming big tensors.
    void read(uint64_t offset, void *dst, size_t n) const;

    // Values of an integer tensor (int64/int32/int8/uint8/bool) as int64, or floats as float.
    std::vector<int64_t> int_values() const;
    std::vector<float> float_values() const;

private:
    int32_t type_ = kOnnxFloat;
    Shape shape_;
    std::shared_ptr<const std::string> bytes_;
    std::string path_;
    std::shared_ptr<SpillFile> spill_;
    uint64_t offset_ = 0;
};

// A TensorProto's contents (raw_data, typed fields or external data resolved against model_dir).
// Takes raw_data out of *t instead of copying it. `what` names the tensor in messages.
ConstantData constant_from_proto(onnx::TensorProto &t, const std::string &model_dir, const std::string &what);

// What shape inference (or the model) says about a value. dims[i] < 0 is an unknown dimension, named by
// dim_params[i] when the model gave it a name.
struct ValueType {
    int32_t elem_type = 0;
    bool has_shape = false;
    std::vector<int64_t> dims;
    std::vector<std::string> dim_params;

    bool is_static() const;
    std::string shape_text() const; // "(batch,3,224,224)", "(?)" for unknown rank
};

ValueType value_type_from_proto(const onnx::TypeProto &t);
void value_type_to_proto(const ValueType &v, onnx::TypeProto *t);

struct Node {
    std::string name;
    std::string op_type;
    std::string domain;               // "" for the default ONNX domain
    std::vector<std::string> inputs;  // "" marks an omitted optional input
    std::vector<std::string> outputs; // "" marks an unused optional output
    std::vector<onnx::AttributeProto> attrs;
    // Outer values read inside the node's subgraph attributes (If branches, Loop/Scan bodies): inputs in
    // all but name, so ordering, liveness and renaming see them. Kept current by set_captures().
    std::vector<std::string> captures;
    // The value that decides whether the node runs at all (a one-element bool): set on the nodes of If
    // branches whose condition is only known at run time (passes/flatten_if.cpp). Read like an input.
    std::string guard;

    const onnx::AttributeProto *attr(const std::string &key) const;
    int64_t attr_int(const std::string &key, int64_t fallback) const;
    float attr_float(const std::string &key, float fallback) const;
    std::vector<int64_t> attr_ints(const std::string &key) const;
    bool default_domain() const { return domain.empty() || domain == "ai.onnx"; }
    // "node 'name' (Type)" for messages.
    std::string describe() const;
    // The type as the engine knows it: op_type in the default domain, "domain:op_type" otherwise.
    std::string engine_type() const;
};

struct IrGraph {
    std::string source;    // model path, for messages
    std::string model_dir; // external data is relative to this folder
    int64_t ir_version = 0;
    int64_t opset = 0; // version of the default domain
    std::vector<onnx::OperatorSetIdProto> opset_imports;

    std::vector<Node> nodes; // topologically sorted after load
    std::unordered_map<std::string, ConstantData> constants;
    std::vector<std::string> inputs; // graph inputs that are not constants, in model order
    std::vector<std::string> outputs;
    std::unordered_map<std::string, ValueType> types;
    // Values whose type came from the engine's inference (engine_shapes.h), handed back to ONNX's.
    std::unordered_set<std::string> engine_typed;

    bool is_constant(const std::string &name) const { return constants.count(name) != 0; }
    const ValueType *type_of(const std::string &name) const;
    // A value name not used anywhere in the graph yet, based on `base`.
    std::string fresh_name(const std::string &base) const;
};

// Who produces and who reads each value. Rebuild after structural changes.
struct GraphIndex {
    explicit GraphIndex(const IrGraph &g);
    std::unordered_map<std::string, int> producer;               // value -> node index
    std::unordered_map<std::string, std::vector<int>> consumers; // value -> node indices (one per use)
    std::unordered_set<std::string> graph_outputs;

    size_t use_count(const std::string &value) const; // reads by nodes + 1 if it is a graph output
    bool is_used(const std::string &value) const { return use_count(value) != 0; }
};

// Order nodes so every value is produced before it is read (stable: keeps the model's order where it
// can). Throws INVALID_MODEL for values nobody provides, values produced twice, and cycles (naming the
// nodes on them).
void topo_sort(IrGraph &g);

// Point each read of node n (inputs, guard, reads inside its subgraphs) at resolve(name).
void rename_reads(Node &n, const std::function<std::string(const std::string &)> &resolve);
// Point every read of `from` (node inputs, guards, reads inside subgraphs, and graph outputs) at `to`.
void replace_uses(IrGraph &g, const std::string &from, const std::string &to);

// Recompute n.captures from its subgraph attributes.
void set_captures(Node &n);
// Rename the reads of outer values inside a subgraph (recursively): `rename` maps old names to new.
void rename_captured(onnx::GraphProto &graph, const std::unordered_map<std::string, std::string> &rename);

// Remove the nodes whose flag is set (one flag per node, in g.nodes order), keeping the others' order.
void drop_nodes(IrGraph &g, const std::vector<bool> &removed);

// What passes ask about a value: its static shape (constants included; false when unknown), its element
// type (0 when unknown), and the values of an int64/int32 constant (false when it is not one).
bool static_shape_of(const IrGraph &g, const std::string &name, Shape &shape);
int32_t elem_type_of(const IrGraph &g, const std::string &name);
bool int_constant(const IrGraph &g, const std::string &name, std::vector<int64_t> &out);

// Attributes for rewritten nodes, and setting one on a node (replacing an attribute of the same name).
onnx::AttributeProto ints_attr(const std::string &key, const std::vector<int64_t> &values);
onnx::AttributeProto int_attr(const std::string &key, int64_t value);
void set_attr(Node &n, onnx::AttributeProto attr);

} // namespace onnxstream::importer
