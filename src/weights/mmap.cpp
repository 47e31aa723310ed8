// Zero-copy provider: weight files are mapped read-only; pages are file-backed (the kernel can drop
// and re-read them under memory pressure instead of swapping) and shared between processes.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/checked.h"
#include "util/error.h"
#include "weights/prepare.h"
#include "weights/provider.h"
#include "weights/weight_files.h"

namespace onnxstream {

namespace {
class MmapProvider : public WeightsProvider {
public:
    void validate(const WeightSpec &spec) override { resolve_weight_file(folder_, spec); }

    Tensor fetch(const WeightSpec &spec, const Allocator &alloc) override {
        ResolvedWeight file = resolve_weight_file(folder_, spec);
        size_t bytes = spec.byte_size();
        // bfloat16 in a store is widened on read; a tensor a store placed at an address its elements cannot
        // be loaded from directly (the format aligns nothing) is read too.
        const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
        const size_t lead = static_cast<size_t>(file.offset % page);
        if (bytes == 0 || file.bf16 || lead % dtype_size(spec.dtype) != 0)
            return read_counted(spec, alloc);
        const size_t span = checked::to_size(uint64_t(bytes) + lead, "weight " + spec.file);
        int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail(ONNXSTREAM_ERR_IO, "cannot open weight file ", file.path, ": ", std::strerror(errno));
        void *base = ::mmap(nullptr, span, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(file.offset - lead));
        int err = errno;
        ::close(fd);
        // ENOMEM: no free range of address space that large (a 32-bit process has about 3 GB in all, in
        // pieces), not an I/O problem with the file.
        if (base == MAP_FAILED && err == ENOMEM)
            fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "cannot map weight file ", file.path, " (", bytes,
                 " bytes): no room in the address space (", std::strerror(err),
                 "); the nocache or prefetch provider reads weights instead of mapping them");
        if (base == MAP_FAILED) fail(ONNXSTREAM_ERR_IO, "cannot map weight file ", file.path, ": ", std::strerror(err));
        void *p = static_cast<char *>(base) + lead;
        bytes_read_ += bytes; // paged in lazily while the op computes
        Tensor t(spec.dtype, spec.shape, borrow_storage(p, bytes, [base, span]() { ::munmap(base, span); }));
        t.set_quant(spec.quant);
        t.set_layout(file.layout);
        return serve_layout(std::move(t), spec, alloc, &bytes_copied_);
    }
};
} // namespace

std::unique_ptr<WeightsProvider> make_mmap_provider() { return std::make_unique<MmapProvider>(); }

} // namespace onnxstream
