// Which ops keep their prepared kernels between runs when a memory mode gives them a byte budget
// (balanced; max-speed keeps every op's, min none).
//
// A convolution's XNNPACK operator is made anew on every run of a streaming model: its packed weights are
// mapped (or packed), and its indirection buffer, a pointer per output pixel and kernel tap, is built
// again. On a model of small convolutions over big images that is a large share of the run, while the
// operators hold little besides their indirection buffers. An op offered a place to keep its kernels
// (OpDef::keeps_kernels_in_budget) shows on its first run what keeping costs: the kernel library's bytes
// it still holds once it has run, and the time it spent preparing them.
//
// The first run measures and keeps nothing. After it the ops worth their memory (thresholds below) are
// chosen by time saved per byte held, best first, until the budget is full, and the chosen ones keep the
// kernels they make on the next run, in pages of their own (xnnpack/init.h KernelKeepingScope): carved
// from the idle pages the tensors free, they would sit between them and make the next big tensor map new
// ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace onnxstream {

class KeptKernels {
public:
    // Least preparation time an op must save per byte it keeps: 25 us per MiB, and at least 0.1 % of the
    // model's run per MiB (10 MiB kept must save 1 % of the run). YOLOv8n's convolutions save 110-3000 us
    // per MiB kept of a 30 ms run; the SD VAE decoder's output convolution 97 us per MiB of a 5.5 s run.
    static constexpr double kMinNsPerByte = 25e3 / (1 << 20);
    static constexpr double kMinRunSharePerByte = 1e-3 / (1 << 20);
    // Least share of the op's own time its preparation must be: the SD UNet's convolutions prepare in
    // 0.5 % of their time and keeping them all saved nothing measurable, YOLOv8n's in 3-26 %.
    static constexpr double kMinShareOfOp = 0.02;

    explicit KeptKernels(uint64_t budget_bytes) : budget_(budget_bytes) {}

    // Forget everything about `nodes` nodes: their kept kernels were dropped (their weights changed).
    void reset(size_t nodes);
    size_t nodes() const { return entries_.size(); }
    // Whether node i may keep kernels in this run (not measured yet, or chosen).
    bool offered(size_t node) const;
    // Whether node i's run is its measuring one (measured() follows it, and the op's kernels are dropped).
    bool measuring(size_t node) const { return node < entries_.size() && entries_[node].state == State::Open; }
    // Whether node i is chosen to keep its kernels.
    bool chosen(size_t node) const { return node < entries_.size() && entries_[node].state == State::Chosen; }
    // After node i's measuring run: `holds` says whether it kept anything, `bytes` what the kernel library
    // holds for it, `prepare_ns` its preparation time out of the op's `op_ns`.
    void measured(size_t node, bool holds, uint64_t bytes, uint64_t prepare_ns, uint64_t op_ns);
    // After a run of run_ns that measured ops: the best choice within the budget, among all the ops
    // measured so far. Returns the nodes whose kept kernels must be dropped now.
    std::vector<size_t> choose(uint64_t run_ns);

    size_t kept() const { return kept_; }
    uint64_t bytes() const { return bytes_; }

private:
    enum class State : uint8_t {
        Open,    // not measured
        Chosen,  // keeps its kernels
        Dropped, // keeps none
    };
    struct Entry {
        State state = State::Open;
        bool candidate = false; // measured, holding something, and a large enough share of its op's time
        uint64_t cost = 0, prepare_ns = 0;
    };
    uint64_t budget_;
    std::vector<Entry> entries_;
    bool measured_ = false; // since the last choose()
    size_t kept_ = 0;       // Chosen entries, and their cost
    uint64_t bytes_ = 0;
};

} // namespace onnxstream
