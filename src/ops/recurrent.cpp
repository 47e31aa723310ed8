// LSTM, GRU and RNN (ONNX opsets 7 to 22): one layer, forward, reverse or bidirectional, layout 0
// ([seq, batch, ...]) or 1 ([batch, seq, ...]), per-row sequence lengths.
//
// Per direction, X·Wᵀ for every time step at once is one XNNPACK fully connected product, with the biases
// that do not depend on the step folded in. H_{t-1}·Rᵀ is a second fully connected operator, R packed once
// per direction and run on the batch's rows at every step (GRU without linear_before_reset needs r before
// its h gate's product, so R's z, r rows and its h rows are two operators). The gate non-linearities run per
// batch row (recurrent_kernels.h). W, R, B and P may be float32, float16 or 8-bit weights beside float32 X
// (RunContext::kernel_weight widens them), or activations; float16 X computes in float32.
//
// sequence_lens: steps at or past a row's length leave its state as it was and give zeros in Y, so Y_h (and
// Y_c) is the state after the row's last step (forward) or after step 0 (reverse, which starts at step
// length - 1). A row of length 0 gives zeros in Y_h and Y_c, as in ONNX Runtime.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>

#include "ops/layout.h"
#include "ops/recurrent_kernels.h"
#include "ops/registry.h"
#include "util/strings.h"
#include "xnnpack/matmul.h"

