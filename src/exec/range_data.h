// Activation ranges for static W8A8 (OnnxStream's range_data.txt) and their calibration.
//
// File format (OnnxStream's): one `name,min,max` line per range (\n or \r\n), where name is the model.txt
// name of the op that produces the tensor (the range is that of the op's first output) or the name of a
// graph input. min and max are decimal floats. Empty lines are ignored; `#` starts a comment line (an
// extension; OnnxStream never writes one).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op.h"

namespace onnxstream {

using RangeMap = std::map<std::string, ActivationRange>;

// Parse range_data.txt text; `source` names the file in messages. Throws INVALID_MODEL ("file:line: ...")
// for a malformed line, a non-finite value, min > max or a name given twice.
RangeMap parse_range_data(const std::string &text, const std::string &source);
// Read a file (IO on failure) and parse it.
RangeMap read_range_data(const std::string &path);
// Write `name,min,max` lines (names sorted, floats with 9 significant digits) to a temporary file in the same
// folder and rename it over path, so readers never see a partial file. Throws IO.
void write_range_data(const std::string &path, const RangeMap &ranges);

// The key of value v in range data: its producer's op name when v is the producer's first output, the
// value's name for a graph input, "" otherwise (no range can name it).
std::string range_key(const Graph &graph, int value);

// Per node (Graph::nodes() order): the ranges of input 0 and output 0 of the ops that can compute in uint8
// (Conv, MatMul, Gemm), when both are in `ranges`. Throws INVALID_ARGUMENT naming `source` when a name in
// `ranges` is neither an op nor a graph input of the graph.
std::vector<NodeActivationRanges> resolve_ranges(const Graph &graph, const RangeMap &ranges, const std::string &source);

// True for op types whose input/output ranges calibration records.
bool is_w8a8_op_type(const std::string &type);

// Records percentile ranges of the tensors that quantizable ops read and write, over any number of runs.
// Per run and tensor: [q(1e-4), q(1 - 1e-4)] quantiles of its values (at most 2^20 evenly strided samples
// of a bigger tensor), i.e. the 0.01 % most extreme values on each side are clipped; over runs the union
// (min of mins, max of maxes). Non-finite values are ignored.
class RangeRecorder {
public:
    explicit RangeRecorder(const Graph &graph);
    // Called with every graph input and every op output (executor's ValueObserver).
    void observe(int value, const Tensor &t);
    const RangeMap &ranges() const { return ranges_; }
    void clear() { ranges_.clear(); }

private:
    std::vector<std::string> keys_; // per value: range key when the value is recorded, else ""
    RangeMap ranges_;
};

} // namespace onnxstream
