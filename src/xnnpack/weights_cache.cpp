#include "xnnpack/weights_cache.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <cpuinfo.h>

#include "xnnpack/xnn.h"

namespace onnxstream::xnn {

namespace {
thread_local PackingScope *t_scope = nullptr;

// Which stored entry each live operator holds, for delete_operator.
std::mutex g_holds_mutex;
std::unordered_map<struct xnn_operator *, std::pair<PackedStore *, uint64_t>> &holds() {
    static auto *map = new std::unordered_map<struct xnn_operator *, std::pair<PackedStore *, uint64_t>>();
    return *map;
}
} // namespace

PackingScope::PackingScope(PackedStore *store_, uint64_t key_) : store(store_), key(key_), previous(t_scope) {
    t_scope = this;
}

PackingScope::~PackingScope() {
    std::free(reserved);
    t_scope = previous;
}

bool PackingScope::will_look_up() const {
    return has_weights_cache() && t_scope == this && store && key != 0 && !used;
}

#if ONNXSTREAM_XNNPACK_2024

namespace {
uint64_t mix_string(uint64_t h, const char *s) {
    for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 0x100000001b3ull;
    return h;
}

// The scope whose operator XNNPACK is creating right now, if it asked for the cache.
PackingScope *creating() {
    PackingScope *s = t_scope;
    return s && s->used && s->store ? s : nullptr;
}

uint64_t entry_key(const PackingScope &s, const struct xnn_weights_cache_look_up_key *key) {
    return mix_argument(s.creation_key, key->seed);
}

size_t look_up(void *, const struct xnn_weights_cache_look_up_key *key) {
    PackingScope *s = creating();
    if (!s || s->held_key != 0) return SIZE_MAX;
    const uint64_t k = entry_key(*s, key);
    const void *p = nullptr;
    try {
        p = s->store->acquire(k, 0);
    } catch (...) { // a store that cannot map its file: XNNPACK packs as without a cache
        return SIZE_MAX;
    }
    if (!p) return SIZE_MAX;
    s->held_key = k;
    s->held_address = p;
    s->served = true;
    return reinterpret_cast<size_t>(p);
}

void *reserve_space(void *, size_t n) {
    PackingScope *s = creating();
    if (!s || s->look_up_only) return nullptr;
    std::free(s->reserved);
    s->reserved = nullptr;
    // The widest XNN_ALLOCATION_ALIGNMENT of any target; a whole number of alignments, as aligned_alloc asks.
    constexpr size_t kAlignment = 128;
    s->reserved = std::aligned_alloc(kAlignment, (n + kAlignment - 1) / kAlignment * kAlignment);
    return s->reserved;
}

// The handle XNNPACK keeps is the packed bytes' address (offset_to_addr returns it as is). A convolution
// found by look_up calls this too, with no bytes: it gets what look_up found.
size_t look_up_or_insert(void *, const struct xnn_weights_cache_look_up_key *key, void *ptr, size_t size) {
    PackingScope *s = creating();
    if (!s) return SIZE_MAX;
    const uint64_t k = entry_key(*s, key);
    if (s->held_key == k) return reinterpret_cast<size_t>(s->held_address);
    if (s->held_key != 0 || !ptr) return SIZE_MAX;
    try {
        const void *p = s->store->acquire(k, size);
        if (!p) p = s->store->insert(k, ptr, size);
        s->held_key = k;
        s->held_address = p;
        return reinterpret_cast<size_t>(p);
    } catch (...) { // no exception may cross XNNPACK's C frames: end_packing reports the failure
        s->failed = true;
        return SIZE_MAX;
    }
}

bool is_finalized(void *) { return true; } // entries may be added at any time; setup requires true

void *offset_to_addr(void *, size_t offset) { return reinterpret_cast<void *>(offset); }

enum xnn_status delete_cache(void *) { return xnn_status_success; }

struct xnn_weights_cache_provider g_provider = {nullptr, look_up, reserve_space, look_up_or_insert,
                                                is_finalized, offset_to_addr, delete_cache};
} // namespace

struct xnn_weights_cache_provider *begin_packing(const char *function, uint64_t arguments_key) {
    PackingScope *s = t_scope;
    if (!s || !s->will_look_up()) return nullptr;
    s->used = true;
    s->creation_key = mix_argument(mix_string(s->key, function), arguments_key);
    return &g_provider;
}

bool end_packing(struct xnn_operator *op) {
    PackingScope *s = t_scope;
    if (!s || !s->used) return true;
    std::free(s->reserved);
    s->reserved = nullptr;
    if (s->failed) { // the store could not take the packed weights: the operator has none
        if (op) xnn_delete_operator(op);
        op = nullptr;
    }
    if (s->held_key != 0) {
        if (!op) {
            s->store->release(s->held_key);
        } else {
            std::lock_guard<std::mutex> lock(g_holds_mutex);
            holds()[op] = {s->store, s->held_key};
        }
    }
    s->held_key = 0;
    s->held_address = nullptr;
    return !s->failed;
}

#else

struct xnn_weights_cache_provider *begin_packing(const char *, uint64_t) { return nullptr; }
bool end_packing(struct xnn_operator *) { return true; }

#endif

std::string cpu_fingerprint() {
    if (!cpuinfo_initialize()) return "unknown";
    const struct cpuinfo_core *core = cpuinfo_get_core(0);
    std::string id = "uarch=" + std::to_string(core ? static_cast<unsigned>(core->uarch) : 0u) + ";isa=";
    const bool features[] = {cpuinfo_has_x86_avx(),        cpuinfo_has_x86_avx2(),      cpuinfo_has_x86_fma3(),
                             cpuinfo_has_x86_f16c(),       cpuinfo_has_x86_avx512f(),   cpuinfo_has_x86_avx512bw(),
                             cpuinfo_has_x86_avx512vnni(), cpuinfo_has_arm_neon(),      cpuinfo_has_arm_neon_fp16_arith(),
                             cpuinfo_has_arm_neon_dot()};
    for (bool f : features) id += f ? '1' : '0';
    return id;
}

namespace {
std::atomic<uint64_t> g_from_store{0}, g_packed{0};
} // namespace

CreationCounts creation_counts() { return {g_from_store.load(), g_packed.load()}; }

void count_creation(const struct xnn_weights_cache_provider *cache) {
    // A scope is used by one creation only, so the innermost one still says what this creation found.
    const bool from_store = cache && t_scope && t_scope->served;
    (from_store ? g_from_store : g_packed).fetch_add(1, std::memory_order_relaxed);
}

namespace {
// The store entry op holds ({nullptr, 0}: none), forgotten when `forget` (the operator is being deleted).
std::pair<PackedStore *, uint64_t> hold_of(struct xnn_operator *op, bool forget) {
    std::lock_guard<std::mutex> lock(g_holds_mutex);
    auto it = holds().find(op);
    if (it == holds().end()) return {nullptr, 0};
    const std::pair<PackedStore *, uint64_t> held = it->second;
    if (forget) holds().erase(it);
    return held;
}
} // namespace

void idle_operator(struct xnn_operator *op) {
    const std::pair<PackedStore *, uint64_t> held = hold_of(op, /*forget=*/false);
    if (held.first) held.first->idle(held.second);
}

void delete_operator(struct xnn_operator *op) {
    if (!op) return;
    const std::pair<PackedStore *, uint64_t> held = hold_of(op, /*forget=*/true);
    xnn_delete_operator(op);
    if (held.first) held.first->release(held.second);
}

} // namespace onnxstream::xnn