namespace onnxstream {

namespace {

using namespace recurrent;

enum Input : size_t { kX = 0, kW = 1, kR = 2, kB = 3, kSeqLens = 4, kInitialH = 5, kInitialC = 6, kP = 7 };

struct OpKind {
    const char *name;
    int64_t gates;            // gate blocks in W and R
    size_t activations;       // per direction
    const char *gate_names;   // the activations' roles, for messages
    size_t max_inputs, max_outputs;
    const char *defaults;     // one direction's activations when the attribute is absent
};
const OpKind kLstm{"LSTM", 4, 3, "f, g, h", 8, 3, "Sigmoid,Tanh,Tanh"};
const OpKind kGru{"GRU", 3, 2, "f, g", 6, 2, "Sigmoid,Tanh"};
const OpKind kRnn{"RNN", 1, 1, "f", 6, 2, "Tanh"};

struct Config {
    int64_t hidden = 0;
    int64_t dirs = 1;
    bool reverse_only = false; // direction "reverse"
    bool batch_first = false;  // layout 1
    float clip = kNoClip;
    bool input_forget = false, linear_before_reset = false;
    std::vector<Activation> acts; // kind.activations per direction, forward's first
};

template <typename... Args>[[noreturn]] void invalid(const std::string &where, Args &&...args) {
    fail(ONNXSTREAM_ERR_INVALID_MODEL, where, ": ", std::forward<Args>(args)...);
}

std::vector<Activation> parse_activations(const std::string &where, const OpKind &kind, const Attributes &attrs,
                                          int64_t dirs) {
    const std::string *raw = attrs.raw("activations");
    std::string list = raw ? *raw : kind.defaults;
    if (!raw && dirs == 2) list += std::string(",") + kind.defaults;
    std::vector<std::string> names;
    for (auto part : split(list, ',')) names.emplace_back(part);
    // ONNX's RNN schema gives "Tanh,Tanh" as its default whatever the direction; exporters that write the
    // default out give a single-direction RNN two names, of which ONNX Runtime reads the first.
    if (&kind == &kRnn && dirs == 1 && names.size() == 2) names.resize(1);
    const size_t want = kind.activations * static_cast<size_t>(dirs);
    if (names.size() != want)
        invalid(where, "attribute activations lists ", names.size(), " functions (", list, "), expected ", want, ": ",
                kind.activations, " per direction (", kind.gate_names, ")", dirs == 2 ? " for each of 2 directions" : "");
    const std::vector<float> alphas = attrs.get_floats("activation_alpha"), betas = attrs.get_floats("activation_beta");
    size_t next_alpha = 0, next_beta = 0;
    std::vector<Activation> out;
    for (const std::string &name : names) {
        Activation a;
        if (!activation_kind(name, a.kind))
            invalid(where, "activation '", name, "' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ",
                    "ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus");
        // The lists hold values only for the functions that take them, in order (ONNX Runtime's reading).
        if (takes_alpha(a.kind)) a.alpha = next_alpha < alphas.size() ? alphas[next_alpha++] : default_alpha(a.kind);
        if (takes_beta(a.kind)) a.beta = next_beta < betas.size() ? betas[next_beta++] : default_beta(a.kind);
        out.push_back(a);
    }
    return out;
}

// r_shape: R's shape, which tells hidden_size when the attribute is absent (ONNX leaves it optional).
Config parse_config(const std::string &where, const OpKind &kind, const Attributes &attrs, const Shape &r_shape) {
    Config c;
    const std::string direction = attrs.get_string("direction", "forward");
    if (direction == "bidirectional")
        c.dirs = 2;
    else if (direction == "reverse")
        c.reverse_only = true;
    else if (direction != "forward")
        invalid(where, "attribute direction is '", direction, "', expected forward, reverse or bidirectional");
    const int64_t layout = attrs.get_int("layout", 0);
    if (layout != 0 && layout != 1)
        invalid(where, "attribute layout is ", layout, ", expected 0 ([seq_length, batch_size, ...]) or 1 ",
                "([batch_size, seq_length, ...])");
    c.batch_first = layout == 1;
    if (attrs.has("hidden_size")) {
        c.hidden = attrs.get_int("hidden_size", 0);
        if (c.hidden <= 0 || c.hidden > (int64_t{1} << 40))
            invalid(where, "attribute hidden_size is ", c.hidden, ", expected a positive number below 2^40");
    } else {
        if (r_shape.size() != 3 || r_shape[2] <= 0 || r_shape[2] > (int64_t{1} << 40))
            invalid(where, "attribute hidden_size is missing and R ", shape_str(r_shape),
                    " does not tell it (expected [num_directions, ", kind.gates, "*hidden_size, hidden_size])");
        c.hidden = r_shape[2];
    }
    if (attrs.has("clip")) {
        c.clip = attrs.get_float("clip", 0.0f);
        if (!(c.clip > 0.0f)) invalid(where, "attribute clip is ", c.clip, ", expected a positive threshold");
    }
    c.input_forget = attrs.get_int("input_forget", 0) != 0;
    c.linear_before_reset = attrs.get_int("linear_before_reset", 0) != 0;
    c.acts = parse_activations(where, kind, attrs, c.dirs);
    return c;
}

struct Dims {
    int64_t seq = 0, batch = 0, input = 0;
};

Dims dims_of(const Config &c, const Shape &x) {
    return {x[c.batch_first ? 1 : 0], x[c.batch_first ? 0 : 1], x[2]};
}

Shape state_shape(const Config &c, const Dims &d) {
    return c.batch_first ? Shape{d.batch, c.dirs, c.hidden} : Shape{c.dirs, d.batch, c.hidden};
}

std::vector<TensorInfo> infer_recurrent(const InferContext &ctx, const OpKind &kind) {
    ctx.require_inputs(3, kind.max_inputs);
    ctx.require_dtype(kX, {DType::F32, DType::F16});
    const TensorInfo &x = ctx.input(kX);
    for (size_t i : {kW, kR})
        if (!is_float_weight_dtype(ctx.input(i).dtype, ctx.input(i).quant.present))
            ctx.error(i == kW ? "W" : "R", " is ", dtype_name(ctx.input(i).dtype),
                      "; expected float32, float16 or a quantized 8-bit weight");
    const Config c = parse_config(ctx.node.where, kind, ctx.attrs(), ctx.input(kR).shape);
    if (x.shape.size() != 3)
        ctx.error("X must be 3-D ([seq_length, batch_size, input_size]", c.batch_first ? ", batch first with layout 1" : "",
                  "), got ", shape_str(x.shape));
    const Dims d = dims_of(c, x.shape);
    const int64_t gh = kind.gates * c.hidden;
    const std::string g = kind.gates == 1 ? "" : cat(kind.gates, "*");
    auto expect = [&](size_t i, const char *name, const Shape &want, const std::string &form) {
        if (ctx.input(i).shape != want)
            ctx.error(name, " must be ", form, " = ", shape_str(want), " (hidden_size ", c.hidden, ", ", c.dirs,
                      c.dirs == 1 ? " direction" : " directions", "), got ", shape_str(ctx.input(i).shape));
    };
    expect(kW, "W", {c.dirs, gh, d.input}, cat("[num_directions, ", g, "hidden_size, input_size]"));
    expect(kR, "R", {c.dirs, gh, c.hidden}, cat("[num_directions, ", g, "hidden_size, hidden_size]"));
    auto require_float = [&](size_t i, const char *name) {
        const DType t = ctx.input(i).dtype;
        if (t != DType::F32 && t != DType::F16) ctx.error(name, " is ", dtype_name(t), "; expected float32 or float16");
    };
    if (ctx.has_input(kB)) {
        require_float(kB, "B");
        expect(kB, "B", {c.dirs, 2 * gh}, cat("[num_directions, ", 2 * kind.gates, "*hidden_size]"));
    }
    if (ctx.has_input(kSeqLens)) {
        const DType t = ctx.input(kSeqLens).dtype;
        if (t != DType::I32 && t != DType::I64)
            ctx.error("sequence_lens is ", dtype_name(t), "; expected int32 (or int64)");
        expect(kSeqLens, "sequence_lens", {d.batch}, "[batch_size]");
    }
    const std::string state_form = c.batch_first ? "[batch_size, num_directions, hidden_size]"
                                                 : "[num_directions, batch_size, hidden_size]";
    for (size_t i : {kInitialH, kInitialC}) {
        if (!ctx.has_input(i)) continue;
        const char *name = i == kInitialH ? "initial_h" : "initial_c";
        require_float(i, name);
        expect(i, name, state_shape(c, d), state_form);
    }
    if (ctx.has_input(kP)) {
        require_float(kP, "P");
        expect(kP, "P", {c.dirs, 3 * c.hidden}, "[num_directions, 3*hidden_size]");
    }
    if (ctx.output_count() > kind.max_outputs)
        ctx.error(kind.name, " has at most ", kind.max_outputs, " outputs (Y, Y_h", kind.max_outputs == 3 ? ", Y_c" : "",
                  "), model.txt declares ", ctx.output_count());
    const Shape y = c.batch_first ? Shape{d.batch, d.seq, c.dirs, c.hidden} : Shape{d.seq, c.dirs, d.batch, c.hidden};
    std::vector<TensorInfo> out{TensorInfo{x.dtype, y, {}}};
    for (size_t k = 1; k < ctx.output_count(); ++k) out.push_back(TensorInfo{x.dtype, state_shape(c, d), {}});
    return out;
}

// Where row b of direction dir sits in a state tensor (initial_h/c, Y_h, Y_c) and at step t in Y, in floats.
struct Indexer {
    const Config &c;
    Dims d;
    int64_t state(int64_t dir, int64_t b) const {
        return (c.batch_first ? b * c.dirs + dir : dir * d.batch + b) * c.hidden;
    }
    int64_t y(int64_t t, int64_t dir, int64_t b) const {
        return (c.batch_first ? (b * d.seq + t) * c.dirs + dir : (t * c.dirs + dir) * d.batch + b) * c.hidden;
    }
    // Row of X (and of X·Wᵀ) for step t of batch row b.
    int64_t x_row(int64_t t, int64_t b) const { return c.batch_first ? b * d.seq + t : t * d.batch + b; }
};

// A float32 view of float input i (float16 and 8-bit widened), or nullptr when it is omitted.
const float *f32_input(const RunContext &ctx, size_t i, Tensor &holder) {
    if (!ctx.has_input(i)) return nullptr;
    holder = ctx.kernel_weight(i, ctx.input(i), 0);
    return holder.data<float>();
}

// The state of one direction while it walks the sequence.
struct Walk {
    Walk(const OpKind &kind, const Config &c, const Indexer &ix, const std::vector<int64_t> &lens, RunContext &ctx)
        : kind(kind), c(c), ix(ix), lens(lens), ctx(ctx) {}
    const OpKind &kind;
    const Config &c;
    const Indexer &ix;
    const std::vector<int64_t> &lens;
    RunContext &ctx;
    int64_t dir = 0;
    bool reverse = false;
    const float *xw = nullptr; // [rows, G*H]: X·Wᵀ + step-independent biases
    float *gates = nullptr;    // [batch, G*H]
    float *h_prev = nullptr, *h_next = nullptr, *cell = nullptr, *rh = nullptr; // [batch, H]
    const xnn::FullyConnectedF32 *rec = nullptr;   // H_{t-1}·Rᵀ (GRU without linear_before_reset: z, r rows)
    const xnn::FullyConnectedF32 *rec_h = nullptr; // GRU without linear_before_reset: (r ⊙ H_{t-1})·R_hᵀ
    LstmCell lstm;
    GruCell gru;
    RnnCell rnn;
    float *y = nullptr; // Y (output 0, always declared)

