// A separate process for the weights cache tests: loads a model, optionally behind the persistent
// weights cache, runs it and writes each output as raw bytes. Prints one line of figures.
// Usage: weight_cache_run MODEL_DIR CACHE_PATH|-|-mmap|-prefetch|-ram OUT_PREFIX RUNS [INPUT_NAME=FILE]...
// WEIGHT_CACHE_KEEP_MAPPED=1 sets WeightCacheOptions::keep_pages_mapped.
// "-" runs without the cache on the nocache provider, "-mmap" etc. on that built-in provider (baselines).
// Inputs are raw float32 in the shape model.txt declares. Exit status 0 on success, 1 on any error
// (message on stderr).
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <sys/resource.h>

#include "exec/model.h"
#include "util/error.h"
#include "weights/weight_cache.h"

using namespace onnxstream;

namespace {
std::string read_all(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(ONNXSTREAM_ERR_IO, "cannot open ", path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// "RssAnon" / "RssFile" of /proc/self/status in kB (0 when unavailable): mapped cache pages are file-backed.
long status_kb(const std::string &key) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.compare(0, key.size() + 1, key + ":") == 0) return std::atol(line.c_str() + key.size() + 1);
    return 0;
}

uint64_t cpu_us() {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<uint64_t>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000 +
           static_cast<uint64_t>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

uint64_t us_since(std::chrono::steady_clock::time_point t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t).count());
}
} // namespace

int main(int argc, char **argv) {
    if (argc < 5) {
        std::cerr << "usage: weight_cache_run MODEL_DIR CACHE_PATH|-|-mmap|-prefetch|-ram OUT_PREFIX RUNS [NAME=FILE]...\n";
        return 1;
    }
    try {
        auto start = std::chrono::steady_clock::now();
        const std::string dir = argv[1], cache = argv[2], out_prefix = argv[3];
        const int runs = std::stoi(argv[4]);
        ModelOptions options;
        options.threads = 2;
        options.provider = ONNXSTREAM_PROVIDER_NOCACHE;
        if (cache == "-mmap") options.provider = ONNXSTREAM_PROVIDER_MMAP;
        if (cache == "-prefetch") options.provider = ONNXSTREAM_PROVIDER_PREFETCH;
        if (cache == "-ram") options.provider = ONNXSTREAM_PROVIDER_RAM;
        Model model(options);
        model.load_file(dir);
        const WeightCacheProvider *cp = nullptr;
        if (cache.empty() || cache[0] != '-') {
            WeightCacheOptions co;
            const char *keep = std::getenv("WEIGHT_CACHE_KEEP_MAPPED");
            co.keep_pages_mapped = keep && std::string(keep) == "1";
            auto p = make_weight_cache_provider(make_nocache_provider(), cache, model.graph(),
                                                read_all(dir + "/model.txt"), dir, co);
            cp = p.get();
            model.set_provider(std::move(p));
        }
        for (int i = 5; i < argc; ++i) {
            std::string arg = argv[i];
            size_t eq = arg.find('=');
            std::string name = arg.substr(0, eq), data = read_all(arg.substr(eq + 1));
            const Value &v = model.graph().values()[static_cast<size_t>(model.graph().find_value(name))];
            model.push_input(name, DType::F32, v.declared_shape, data.data(), data.size());
        }
        const uint64_t startup_us = us_since(start);
        const uint64_t startup_cpu_us = cpu_us();
        struct rusage ru0;
        getrusage(RUSAGE_SELF, &ru0);
        uint64_t first_us = 0, best_us = 0, best_cpu_us = 0, bytes = 0;
        for (int r = 0; r < runs; ++r) {
            auto t = std::chrono::steady_clock::now();
            uint64_t c0 = cpu_us();
            model.run(nullptr);
            uint64_t us = us_since(t), cpu = cpu_us() - c0;
            if (r == 0) first_us = us;
            if (r == 1 || (r > 1 && us < best_us)) best_us = us;
            if (r == 1 || (r > 1 && cpu < best_cpu_us)) best_cpu_us = cpu;
            bytes += model.last_run().bytes_read;
        }
        for (size_t k = 0; k < model.outputs().size(); ++k) {
            const Tensor &t = model.outputs()[k];
            std::ofstream out(out_prefix + "_" + std::to_string(k) + ".bin", std::ios::binary);
            out.write(static_cast<const char *>(t.raw()), static_cast<std::streamsize>(t.byte_size()));
            if (!out) fail(ONNXSTREAM_ERR_IO, "cannot write ", out_prefix);
        }
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        std::printf("built=%d startup_us=%llu startup_cpu_us=%llu setup_us=%llu first_run_us=%llu best_later_run_us=%llu "
                    "best_later_run_cpu_us=%llu run_bytes_read=%llu "
                    "served=%llu widened=%llu file_bytes=%llu startup_maxrss_kb=%ld maxrss_kb=%ld rss_anon_kb=%ld rss_file_kb=%ld reason=%s\n",
                    cp ? int(cp->stats().built) : -1, (unsigned long long)startup_us,
                    (unsigned long long)startup_cpu_us,
                    (unsigned long long)(cp ? cp->stats().setup_us : 0), (unsigned long long)first_us,
                    (unsigned long long)best_us, (unsigned long long)best_cpu_us, (unsigned long long)bytes,
                    (unsigned long long)(cp ? cp->stats().served.load() : 0),
                    (unsigned long long)(cp ? cp->stats().widened : 0),
                    (unsigned long long)(cp ? cp->stats().file_bytes : 0), ru0.ru_maxrss, ru.ru_maxrss,
                    status_kb("RssAnon"),
                    status_kb("RssFile"),
                    cp && !cp->stats().rebuild_reason.empty() ? cp->stats().rebuild_reason.c_str() : "-");
        return 0;
    } catch (const Error &e) {
        std::cerr << status_name(e.status()) << ": " << e.what() << "\n";
        return 1;
    } catch (const std::exception &e) {
        std::cerr << e.what() << "\n";
        return 1;
    }
}
