// XNNPACK's weights cache (2024 API), over a store of packed weights that the layer above provides.
//
// Creating a weighted XNNPACK operator packs its weights into XNNPACK's blocked layout: a pass over every
// weight byte on every run of a streaming model (most of a small-batch MatMul's time). With a cache,
// XNNPACK first looks the packed weights up and packs only what it does not find. The store behind it
// (weights/packed_store.h) keeps them in a file: a later process maps them instead of packing, the pages
// are shared between processes, and the raw weight is never touched.
//
// An operator uses the cache only when created inside a PackingScope, which names what is packed (the
// weight and which rows of it). The key of an entry adds the XNNPACK function, every scalar argument of
// the creation and XNNPACK's own seed (its kernel's tile sizes), so a different operator shape, CPU or
// kernel never meets another's bytes. Builds against the 2022 API have no cache: scopes are inert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "xnnpack/xnnpack_config.h"

struct xnn_operator;
struct xnn_weights_cache_provider;

namespace onnxstream::xnn {

// True on builds whose XNNPACK has the weights cache API.
constexpr bool has_weights_cache() { return ONNXSTREAM_XNNPACK_2024 != 0; }

// Where packed weights live. Called from the thread creating or deleting an operator; implementations
// must be thread-safe (several models may share one).
class PackedStore {
public:
    virtual ~PackedStore() = default;
    // The packed bytes stored under key, held for the caller until release(key); null when absent.
    virtual const void *acquire(uint64_t key, size_t bytes) = 0;
    // Stores a copy of data[0, bytes) under key and returns where it now lives, held as acquire's.
    // Never null: a store that cannot persist keeps the copy in memory. Throws only OUT_OF_MEMORY.
    virtual const void *insert(uint64_t key, const void *data, size_t bytes) = 0;
    // Ends one hold of key's bytes (acquire or insert).
    virtual void release(uint64_t key) = 0;
    // The holder will not read key's bytes before its next run: a store serving them from a file may
    // take them out of the process's resident pages (they stay in the page cache and fault back in).
    virtual void idle(uint64_t) {}
};

// While alive, the next weighted operator created on this thread looks its packed weights up in `store`
// under `key` (0: no caching). One operator per scope: a second creation inside it packs without the
// cache, so two operators can never share a key by accident.
class PackingScope {
public:
    PackingScope(PackedStore *store, uint64_t key);
    ~PackingScope();
    PackingScope(const PackingScope &) = delete;
    PackingScope &operator=(const PackingScope &) = delete;

    // True when the next operator created on this thread will look its packed weights up through this
    // scope: a 2024 build, a store and key, the innermost scope on this thread, not used yet.
    bool will_look_up() const;

    PackedStore *store;
    uint64_t key;
    uint64_t creation_key = 0; // key + XNNPACK function + creation arguments, set when used
    bool used = false;
    uint64_t held_key = 0;     // the store key the operator holds (0: none)
    const void *held_address = nullptr;
    bool failed = false;       // the store failed to take the packed weights (out of memory)
    bool served = false;       // look_up found the packed weights: XNNPACK read nothing of the weight
    // Only what the store holds: XNNPACK's request for a packing buffer is refused, so creation fails
    // instead of packing (and never reads the weight it was given). See create_from_store.
    bool look_up_only = false;
    void *reserved = nullptr;  // XNNPACK's packing buffer (reserve_space), freed with the scope
    PackingScope *previous;
};

// Creates an operator from what `packing`'s store holds, without its weight: create(stand_in) must create
// it with stand_in for every weight and bias pointer. A hit maps the stored bytes; a miss stops at the
// refused packing buffer before reading anything. Returns create's result, or false without calling it
// when the scope will not look up (XNNPACK would then pack from the stand-ins).
template <typename Create> bool create_from_store(PackingScope &packing, Create &&create) {
    if (!packing.will_look_up()) return false;
    static const float stand_in[1] = {0.0f};
    packing.look_up_only = true;
    const bool created = create(static_cast<const float *>(stand_in));
    packing.look_up_only = false;
    return created;
}

// Mixes one creation argument into a key: integers and enums by value, floats by bits; pointers (the
// weight, bias and scale data the scope's key stands for) are left out.
template <typename T> uint64_t mix_argument(uint64_t h, T v) {
    if constexpr (std::is_pointer_v<T> || std::is_null_pointer_v<T>) {
        return h;
    } else {
        uint64_t bits = 0;
        static_assert(sizeof(T) <= sizeof bits, "creation arguments are scalars");
        __builtin_memcpy(&bits, &v, sizeof(T));
        return (h ^ bits) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
    }
}

// Around one xnn_create_* call (compat.h create_operator): begin returns the cache to pass (null: none,
// when no unused scope is active); end records which stored entry the new operator holds, so that
// delete_operator releases it, or releases it now when creation failed (op null). end returns false, having
// deleted the operator, when the store could not take its packed weights (out of memory).
struct xnn_weights_cache_provider *begin_packing(const char *function, uint64_t arguments_key);
bool end_packing(struct xnn_operator *op);

// Weighted operators created so far in this process (any thread): those whose packed weights a store served
// (their weight was never read) and those packed from their weight. Read around one op by the executor: an
// op whose every new operator came from the store did not touch its big weights' pages.
struct CreationCounts {
    uint64_t from_store = 0, packed = 0;
};
CreationCounts creation_counts();
// create_operator's record of one successful creation (cache: what begin_packing returned).
void count_creation(const struct xnn_weights_cache_provider *cache);

// What decides which kernels XNNPACK picks on this CPU (microarchitecture and instruction-set features):
// part of a packed-weights file's identity, so a file is never used on a CPU it was not packed for.
std::string cpu_fingerprint();

// xnn_delete_operator, releasing the operator's hold on stored packed weights first. Every operator
// handle in src/xnnpack/ is deleted through it.
void delete_operator(struct xnn_operator *op);

// An operator kept between runs has run for this one: PackedStore::idle for the packed weights it holds.
void idle_operator(struct xnn_operator *op);

} // namespace onnxstream::xnn
