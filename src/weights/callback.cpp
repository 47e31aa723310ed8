#include "weights/callback.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"
#include "util/stopwatch.h"
#include "weights/prepare.h"
#include "weights/weight_files.h"

namespace onnxstream {

namespace {

class CallbackProvider : public WeightsProvider {
public:
    CallbackProvider(const onnxstream_weights_provider_t &vt, void *user_data) : user_data_(user_data) {
        std::memset(&vt_, 0, sizeof(vt_));
        std::memcpy(&vt_, &vt, std::min<size_t>(vt.struct_size, sizeof(vt_)));
    }
    ~CallbackProvider() override {
        if (vt_.destroy) vt_.destroy(user_data_);
    }

    void begin_run(const std::vector<WeightSpec> &order, const Allocator &) override {
        if (!vt_.prefetch) return;
        // The hint is given up front, in execution order; the host decides how far to read ahead.
        for (const WeightSpec &spec : order) {
            Request r(spec);
            vt_.prefetch(user_data_, &r.req);
        }
    }

    // Hosts serve whole weights only: fetch it and copy the rows (bounded memory needs a file provider).
    Tensor fetch_rows(const WeightSpec &spec, int64_t begin, int64_t end, const Allocator &alloc) override {
        return copy_weight_rows(fetch(spec, alloc), begin, end, alloc, &bytes_copied_);
    }

    Tensor fetch(const WeightSpec &spec, const Allocator &alloc) override {
        Request r(spec);
        WeightSpec plain = spec;
        plain.wanted = Layout::Plain; // hosts always serve the layout model.txt declares
        Tensor t;
        Stopwatch watch;
        if (vt_.acquire) {
            const void *data = nullptr;
            void *token = nullptr;
            onnxstream_status_t s = vt_.acquire(user_data_, &r.req, &data, &token);
            check(s, r, spec, "acquire");
            if (r.produced != spec.byte_size()) {
                if (vt_.release) vt_.release(user_data_, token);
                short_data(r, spec, "acquire");
            }
            if (!data && spec.byte_size() > 0) {
                if (vt_.release) vt_.release(user_data_, token);
                fail(ONNXSTREAM_ERR_CALLBACK, "weights provider acquire returned OK but a NULL pointer for '",
                     spec.file, "'");
            }
            auto release = vt_.release;
            void *ud = user_data_;
            t = Tensor(spec.dtype, spec.shape,
                       borrow_storage(data, spec.byte_size(), [release, ud, token]() { release(ud, token); }));
        } else {
            t = make_tensor(alloc, spec.dtype, spec.shape);
            check(vt_.read(user_data_, &r.req, t.raw()), r, spec, "read");
            if (r.produced != spec.byte_size()) short_data(r, spec, "read");
        }
        count_read(spec.file, watch, spec.byte_size());
        t.set_quant(spec.quant);
        return serve_layout(std::move(t), spec, alloc, &bytes_copied_);
    }

private:
    struct Request {
        explicit Request(const WeightSpec &spec) {
            std::memset(&req, 0, sizeof(req));
            req.struct_size = sizeof(req);
            req.file = spec.file.c_str();
            req.dtype = static_cast<onnxstream_dtype_t>(spec.dtype);
            req.rank = spec.shape.size();
            req.shape = spec.shape.data();
            req.byte_size = spec.byte_size();
            message[0] = '\0';
            req.error_message = message;
            req.error_message_capacity = sizeof(message);
            produced = spec.byte_size();
            req.bytes_produced = &produced;
        }
        // Not copyable: req points into the object.
        Request(const Request &) = delete;
        Request &operator=(const Request &) = delete;
        onnxstream_weight_request_t req;
        char message[512];
        size_t produced;
    };

    [[noreturn]] void short_data(const Request &r, const WeightSpec &spec, const char *what) {
        fail(ONNXSTREAM_ERR_CALLBACK, "weights provider ", what, " returned OK but produced ", r.produced,
             " bytes for '", spec.file, "' (expected ", spec.byte_size(), ")");
    }

    void check(onnxstream_status_t s, Request &r, const WeightSpec &spec, const char *what) {
        if (s == ONNXSTREAM_OK) return;
        r.message[sizeof(r.message) - 1] = '\0';
        fail(ONNXSTREAM_ERR_CALLBACK, "weights provider failed for '", spec.file, "' (", spec.byte_size(),
             " bytes, ", what, " returned ", status_name(s), ")",
             r.message[0] ? ": " : "", r.message);
    }

    onnxstream_weights_provider_t vt_;
    void *user_data_;
};

} // namespace

std::unique_ptr<WeightsProvider> make_callback_provider(const onnxstream_weights_provider_t &vt, void *user_data) {
    if (vt.struct_size == 0)
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "weights provider struct_size is 0 (set it to sizeof(onnxstream_weights_provider_t))");
    if (vt.struct_size < offsetof(onnxstream_weights_provider_t, release) + sizeof(vt.release))
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "weights provider struct_size ", vt.struct_size, " is too small");
    if (!vt.read && !vt.acquire)
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "weights provider has neither read nor acquire");
    if (vt.acquire && !vt.release)
        fail(ONNXSTREAM_ERR_INVALID_ARGUMENT, "weights provider has acquire but no release");
    return std::make_unique<CallbackProvider>(vt, user_data);
}

} // namespace onnxstream
