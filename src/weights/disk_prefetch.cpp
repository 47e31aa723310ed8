// Reads weights ahead of use on a background thread, so disk I/O overlaps the current op's compute.
// The run's fetch order is known from the plan; the reader stays at most `budget` bytes ahead (the
// next weight is always allowed, so one weight larger than the budget still streams).
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "weights/provider.h"
#include "weights/weight_files.h"

namespace onnxstream {

namespace {

class PrefetchProvider : public WeightsProvider {
public:
    explicit PrefetchProvider(size_t budget) : budget_(budget), worker_([this] { work(); }) {}

    ~PrefetchProvider() override {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            quit_ = true;
            active_ = false;
        }
        cv_.notify_all();
        worker_.join();
    }

    void validate(const WeightSpec &spec) override { resolve_weight_file(folder_, spec); }

    void begin_run(const std::vector<WeightSpec> &order, const Allocator &alloc) override {
        std::lock_guard<std::mutex> lock(mutex_);
        order_ = order;
        alloc_ = &alloc;
        next_read_ = next_use_ = 0;
        ahead_bytes_ = 0;
        ready_.clear();
        active_ = true;
        cv_.notify_all();
    }

    void end_run() override {
        std::unique_lock<std::mutex> lock(mutex_);
        active_ = false;
        cv_.wait(lock, [this] { return !reading_; });
        ready_.clear();
        order_.clear();
        ahead_bytes_ = 0;
    }

    Tensor fetch(const WeightSpec &spec, const Allocator &alloc) override {
        std::unique_lock<std::mutex> lock(mutex_);
        bool expected = active_ && next_use_ < order_.size() && order_[next_use_].file == spec.file &&
                        order_[next_use_].wanted == spec.wanted;
        if (!expected) {
            lock.unlock();
            return read_counted(spec, alloc);
        }
        cv_.wait(lock, [this] { return !ready_.empty(); });
        Slot slot = std::move(ready_.front());
        ready_.pop_front();
        ++next_use_;
        ahead_bytes_ -= slot.bytes;
        cv_.notify_all();
        lock.unlock();
        if (slot.error) std::rethrow_exception(slot.error);
        return slot.tensor;
    }

private:
    struct Slot {
        Tensor tensor;
        std::exception_ptr error;
        size_t bytes = 0;
    };

    void work() {
        std::unique_lock<std::mutex> lock(mutex_);
        for (;;) {
            cv_.wait(lock, [this] {
                if (quit_) return true;
                if (!active_ || next_read_ >= order_.size()) return false;
                return ready_.empty() || ahead_bytes_ + order_[next_read_].byte_size() <= budget_;
            });
            if (quit_) return;
            WeightSpec spec = order_[next_read_++];
            const Allocator *alloc = alloc_;
            reading_ = true;
            lock.unlock();
            Slot slot;
            slot.bytes = spec.byte_size();
            try {
                slot.tensor = read_counted(spec, *alloc);
            } catch (...) {
                slot.error = std::current_exception();
            }
            lock.lock();
            reading_ = false;
            if (active_) {
                ahead_bytes_ += slot.bytes;
                ready_.push_back(std::move(slot));
            }
            cv_.notify_all();
        }
    }

    const size_t budget_;
    std::mutex mutex_;
    std::condition_variable cv_;
    std::vector<WeightSpec> order_;
    const Allocator *alloc_ = nullptr;
    size_t next_read_ = 0, next_use_ = 0, ahead_bytes_ = 0;
    std::deque<Slot> ready_;
    bool active_ = false, reading_ = false, quit_ = false;
    std::thread worker_; // last: started after every other member is constructed
};

} // namespace

std::unique_ptr<WeightsProvider> make_prefetch_provider(size_t budget_bytes) {
    return std::make_unique<PrefetchProvider>(budget_bytes);
}

} // namespace onnxstream
