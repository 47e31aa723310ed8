#include "exec/profiler.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>

namespace onnxstream {

namespace {

std::string json_string(const std::string &s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

// Trace timestamps are microseconds; keep nanosecond precision as decimals.
std::string us(uint64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%" PRIu64 ".%03u", ns / 1000, static_cast<unsigned>(ns % 1000));
    return buf;
}

std::string u64(uint64_t v) { return std::to_string(v); }

std::string fixed(double v, int decimals) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string thread_name(int track) {
    return track == 0 ? "ops and synchronous weight reads (run thread)"
                      : "weight reads (read-ahead thread " + std::to_string(track) + ")";
}

} // namespace

void Profiler::begin_run() {
    std::lock_guard<std::mutex> lock(reads_mutex_);
    start_ = std::chrono::steady_clock::now();
    run_thread_ = std::this_thread::get_id();
    run_ns_ = 0;
    ops_.clear();
    reads_.clear();
    read_threads_.clear();
}

uint64_t Profiler::since_start(std::chrono::steady_clock::time_point t) const {
    if (t <= start_) return 0;
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t - start_).count());
}

void Profiler::weight_read(const std::string &file, std::chrono::steady_clock::time_point start,
                           uint64_t bytes) noexcept {
    const auto end = std::chrono::steady_clock::now();
    try {
        std::lock_guard<std::mutex> lock(reads_mutex_);
        const std::thread::id self = std::this_thread::get_id();
        int track = 0;
        if (self != run_thread_) {
            auto it = std::find(read_threads_.begin(), read_threads_.end(), self);
            if (it == read_threads_.end()) it = read_threads_.insert(read_threads_.end(), self);
            track = static_cast<int>(it - read_threads_.begin()) + 1;
        }
        const uint64_t s = since_start(start);
        reads_.push_back(ReadRecord{file, s, std::max(since_start(end), s) - s, bytes, track});
    } catch (...) {
        // Out of memory while profiling: the read goes unrecorded rather than failing the run.
    }
}

std::string Profiler::trace_json() const {
    std::lock_guard<std::mutex> lock(reads_mutex_);
    std::string j = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"onnxstream\",\"run_us\":" +
                    us(run_ns_) + "},\"traceEvents\":[\n";
    int tracks = 1;
    for (const ReadRecord &r : reads_) tracks = std::max(tracks, r.track + 1);
    j += "{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"onnxstream run\"}}";
    for (int t = 0; t < tracks; ++t)
        j += ",\n{\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(t + 1) +
             ",\"name\":\"thread_name\",\"args\":{\"name\":" + json_string(thread_name(t)) + "}}";
    for (const OpRecord &o : ops_) {
        j += ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"cat\":\"op\",\"name\":" + json_string(o.type) +
             ",\"ts\":" + us(o.start_ns) + ",\"dur\":" + us(o.duration_ns) + ",\"args\":{\"op\":" +
             json_string(o.name) + ",\"index\":" + u64(o.index) + ",\"line\":" + std::to_string(o.line) +
             ",\"inputs\":" + json_string(o.inputs) + ",\"outputs\":" + json_string(o.outputs) +
             ",\"flops\":" + u64(o.flops) + ",\"weight_bytes\":" + u64(o.weight_bytes) +
             ",\"activation_bytes\":" + u64(o.activation_bytes) + ",\"weight_wait_us\":" + us(o.weight_wait_ns) +
             ",\"kernel_prepare_us\":" + us(o.kernel_prepare_ns) + ",\"memory_bytes\":" + u64(o.memory_bytes) +
             "}}";
        j += ",\n{\"ph\":\"C\",\"pid\":1,\"name\":\"tracked memory\",\"ts\":" + us(o.start_ns + o.duration_ns) +
             ",\"args\":{\"MB\":" + fixed(static_cast<double>(o.memory_bytes) / 1e6, 3) + "}}";
    }
    for (const ReadRecord &r : reads_)
        j += ",\n{\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(r.track + 1) +
             ",\"cat\":\"weight read\",\"name\":" + json_string(r.file) + ",\"ts\":" + us(r.start_ns) +
             ",\"dur\":" + us(r.duration_ns) + ",\"args\":{\"bytes\":" + u64(r.bytes) + "}}";
    return j + "\n]}\n";
}

