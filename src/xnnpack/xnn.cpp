#include "xnnpack/xnn.h"

#include "xnnpack/compat.h"
#include "xnnpack/init.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <cpuinfo.h>

#include "tensor/allocator.h"
#include "tensor/mapping_cache.h"
#include "util/error.h"
#include "xnnpack/weights_cache.h"

namespace onnxstream::xnn {

// The read-past-the-end contract: every tracked tensor carries kTensorPadding readable bytes after its data
// and the executor gives the same to any input without them, so no kernel call needs a copy for slack.
static_assert(XNN_EXTRA_BYTES <= kTensorPadding, "tracked tensors must carry XNNPACK's read-past-the-end slack");

namespace {
const char *status_text(enum xnn_status s) {
    switch (s) {
    case xnn_status_success: return "success";
    case xnn_status_uninitialized: return "XNNPACK not initialized";
    case xnn_status_invalid_parameter: return "invalid parameter";
    case xnn_status_invalid_state: return "invalid state";
    case xnn_status_unsupported_parameter: return "unsupported parameter";
    case xnn_status_unsupported_hardware: return "unsupported hardware";
    case xnn_status_out_of_memory: return "out of memory";
    default: break; // newer XNNPACK snapshots add statuses
    }
    return "unknown status";
}
// XNNPACK's own buffers (packed weights, indirection buffers, workspaces) by the tensor allocator's rule
// (src/tensor/allocator.cpp): blocks of kDirectMapBytes and more get their own mapping, unmapped when freed. Through
// malloc, every big free raises glibc's mmap threshold and later packed-weight buffers stay in the heap:
// the full-size fp16 UNet in `min` (75 MB of tensors at peak) peaked at 121-125 MB RSS that way, 92 MB with
// direct mappings (87 MB with MALLOC_MMAP_THRESHOLD_=131072 for the whole process, which also slows it).
// Each block starts with a header saying how to free it.
struct BlockHeader {
    void *base;
    size_t map_bytes; // 0: malloc'ed
    size_t size;      // usable bytes, for reallocate
    size_t unused;
};

std::atomic<uint64_t> g_live_bytes{0}; // usable bytes of the blocks handed out and not freed
thread_local bool t_for_keeping = false;  // KernelKeepingScope

void *aligned_allocate(void *, size_t alignment, size_t size) {
    alignment = std::max(alignment, sizeof(BlockHeader));
    if (size > SIZE_MAX / 2) return nullptr;
    const size_t total = size + sizeof(BlockHeader) + alignment;
    void *base = nullptr;
    size_t map_bytes = 0;
    if (kUseDirectMaps && total >= kDirectMapBytes) {
        const Mapping m = map_pages(total, /*reuse_idle=*/!t_for_keeping);
        if (!m.base) return nullptr;
        base = m.base;
        map_bytes = m.bytes;
    } else {
        base = std::malloc(total);
        if (!base) return nullptr;
    }
    uintptr_t p = reinterpret_cast<uintptr_t>(base) + sizeof(BlockHeader);
    p = (p + alignment - 1) / alignment * alignment;
    BlockHeader h{base, map_bytes, size, 0};
    std::memcpy(reinterpret_cast<void *>(p - sizeof(BlockHeader)), &h, sizeof(h));
    g_live_bytes.fetch_add(size, std::memory_order_relaxed);
    return reinterpret_cast<void *>(p);
}

BlockHeader header_of(void *pointer) {
    BlockHeader h;
    std::memcpy(&h, static_cast<char *>(pointer) - sizeof(BlockHeader), sizeof(h));
    return h;
}

void deallocate(void *, void *pointer) {
    if (!pointer) return;
    const BlockHeader h = header_of(pointer);
    g_live_bytes.fetch_sub(h.size, std::memory_order_relaxed);
    if (h.map_bytes)
        unmap_pages({h.base, h.map_bytes});
    else
        std::free(h.base);
}

void *allocate(void *context, size_t size) { return aligned_allocate(context, alignof(std::max_align_t), size); }

void *reallocate(void *context, void *pointer, size_t size) {
    void *fresh = allocate(context, size);
    if (!fresh || !pointer) return fresh;
    std::memcpy(fresh, pointer, std::min(size, header_of(pointer).size));
    deallocate(context, pointer);
    return fresh;
}

const struct xnn_allocator kAllocator = {nullptr, allocate, reallocate, deallocate, aligned_allocate, deallocate};

} // namespace

void ensure_initialized() {
    static std::once_flag once;
    static enum xnn_status init_status = xnn_status_uninitialized;
    std::call_once(once, [] { init_status = xnn_initialize(&kAllocator); });
    check(init_status, "xnn_initialize");
}

void check(enum xnn_status status, const char *call) {
    if (status == xnn_status_success) return;
    Status code = ONNXSTREAM_ERR_INTERNAL;
    if (status == xnn_status_out_of_memory) code = ONNXSTREAM_ERR_OUT_OF_MEMORY;
    if (status == xnn_status_unsupported_parameter || status == xnn_status_unsupported_hardware)
        code = ONNXSTREAM_ERR_UNSUPPORTED;
    fail(code, call, " failed: ", status_text(status));
}

Workspace::~Workspace() { deallocate(nullptr, data_); }

void *Workspace::reserve(size_t bytes, size_t alignment) {
    if (bytes == 0) return nullptr;
    alignment = std::max<size_t>(alignment, 1);
    if (data_ && bytes <= bytes_ && alignment <= alignment_) return data_;
    deallocate(nullptr, data_);
    data_ = aligned_allocate(nullptr, alignment, bytes);
    bytes_ = data_ ? bytes : 0;
    alignment_ = data_ ? alignment : 0;
    if (!data_) fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "XNNPACK workspace of ", bytes, " bytes: allocation failed");
    return data_;
}

void OperatorDeleter::operator()(xnn_operator_t op) const { delete_operator(op); }

void run(const Operator &op, pthreadpool_t pool) { check(xnn_run_operator(op.get(), pool), "xnn_run_operator"); }

} // namespace onnxstream::xnn

namespace onnxstream {
void init_kernels() { xnn::ensure_initialized(); }

const char *kernel_library_description() { return xnn::api_description(); }

uint64_t kernel_library_bytes() { return xnn::g_live_bytes.load(std::memory_order_relaxed); }

KernelKeepingScope::KernelKeepingScope() : outer_(xnn::t_for_keeping) { xnn::t_for_keeping = true; }
KernelKeepingScope::~KernelKeepingScope() { xnn::t_for_keeping = outer_; }
bool KernelKeepingScope::active() { return xnn::t_for_keeping; }

bool cpu_has_fp16_arithmetic() {
    // cpuinfo_initialize is idempotent and thread-safe; when it fails (unreadable /proc on some
    // boards) nothing is known, and float32 is the choice that never faults.
    if (!cpuinfo_initialize()) return false;
    return cpuinfo_has_arm_neon_fp16_arith();
}

size_t cpu_l2_bytes_per_thread() {
    if (!cpuinfo_initialize()) return 0;
    const struct cpuinfo_processor *p = cpuinfo_get_processor(0);
    const struct cpuinfo_cache *l2 = p ? p->cache.l2 : nullptr;
    if (!l2 || l2->size == 0) return 0;
    return l2->size / (l2->processor_count ? l2->processor_count : 1);
}
} // namespace onnxstream
