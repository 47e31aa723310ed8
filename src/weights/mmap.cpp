// Zero-copy provider: weight files are mapped read-only; pages are file-backed (the kernel can drop
// and re-read them under memory pressure instead of swapping) and shared between processes.
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

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
        if (bytes == 0) return read_weight_file(file, spec, alloc, &bytes_copied_);
        int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail(ONNXSTREAM_ERR_IO, "cannot open weight file ", file.path, ": ", std::strerror(errno));
        void *p = ::mmap(nullptr, bytes, PROT_READ, MAP_SHARED, fd, 0);
        int err = errno;
        ::close(fd);
        // ENOMEM: no free range of address space that large (a 32-bit process has about 3 GB in all, in
        // pieces), not an I/O problem with the file.
        if (p == MAP_FAILED && err == ENOMEM)
            fail(ONNXSTREAM_ERR_OUT_OF_MEMORY, "cannot map weight file ", file.path, " (", bytes,
                 " bytes): no room in the address space (", std::strerror(err),
                 "); the nocache or prefetch provider reads weights instead of mapping them");
        if (p == MAP_FAILED) fail(ONNXSTREAM_ERR_IO, "cannot map weight file ", file.path, ": ", std::strerror(err));
        bytes_read_ += bytes; // paged in lazily while the op computes
        Tensor t(spec.dtype, spec.shape, borrow_storage(p, bytes, [p, bytes]() { ::munmap(p, bytes); }));
        t.set_quant(spec.quant);
        t.set_layout(file.layout);
        return serve_layout(std::move(t), spec, alloc, &bytes_copied_);
    }
};
} // namespace

std::unique_ptr<WeightsProvider> make_mmap_provider() { return std::make_unique<MmapProvider>(); }

} // namespace onnxstream