std::string Profiler::summary(const Roofline &peak) const {
    struct Row {
        size_t count = 0;
        uint64_t ns = 0, flops = 0, weight_bytes = 0, activation_bytes = 0, prepare_ns = 0, wait_ns = 0;
    };
    std::map<std::string, Row> by_type;
    Row total;
    for (const OpRecord &o : ops_) {
        for (Row *r : {&by_type[o.type], &total}) {
            r->count += 1;
            r->ns += o.duration_ns;
            r->flops += o.flops;
            r->weight_bytes += o.weight_bytes;
            r->activation_bytes += o.activation_bytes;
            r->prepare_ns += o.kernel_prepare_ns;
            r->wait_ns += o.weight_wait_ns;
        }
    }
    std::vector<std::pair<std::string, Row>> rows(by_type.begin(), by_type.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.second.ns > b.second.ns; });
    rows.emplace_back("total", total);

    const bool with_peak = peak.flops_per_s > 0 && peak.bytes_per_s > 0;
    char line[256];
    std::string s;
    std::snprintf(line, sizeof line, "%-26s %6s %10s %6s %8s %9s %8s %8s %10s %8s%s\n", "op type", "count", "total ms",
                  "% run", "GFLOP/s", "weight MB", "wt GB/s", "act GB/s", "prepare ms", "wait ms",
                  with_peak ? "  % peak" : "");
    s += line;
    const double run_ms = static_cast<double>(run_ns_) / 1e6;
    for (const auto &[type, r] : rows) {
        const double sec = static_cast<double>(r.ns) / 1e9;
        const double gflops = sec > 0 ? static_cast<double>(r.flops) / sec / 1e9 : 0;
        const double wt_gbs = sec > 0 ? static_cast<double>(r.weight_bytes) / sec / 1e9 : 0;
        const double act_gbs = sec > 0 ? static_cast<double>(r.activation_bytes) / sec / 1e9 : 0;
        std::string peak_col;
        if (with_peak && sec > 0) {
            // Matrix ops against the GEMM peak; the others against bandwidth (bytes in and out).
            const double fraction = r.flops > 0 ? gflops * 1e9 / peak.flops_per_s
                                                : (act_gbs + wt_gbs) * 1e9 / peak.bytes_per_s;
            peak_col = "  " + fixed(100 * fraction, 1);
            peak_col = std::string(8 - std::min<size_t>(8, peak_col.size()), ' ') + peak_col;
        }
        std::snprintf(line, sizeof line, "%-26s %6zu %10.3f %6.1f %8s %9.2f %8.2f %8.2f %10.3f %8.3f%s\n",
                      type.substr(0, 26).c_str(), r.count, static_cast<double>(r.ns) / 1e6,
                      run_ms > 0 ? 100.0 * static_cast<double>(r.ns) / 1e6 / run_ms : 0.0,
                      r.flops > 0 ? fixed(gflops, 1).c_str() : "-", static_cast<double>(r.weight_bytes) / 1e6,
                      wt_gbs, act_gbs, static_cast<double>(r.prepare_ns) / 1e6, static_cast<double>(r.wait_ns) / 1e6,
                      peak_col.c_str());
        s += line;
    }
    std::lock_guard<std::mutex> lock(reads_mutex_);
    uint64_t read_bytes = 0, read_ns = 0, ahead = 0;
    for (const ReadRecord &r : reads_) {
        read_bytes += r.bytes;
        read_ns += r.duration_ns;
        ahead += r.track != 0;
    }
    s += "run " + fixed(run_ms, 3) + " ms; weight reads: " + std::to_string(reads_.size()) + " (" +
         std::to_string(ahead) + " on the read-ahead thread), " + fixed(static_cast<double>(read_bytes) / 1e6, 2) +
         " MB in " + fixed(static_cast<double>(read_ns) / 1e6, 3) + " ms\n";
    if (with_peak)
        s += "peak: " + fixed(peak.flops_per_s / 1e9, 1) + " GFLOP/s (float32 GEMM), " +
             fixed(peak.bytes_per_s / 1e9, 2) + " GB/s (memory)\n";
    return s;
}

} // namespace onnxstream
