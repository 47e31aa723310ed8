#include "tensor/mapping_cache.h"

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

    // Unmaps the oldest mappings until idle_bytes <= limit. Called with the mutex held.
    void trim(uint64_t limit) {
        while (idle_bytes > limit && !idle.empty()) {
            ::munmap(idle.front().base, idle.front().bytes);
            idle_bytes -= idle.front().bytes;
            idle.pop_front();
        }
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

} // namespace

Mapping map_pages(size_t bytes) {
    const size_t want = page_round(bytes);
    Cache &c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        // Newest first: the block freed last is the likeliest to still be in the CPU caches.
        for (auto it = c.idle.rbegin(); it != c.idle.rend(); ++it)
            if (it->bytes >= want && it->bytes - want <= want / 8) {
                Mapping m = *it;
                c.idle.erase(std::next(it).base());
                c.idle_bytes -= m.bytes;
                return m;
            }
    }
    void *p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        // The cache may be what stands between us and the memory: drop it and try once more.
        {
            std::lock_guard<std::mutex> lock(c.mutex);
            c.trim(0);
        }
        p = ::mmap(nullptr, want, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return {};
    }
    return {p, want};
}

void unmap_pages(const Mapping &mapping) {
    if (!mapping.base) return;
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (mapping.bytes > c.budget) {
        ::munmap(mapping.base, mapping.bytes);
        return;
    }
    c.idle.push_back(mapping);
    c.idle_bytes += mapping.bytes;
    c.trim(c.budget);
}

void set_mapping_cache_budget(uint64_t bytes) {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.budget = bytes;
    c.trim(bytes);
}

uint64_t mapping_cache_idle_bytes() {
    Cache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    return c.idle_bytes;
}

} // namespace onnxstream
