// Keeps every weight after its first read: later runs read nothing from disk, at the price of holding
// the whole model in (tracked) memory.
#include <map>
#include <utility>

#include "weights/provider.h"
#include "weights/weight_files.h"

namespace onnxstream {

namespace {
class RamProvider : public WeightsProvider {
public:
    void validate(const WeightSpec &spec) override { resolve_weight_file(folder_, spec); }

    Tensor fetch(const WeightSpec &spec, const Allocator &alloc) override {
        auto key = std::make_pair(spec.file, spec.wanted);
        auto it = cache_.find(key);
        if (it == cache_.end())
            it = cache_.emplace(key, read_counted(spec, alloc)).first;
        return it->second;
    }
    Tensor fetch_rows(const WeightSpec &spec, int64_t begin, int64_t end, const Allocator &alloc) override {
        return copy_weight_rows(fetch(spec, alloc), begin, end, alloc, &bytes_copied_);
    }

private:
    std::map<std::pair<std::string, Layout>, Tensor> cache_;
};
} // namespace

std::unique_ptr<WeightsProvider> make_ram_provider() { return std::make_unique<RamProvider>(); }

} // namespace onnxstream