    // A step's work is small next to waking the pool's workers, which sleep between parallel sections: on 2
    // cores a bidirectional LSTM of 256 units at batch 4 ran almost 3x slower on 2 threads than on 1. A step
    // uses the pool only when its recurrent product has at least 2^24 multiply-adds.
    pthreadpool_t step_pool() const {
        const double h = static_cast<double>(c.hidden);
        const double macs = static_cast<double>(ix.d.batch) * static_cast<double>(kind.gates) * h * h;
        return macs >= static_cast<double>(size_t{1} << 24) ? ctx.pool() : nullptr;
    }
    // Rows per task of the per-row gate loops: enough gate values that a task outweighs its dispatch.
    size_t row_tile() const {
        const size_t per_row = static_cast<size_t>(kind.gates * c.hidden);
        return std::max<size_t>(1, (size_t{1} << 16) / std::max<size_t>(per_row, 1));
    }

    void step(int64_t t) {
        const int64_t batch = ix.d.batch, H = c.hidden, GH = kind.gates * H;
        const size_t row_bytes = static_cast<size_t>(H) * sizeof(float);
        bool any = false;
        for (int64_t b = 0; b < batch; ++b) any = any || t < lens[static_cast<size_t>(b)];
        pthreadpool_t pool = step_pool();
        if (any) rec->run(static_cast<size_t>(batch), h_prev, gates, pool);
        auto active = [&](size_t b) { return t < lens[b]; };
        auto rows = [&](const std::function<void(int64_t)> &fn) {
            parallel_for(pool, static_cast<size_t>(batch), row_tile(), [&](size_t begin, size_t end) {
                for (size_t b = begin; b < end; ++b) fn(static_cast<int64_t>(b));
            });
        };
        const bool two_phase = &kind == &kGru && !c.linear_before_reset;
        if (any && two_phase) {
            rows([&](int64_t b) {
                float *rhb = rh + b * H;
                if (active(static_cast<size_t>(b)))
                    gru_update_reset(gru, xw + ix.x_row(t, b) * GH, gates + b * GH, h_prev + b * H, rhb);
                else
                    std::memset(rhb, 0, row_bytes);
            });
            rec_h->run(static_cast<size_t>(batch), rh, gates + 2 * H, pool);
        }
        rows([&](int64_t b) {
            const float *hp = h_prev + b * H;
            float *hn = h_next + b * H, *yb = y + ix.y(t, dir, b);
            if (!active(static_cast<size_t>(b))) {
                std::memcpy(hn, hp, row_bytes);
                std::memset(yb, 0, row_bytes);
                return;
            }
            const float *xwb = xw + ix.x_row(t, b) * GH;
            float *g = gates + b * GH;
            if (&kind == &kLstm) {
                lstm_cell(lstm, xwb, g, cell + b * H, hn);
            } else if (&kind == &kGru) {
                if (!two_phase) gru_update_reset(gru, xwb, g, hp, nullptr);
                gru_output(gru, xwb, g, hp, hn);
            } else {
                rnn_cell(rnn, xwb, g, hn);
            }
            std::memcpy(yb, hn, row_bytes);
        });
        std::swap(h_prev, h_next);
    }
};

void run_recurrent(RunContext &ctx, const OpKind &kind) {
    const Tensor &x_in = ctx.input(kX);
    const Config c = parse_config(ctx.node.where, kind, ctx.attrs(), ctx.input(kR).shape());
    const Dims d = dims_of(c, x_in.shape());
    const Indexer ix{c, d};
    const int64_t H = c.hidden, GH = kind.gates * H, rows = d.seq * d.batch;

    std::vector<int64_t> lens(static_cast<size_t>(d.batch), d.seq);
    if (ctx.has_input(kSeqLens)) {
        lens = int_values(ctx.input(kSeqLens));
        for (size_t b = 0; b < lens.size(); ++b)
            if (lens[b] < 0 || lens[b] > d.seq)
                ctx.error(ONNXSTREAM_ERR_INVALID_ARGUMENT, "sequence_lens[", b, "] = ", lens[b], " is outside 0..",
                          d.seq, " (X's seq_length)");
    }

    Tensor holders[3];
    float *outs[3] = {nullptr, nullptr, nullptr};
    const size_t n_out = ctx.output_count();
    for (size_t k = 0; k < n_out; ++k) outs[k] = out_f32(ctx, ctx.alloc_output(k), holders[k]);

    Tensor x_holder, w_holder, r_holder, b_holder, p_holder, h0_holder, c0_holder;
    const float *x = as_f32(ctx, x_in, x_holder);
    const float *w = f32_input(ctx, kW, w_holder), *r = f32_input(ctx, kR, r_holder);
    const float *bias = f32_input(ctx, kB, b_holder), *peep = f32_input(ctx, kP, p_holder);
    const float *h0 = f32_input(ctx, kInitialH, h0_holder);
    const float *c0 = &kind == &kLstm ? f32_input(ctx, kInitialC, c0_holder) : nullptr;

    const Shape state{d.batch, H};
    Tensor xw_t = ctx.scratch(DType::F32, {rows, GH}), gates_t = ctx.scratch(DType::F32, {d.batch, GH});
    Tensor ha = ctx.scratch(DType::F32, state), hb = ctx.scratch(DType::F32, state);
    Tensor cell_t = ctx.scratch(DType::F32, state), rh_t = ctx.scratch(DType::F32, state);
    float *xw = xw_t.data<float>();
    const size_t row_bytes = static_cast<size_t>(H) * sizeof(float);

    for (int64_t dir = 0; dir < c.dirs; ++dir) {
        Walk walk(kind, c, ix, lens, ctx);
        walk.dir = dir;
        walk.reverse = c.reverse_only || dir == 1;
        const Activation *acts = c.acts.data() + dir * static_cast<int64_t>(kind.activations);
        // Wb + Rb wherever the sum enters the gate as is; GRU's Rb_h with linear_before_reset is scaled by r.
        std::vector<float> x_bias(static_cast<size_t>(GH), 0.0f), r_bias;
        if (bias) {
            const float *wb = bias + dir * 2 * GH, *rb = wb + GH;
            for (int64_t j = 0; j < GH; ++j) x_bias[static_cast<size_t>(j)] = wb[j] + rb[j];
            if (&kind == &kGru && c.linear_before_reset) {
                r_bias.assign(static_cast<size_t>(GH), 0.0f);
                for (int64_t j = 2 * H; j < GH; ++j) {
                    x_bias[static_cast<size_t>(j)] = wb[j];
                    r_bias[static_cast<size_t>(j)] = rb[j];
                }
            }
        }
        if (d.input > 0) {
            xnn::FullyConnectedF32(static_cast<size_t>(d.input), static_cast<size_t>(GH), w + dir * GH * d.input, false,
                                   x_bias.data(), static_cast<size_t>(d.input), static_cast<size_t>(GH))
                .run(static_cast<size_t>(rows), x, xw, ctx.pool());
        } else {
            for (int64_t i = 0; i < rows; ++i) std::memcpy(xw + i * GH, x_bias.data(), x_bias.size() * sizeof(float));
        }
        const float *rd = r + dir * GH * H;
        const bool split_h = &kind == &kGru && !c.linear_before_reset;
        const size_t h = static_cast<size_t>(H), gh = static_cast<size_t>(GH);
        xnn::FullyConnectedF32 rec(h, split_h ? 2 * h : gh, rd, false, r_bias.empty() ? nullptr : r_bias.data(), h, gh);
        std::unique_ptr<xnn::FullyConnectedF32> rec_h;
        if (split_h) rec_h = std::make_unique<xnn::FullyConnectedF32>(h, h, rd + 2 * H * H, false, nullptr, h, gh);

        walk.xw = xw;
        walk.gates = gates_t.data<float>();
        walk.h_prev = ha.data<float>();
        walk.h_next = hb.data<float>();
        walk.cell = cell_t.data<float>();
        walk.rh = rh_t.data<float>();
        walk.rec = &rec;
        walk.rec_h = rec_h.get();
        walk.y = outs[0];
        walk.lstm = LstmCell{h, acts[0], acts[std::min<size_t>(1, kind.activations - 1)],
                             acts[kind.activations - 1], c.clip, c.input_forget, peep ? peep + dir * 3 * H : nullptr};
        walk.gru = GruCell{h, acts[0], acts[std::min<size_t>(1, kind.activations - 1)], c.clip, c.linear_before_reset};
        walk.rnn = RnnCell{h, acts[0], c.clip};
        for (int64_t b = 0; b < d.batch; ++b) {
            float *hp = walk.h_prev + b * H, *cb = walk.cell + b * H;
            if (h0) std::memcpy(hp, h0 + ix.state(dir, b), row_bytes);
            else std::memset(hp, 0, row_bytes);
            if (c0) std::memcpy(cb, c0 + ix.state(dir, b), row_bytes);
            else std::memset(cb, 0, row_bytes);
        }
        for (int64_t s = 0; s < d.seq; ++s) walk.step(walk.reverse ? d.seq - 1 - s : s);
        for (int64_t b = 0; b < d.batch; ++b) {
            const bool empty = lens[static_cast<size_t>(b)] == 0;
            const float *finals[2] = {walk.h_prev + b * H, walk.cell + b * H};
            for (size_t k = 1; k < n_out; ++k) {
                float *dst = outs[k] + ix.state(dir, b);
                if (empty) std::memset(dst, 0, row_bytes);
                else std::memcpy(dst, finals[k - 1], row_bytes);
            }
        }
    }
    for (size_t k = 0; k < n_out; ++k) store_f32_output(ctx, ctx.output(k), holders[k]);
}

std::vector<TensorInfo> infer_lstm(const InferContext &ctx) { return infer_recurrent(ctx, kLstm); }
std::vector<TensorInfo> infer_gru(const InferContext &ctx) { return infer_recurrent(ctx, kGru); }
std::vector<TensorInfo> infer_rnn(const InferContext &ctx) { return infer_recurrent(ctx, kRnn); }
void run_lstm(RunContext &ctx) { run_recurrent(ctx, kLstm); }
void run_gru(RunContext &ctx) { run_recurrent(ctx, kGru); }
void run_rnn(RunContext &ctx) { run_recurrent(ctx, kRnn); }

} // namespace

void register_recurrent_ops(Registry &r) {
    // X reaches XNNPACK as the fully connected operator's input (padding wanted); every other input is packed
    // as an operator's weight or read by the op's own loops. The float ones compute in float32.
    const uint32_t exact = ~1u, f32 = 0b11101110u;
    r.add("LSTM", infer_lstm, run_lstm).with_reads_weights_exactly(exact).with_f32_weight_mask(f32);
    r.add("GRU", infer_gru, run_gru).with_reads_weights_exactly(exact).with_f32_weight_mask(f32);
    r.add("RNN", infer_rnn, run_rnn).with_reads_weights_exactly(exact).with_f32_weight_mask(f32);
}

} // namespace onnxstream
