// Exporters often write the same tensor several times (a shared embedding per use, one copy of a constant
// shape or scale per layer, folded values that come out identical); each copy would become its own .bin file
// and its own load. Constants with the same type, shape and bytes become one.
//
// Multi-gigabyte models keep their weights on disk, so bytes are never loaded whole: candidates of the same
// type and shape are first told apart by a hash of a small sample (different weights nearly always differ
// in their first bytes), and only constants whose samples agree are compared in full, a bounded chunk at
// a time.
#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "onnx/passes/passes.h"

namespace onnxstream::importer {

namespace {

constexpr uint64_t kSampleBytes = 4096;
constexpr uint64_t kChunkBytes = uint64_t(1) << 20;

uint64_t fnv1a(const char *p, size_t n, uint64_t h = 1469598103934665603ull) {
    for (size_t i = 0; i < n; ++i) {
        h ^= static_cast<unsigned char>(p[i]);
        h *= 1099511628211ull;
    }
    return h;
}

// A hash of the first, middle and last few kilobytes (the whole tensor when it is small).
uint64_t sample_hash(const ConstantData &c) {
    const uint64_t size = c.byte_size();
    std::string buf;
    if (size <= 3 * kSampleBytes) {
        buf.resize(size);
        if (size) c.read(0, buf.data(), size);
        return fnv1a(buf.data(), buf.size());
    }
    buf.resize(kSampleBytes);
    uint64_t h = 1469598103934665603ull;
    for (uint64_t at : {uint64_t(0), (size - kSampleBytes) / 2, size - kSampleBytes}) {
        c.read(at, buf.data(), buf.size());
        h = fnv1a(buf.data(), buf.size(), h);
    }
    return h;
}

bool same_bytes(const ConstantData &a, const ConstantData &b) {
    const uint64_t size = a.byte_size();
    if (size != b.byte_size()) return false;
    std::string x, y;
    for (uint64_t at = 0; at < size; at += kChunkBytes) {
        size_t n = static_cast<size_t>(std::min(kChunkBytes, size - at));
        x.resize(n);
        y.resize(n);
        a.read(at, x.data(), n);
        b.read(at, y.data(), n);
        if (std::memcmp(x.data(), y.data(), n) != 0) return false;
    }
    return true;
}

} // namespace

bool dedup_constants(IrGraph &g) {
    GraphIndex idx(g);
    // Only constants nodes read take part: unread ones are dead code's business, and a constant that is a
    // graph output keeps its name.
    std::map<std::tuple<int32_t, Shape>, std::vector<std::string>> groups;
    for (const auto &kv : g.constants) {
        if (idx.graph_outputs.count(kv.first) || !idx.consumers.count(kv.first)) continue;
        groups[{kv.second.type(), kv.second.shape()}].push_back(kv.first);
    }
    std::unordered_map<std::string, std::string> replace; // duplicate -> the constant kept
    for (auto &kv : groups) {
        std::vector<std::string> &names = kv.second;
        if (names.size() < 2) continue;
        // The smallest name is kept, so the result does not depend on hash-map order.
        std::sort(names.begin(), names.end());
        std::map<uint64_t, std::vector<std::string>> by_sample;
        for (const auto &name : names) by_sample[sample_hash(g.constants.at(name))].push_back(name);
        for (auto &bucket : by_sample) {
            std::vector<std::string> kept;
            for (const auto &name : bucket.second) {
                const ConstantData &c = g.constants.at(name);
                bool merged = false;
                for (const auto &k : kept) {
                    if (same_bytes(g.constants.at(k), c)) {
                        replace[name] = k;
                        merged = true;
                        break;
                    }
                }
                if (!merged) kept.push_back(name);
            }
        }
    }
    if (replace.empty()) return false;
    for (Node &n : g.nodes)
        rename_reads(n, [&](const std::string &v) {
            auto it = replace.find(v);
            return it == replace.end() ? v : it->second;
        });
    for (const auto &kv : replace) g.constants.erase(kv.first);
    return true;
}

} // namespace onnxstream::importer
