// Where weights come from. The executor asks for each op's weights just before the op runs and drops
// its reference right after; a provider decides whether that frees them (nocache, prefetch), unmaps
// them (mmap) or keeps them (ram).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tensor/tensor.h"
#include "util/stopwatch.h"

namespace onnxstream {

// Sees every read of weight bytes from storage, on whichever thread did it (the prefetch thread's reads
// too): the profiler's weight-read tracks. Called concurrently; must not throw.
class ReadObserver {
public:
    virtual ~ReadObserver() = default;
    virtual void weight_read(const std::string &file, std::chrono::steady_clock::time_point start,
                             uint64_t bytes) noexcept = 0;
};

class WeightsProvider {
public:
    virtual ~WeightsProvider() = default;

    // Set the folder that weight file names are relative to (may be empty for host providers).
    virtual void set_folder(const std::string &folder) { folder_ = folder; }
    // Called at load for every weight reference: file-based providers check existence and size here,
    // so a broken model fails at load rather than mid-run. Throws IO.
    virtual void validate(const WeightSpec &) {}
    // The fetch order of the coming run (every weight of every op, in order), for read-ahead.
    virtual void begin_run(const std::vector<WeightSpec> &, const Allocator &) {}
    virtual void end_run() {}
    // Produce the weight in the layout serve_layout gives (weights/prepare.h). Throws IO / CALLBACK /
    // OUT_OF_MEMORY.
    virtual Tensor fetch(const WeightSpec &spec, const Allocator &alloc) = 0;
    // Rows [begin, end) along dim 0 of the weight (shape (end - begin, dims 1..)), laid out as fetch() would,
    // for ops that stream big weights in chunks. The default reads just those bytes from the weight file
    // in folder_; providers without files override it.
    virtual Tensor fetch_rows(const WeightSpec &spec, int64_t begin, int64_t end, const Allocator &alloc);

    // Bytes read from storage and time spent reading them (on any thread), since creation.
    uint64_t bytes_read() const { return bytes_read_.load(); }
    uint64_t read_us() const { return read_us_.load(); }
    // Bytes the provider wrote bringing weights to the asked layout or copying row ranges, since creation.
    uint64_t bytes_copied() const { return bytes_copied_.load(); }
    // Report reads to `observer` (nullptr: stop). Set between runs only.
    virtual void set_read_observer(ReadObserver *observer) { observer_.store(observer); }

protected:
    // read_weight_file for `spec` from folder_, counted in bytes_read/read_us.
    Tensor read_counted(const WeightSpec &spec, const Allocator &alloc);
    // Count a read of `bytes` of `file` that started when `watch` did, and report it to the observer.
    void count_read(const std::string &file, const Stopwatch &watch, uint64_t bytes) {
        read_us_ += watch.elapsed_us();
        bytes_read_ += bytes;
        if (ReadObserver *o = observer_.load()) o->weight_read(file, watch.started(), bytes);
    }

    std::string folder_;
    std::atomic<uint64_t> bytes_read_{0}, read_us_{0}, bytes_copied_{0};
    std::atomic<ReadObserver *> observer_{nullptr};
};

std::unique_ptr<WeightsProvider> make_nocache_provider();
std::unique_ptr<WeightsProvider> make_prefetch_provider(size_t budget_bytes);
std::unique_ptr<WeightsProvider> make_mmap_provider();
std::unique_ptr<WeightsProvider> make_ram_provider();

} // namespace onnxstream
