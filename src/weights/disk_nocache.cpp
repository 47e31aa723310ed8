// The simplest provider: read the file when the op needs it; the tensor is freed after the op.
#include "weights/provider.h"
#include "weights/weight_files.h"

namespace onnxstream {

namespace {
class NoCacheProvider : public WeightsProvider {
public:
    void validate(const WeightSpec &spec) override { resolve_weight_file(folder_, spec); }
    Tensor fetch(const WeightSpec &spec, const Allocator &alloc) override {
        return read_counted(spec, alloc);
    }
};
} // namespace

std::unique_ptr<WeightsProvider> make_nocache_provider() { return std::make_unique<NoCacheProvider>(); }

} // namespace onnxstream
