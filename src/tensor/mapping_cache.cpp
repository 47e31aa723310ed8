#include "tensor/mapping_cache.h"

#include <algorithm>
#include <deque>
#include <mutex>

#include <sys/mman.h>
#include <unistd.h>

namespace onnxstream {

namespace {

struct Cache {
    std::mutex mutex;
    std::deque<Mapping> idle; // oldest first
    uint64_t idle_bytes = 0;
    uint64_t budget = 0;
    uint64_t in_use = 0;     // bytes handed out by map_pages and not given back
    uint64_t high_water = 0; // the most in_use since the oldest running run began (or its owner's last run)
    int runs = 0;            // runs between begin_mapping_cache_run and end_mapping_cache_run
    // The runs of the current scope: whose, and whether all of them keep their pages for the next one.
    const void *owner = nullptr;
    bool keep = false;
    // Between runs: whose next run the idle pages within the high-water mark are kept for (nullptr: none).
    const void *kept_for = nullptr;

    // Unmaps whole idle mappings, oldest first, until idle_bytes <= limit. Called with the mutex held.
    void trim(uint64_t limit);
    // The idle bytes allowed now: the budget, and while a run is on whatever keeps in_use + idle within the
    // run's high-water mark, which the process's resident memory has reached already.
    uint64_t allowance() const {
        if (budget == 0) return 0;
        return (runs > 0 || kept_for) && high_water > in_use ? std::max(budget, high_water - in_use) : budget;
    }
    void hand_out(uint64_t bytes) {
        in_use += bytes;
        high_water = std::max(high_water, in_use);
    }
};

Cache &cache() {
    static Cache *c = new Cache; // never destroyed: buffers may be freed by static destructors at exit
    return *c;
}

size_t page_round(size_t bytes) {
    static const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
}

void Cache::trim(uint64_t limit) {
    // Whole mappings, oldest first: unmapping a range that was just joined or split costs nothing extra,
    // and leaving the cache below its budget keeps the resident memory of the smallest modes down.
    while (idle_bytes > limit && !idle.empty()) {
        ::munmap(idle.front().base, idle.front().bytes);
        idle_bytes -= idle.front().bytes;
        idle.pop_front();
    }
}

} // namespace

Mapping map_pages(size_t bytes, bool reuse_idle) {
    const size_t want = page_round(bytes);
    Cache &c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        // Best fit, newest first among equals (the likeliest to still be in the CPU caches). A bigger one is
        // split: its tail stays idle, pages already touched, for the next request.
        auto best = c.idle.end();
        for (auto it = c.idle.begin(); reuse_idle && it != c.idle.end(); ++it)
            if (it->bytes >= want && (best == c.idle.end() || it->bytes <= best->bytes)) best = it;
        if (best != c.idle.end()) {
            Mapping m = *best;
            c.idle.erase(best);
            c.idle_bytes -= m.bytes;
            if (m.bytes > want) {
                c.idle.push_back({static_cast<char *>(m.base) + want, m.bytes - want});
                c.idle_bytes += m.bytes - want;
                m.bytes = want;
            }
            c.hand_out(m.bytes);
            return m;
        }
        // New pages: first give back the idle ones they would put over the high-water mark.
        c.hand_out(want);
        c.trim(c.allowance());
    }
    void *p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        // The cache may be what stands between us and the memory: drop it and try once more.
        {
            std::lock_guard<std::mutex> lock(c.mutex);
            c.trim(0);
        }
        p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            std::lock_guard<std::mutex> lock(c.mutex);
            c.in_use -= want;
            return {};
        }
    }
    return {p, want};
}

void unmap_pages(const Mapping &mapping) {
    if (!mapping.base) return;
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.in_use -= std::min<uint64_t>(c.in_use, mapping.bytes);
    if (mapping.bytes > c.allowance()) {
        ::munmap(mapping.base, mapping.bytes);
        return;
    }
    // Rejoin the idle pieces it borders (split from one mapping, or mapped next to each other): munmap and
    // later splits treat the joined range as one.
    Mapping joined = mapping;
    for (auto it = c.idle.begin(); it != c.idle.end();) {
        char *b = static_cast<char *>(it->base);
        if (b + it->bytes == joined.base || static_cast<char *>(joined.base) + joined.bytes == b) {
            joined.base = std::min(static_cast<void *>(b), joined.base);
            joined.bytes += it->bytes;
            c.idle_bytes -= it->bytes;
            it = c.idle.erase(it);
        } else {
            ++it;
        }
    }
    c.idle.push_back(joined);
    c.idle_bytes += joined.bytes;
    c.trim(c.allowance());
}

void set_mapping_cache_budget(uint64_t bytes) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.budget = bytes;
    c.kept_for = nullptr;
    c.trim(bytes);
}

void begin_mapping_cache_run(uint64_t budget, const void *owner, bool keep_for_next_run) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.budget = budget;
    if (c.runs++ == 0) {
        // The high-water mark of the run the kept pages came from still bounds them; any other run starts
        // from what is in use now, which trims them.
        if (!owner || c.kept_for != owner) c.high_water = c.in_use;
        c.owner = owner;
        c.keep = owner && keep_for_next_run;
    } else {
        c.keep = c.keep && owner == c.owner && keep_for_next_run;
    }
    c.kept_for = nullptr;
    c.trim(c.allowance());
}

void end_mapping_cache_run() {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.runs > 0) --c.runs;
    if (c.runs > 0) return;
    if (c.keep) c.kept_for = c.owner;
    c.trim(c.allowance());
}

void release_mapping_cache_owner(const void *owner) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (!owner || c.kept_for != owner) return;
    c.kept_for = nullptr;
    if (c.runs == 0) c.trim(c.budget);
}

uint64_t mapping_cache_idle_bytes() {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    return c.idle_bytes;
}

} // namespace onnxstream
