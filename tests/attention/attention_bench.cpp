// Times ScaledDotProductAttention's algorithms on the SD 1.5 UNet's attention shapes (f32, 8 heads) and
// reports the tracked-allocator peak above the op's inputs (score blocks, f16/transposed head copies; the
// packed K/V blocks live inside XNNPACK operators and are not counted). Wall time is the best of the runs;
// CPU time (all threads) is that run's, which stays meaningful when other processes share the cores.
// Usage: attention_bench [threads=2] [runs=3] [only_shape_index] [ROWSxKEYS,...]
// The last argument times flash with each of those tiles instead of the algorithms below.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "exec/model.h"
#include "util/error.h"

using namespace onnxstream;

namespace {

struct BenchShape {
    int64_t heads, s, t, d;
};

struct Algo {
    const char *name;
    AttentionAlgo algo;
    int slices;
    size_t block_bytes;
    size_t tile_rows = 0, tile_keys = 0; // flash's tile (0: the engine's choice for this CPU)
};

std::string dims(std::initializer_list<int64_t> d) {
    std::string s = "(";
    for (int64_t x : d) s += (s.size() > 1 ? "," : "") + std::to_string(x);
    return s + ")";
}

} // namespace

int main(int argc, char **argv) {
    size_t threads = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 2;
    int runs = argc > 2 ? std::atoi(argv[2]) : 3;
    int only = argc > 3 ? std::atoi(argv[3]) : -1;
    std::vector<std::string> tile_names;
    const BenchShape shapes[] = {
        {8, 4096, 4096, 40}, // 64x64 latent self-attention (the biggest)
        {8, 4096, 77, 40},   // its cross-attention
        {8, 1024, 1024, 80},
        {8, 256, 256, 160},
        {8, 64, 64, 160},
    };
    std::vector<Algo> algos = {
        {"full", AttentionAlgo::Full, 0, 0},
        {"sliced2", AttentionAlgo::Sliced, 2, 0},
        {"sliced8", AttentionAlgo::Sliced, 8, 0},
        {"flash", AttentionAlgo::Flash, 0, 0},
        {"flash_256KB", AttentionAlgo::Flash, 0, 256 << 10},
        {"flash_64x512", AttentionAlgo::Flash, 0, 0, 64, 512},
        {"flash_128x1024", AttentionAlgo::Flash, 0, 0, 128, 1024},
        {"auto", AttentionAlgo::Auto, 0, 0},
    };
    if (argc > 4) {
        algos.clear();
        std::string list = argv[4];
        for (size_t at = 0; at < list.size();) {
            size_t comma = list.find(',', at);
            if (comma == std::string::npos) comma = list.size();
            tile_names.push_back("flash_" + list.substr(at, comma - at));
            at = comma + 1;
        }
        for (const std::string &name : tile_names) {
            size_t rows = 0, keys = 0;
            if (std::sscanf(name.c_str(), "flash_%zux%zu", &rows, &keys) != 2 || rows == 0 || keys == 0) {
                std::fprintf(stderr, "attention_bench: a tile is ROWSxKEYS, not %s\n", name.c_str() + 6);
                return 2;
            }
            algos.push_back({name.c_str(), AttentionAlgo::Flash, 0, 0, rows, keys});
        }
    }
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::printf("%-22s %-12s %10s %10s %14s\n", "shape (heads,S,T,D)", "algorithm", "ms/run", "cpu ms",
                "peak bytes");
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si) {
        if (only >= 0 && static_cast<size_t>(only) != si) continue;
        const BenchShape &b = shapes[si];
        Shape qs{b.heads, b.s, b.d}, ks{b.heads, b.t, b.d};
        std::vector<float> q(static_cast<size_t>(shape_numel(qs))), k(static_cast<size_t>(shape_numel(ks)));
        for (float &x : q) x = dist(rng);
        for (float &x : k) x = dist(rng);
        std::string text = "attn:ScaledDotProductAttention*input:q" + dims({b.heads, b.s, b.d}) + ";k" +
                           dims({b.heads, b.t, b.d}) + ";v" + dims({b.heads, b.t, b.d}) + "*output:y" +
                           dims({b.heads, b.s, b.d}) + "\n";
        for (const Algo &a : algos) {
            try {
                ModelOptions o;
                o.threads = threads;
                o.run.attention = a.algo;
                o.run.attention_slices = a.slices;
                o.run.attention_block_bytes = a.block_bytes;
                o.run.flash_tile_rows = a.tile_rows;
                o.run.flash_tile_keys = a.tile_keys;
                Model m(o);
                m.load_string(text, "", "bench");
                m.push_input("q", DType::F32, qs, q.data(), q.size() * 4);
                m.push_input("k", DType::F32, ks, k.data(), k.size() * 4);
                m.push_input("v", DType::F32, ks, k.data(), k.size() * 4);
                m.run({}); // warm-up (plans, first-touch)
                double best = 1e30, best_cpu = 0;
                uint64_t peak = 0;
                for (int r = 0; r < runs; ++r) {
                    uint64_t base = m.allocator().current_bytes();
                    m.allocator().reset_peak();
                    auto t0 = std::chrono::steady_clock::now();
                    std::clock_t c0 = std::clock();
                    m.run({});
                    auto t1 = std::chrono::steady_clock::now();
                    double ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
                    double cpu = 1000.0 * static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
                    if (ms < best) best = ms, best_cpu = cpu;
                    peak = std::max<uint64_t>(peak, m.allocator().peak_bytes() - base);
                }
                std::printf("%-22s %-12s %10.1f %10.1f %14llu\n",
                            dims({b.heads, b.s, b.t, b.d}).c_str(), a.name, best, best_cpu,
                            static_cast<unsigned long long>(peak));
                std::fflush(stdout);
            } catch (const Error &e) {
                std::printf("%s: %s\n", a.name, e.what());
            }
        }
    }
    return 0;
}
