#include "exec/kept_kernels.h"

#include <algorithm>

namespace onnxstream {

void KeptKernels::reset(size_t nodes) {
    entries_.assign(nodes, Entry());
    measured_ = false;
    kept_ = 0;
    bytes_ = 0;
}

bool KeptKernels::offered(size_t node) const {
    return node < entries_.size() && entries_[node].state != State::Dropped;
}

void KeptKernels::measured(size_t node, bool holds, uint64_t bytes, uint64_t prepare_ns, uint64_t op_ns) {
    if (node >= entries_.size()) return;
    Entry &e = entries_[node];
    // At least a page, so that kernels holding almost nothing still cost something.
    e.cost = std::max<uint64_t>(bytes, 4096);
    e.prepare_ns = prepare_ns;
    const double prepare = static_cast<double>(prepare_ns);
    e.candidate = holds && e.cost <= budget_ && prepare >= kMinShareOfOp * static_cast<double>(op_ns);
    e.state = State::Dropped;
    measured_ = true;
}

std::vector<size_t> KeptKernels::choose(uint64_t run_ns) {
    std::vector<size_t> dropped;
    if (!measured_) return dropped;
    measured_ = false;
    const double min_ns_per_byte = std::max(kMinNsPerByte, kMinRunSharePerByte * static_cast<double>(run_ns));
    std::vector<size_t> order;
    for (size_t i = 0; i < entries_.size(); ++i)
        if (entries_[i].candidate &&
            static_cast<double>(entries_[i].prepare_ns) >= min_ns_per_byte * static_cast<double>(entries_[i].cost))
            order.push_back(i);
    // Most time saved per byte first; ties in graph order.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return static_cast<double>(entries_[a].prepare_ns) * static_cast<double>(entries_[b].cost) >
               static_cast<double>(entries_[b].prepare_ns) * static_cast<double>(entries_[a].cost);
    });
    std::vector<bool> chosen(entries_.size(), false);
    uint64_t total = 0;
    for (size_t i : order)
        if (entries_[i].cost <= budget_ - total) {
            chosen[i] = true;
            total += entries_[i].cost;
        }
    kept_ = 0;
    bytes_ = total;
    for (size_t i = 0; i < entries_.size(); ++i) {
        Entry &e = entries_[i];
        if (e.state == State::Open) continue;
        if (e.state == State::Chosen && !chosen[i]) dropped.push_back(i);
        e.state = chosen[i] ? State::Chosen : State::Dropped;
        if (chosen[i]) ++kept_;
    }
    return dropped;
}

} // namespace onnxstream
