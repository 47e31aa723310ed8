// Whether the thread pool's workers spin between parallel sections or sleep (ONNXSTREAM_FLAG_SPIN_WORKERS).
// The executor sets it for the run on the run thread; the XNNPACK wrapper's operator flags and the engine's
// parallel_for read it there, so the choice follows each model without passing it through every op.
#pragma once

namespace onnxstream {

// True while a run of a model created with ONNXSTREAM_FLAG_SPIN_WORKERS is on this thread.
inline bool &spin_workers() {
    static thread_local bool spin = false;
    return spin;
}

// Sets spin_workers() for a scope and restores it.
class ScopedWorkerPolicy {
public:
    explicit ScopedWorkerPolicy(bool spin) : previous_(spin_workers()) { spin_workers() = spin; }
    ~ScopedWorkerPolicy() { spin_workers() = previous_; }
    ScopedWorkerPolicy(const ScopedWorkerPolicy &) = delete;
    ScopedWorkerPolicy &operator=(const ScopedWorkerPolicy &) = delete;

private:
    bool previous_;
};

} // namespace onnxstream
