// Gate non-linearities and the per-row cell updates of LSTM, GRU and RNN (ops/recurrent.cpp), on float32.
//
// A cell update works on one batch row at one time step, gate after gate in ONNX's order (LSTM i, o, f, c;
// GRU z, r, h; RNN one gate): `xw` is the row's X_t·Wᵀ with every bias that can be added up front, `gates`
// its H_{t-1}·Rᵀ, overwritten with the activated gates. Clipping follows ONNX Runtime: the pre-activation of
// every gate (peephole term included) is clipped, the LSTM cell state before h() is not.
#pragma once

#include <cstddef>
#include <limits>
#include <string>

namespace onnxstream::recurrent {

enum class ActKind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };

struct Activation {
    ActKind kind = ActKind::Tanh;
    float alpha = 0, beta = 0;
};

// The activation called `name` (ONNX's spelling in any case, as ONNX Runtime accepts), or false.
bool activation_kind(const std::string &name, ActKind &kind);
// Whether the activation reads activation_alpha / activation_beta values, and the value it uses when the
// lists run out before it: that of the ONNX operator of the same name (LeakyRelu 0.01, HardSigmoid 0.2 and
// 0.5, Elu 1, ThresholdedRelu 1, Affine 1 and 0; ScaledTanh 1 and 1, which has no ONNX operator).
bool takes_alpha(ActKind kind);
bool takes_beta(ActKind kind);
float default_alpha(ActKind kind);
float default_beta(ActKind kind);

// v[i] = a(v[i]) for i < n.
void activate(const Activation &a, float *v, size_t n);

constexpr float kNoClip = std::numeric_limits<float>::infinity();

struct LstmCell {
    size_t hidden = 0;
    Activation f, g, h;
    float clip = kNoClip;
    bool input_forget = false;
    const float *peephole = nullptr; // [3H]: i, o, f; nullptr without P
};
// c: the row's cell state, updated in place; h_out: the new hidden state.
void lstm_cell(const LstmCell &cell, const float *xw, float *gates, float *c, float *h_out);

struct GruCell {
    size_t hidden = 0;
    Activation f, g;
    float clip = kNoClip;
    bool linear_before_reset = false;
};
// z and r into gates[0, 2H). Without linear_before_reset also rh = r ⊙ H_{t-1}: the h gate's recurrent
// product is rh·R_hᵀ, which the caller computes into gates[2H, 3H) before gru_output.
void gru_update_reset(const GruCell &cell, const float *xw, float *gates, const float *h_prev, float *rh);
// The new hidden state. gates[2H, 3H): (r ⊙ H_{t-1})·R_hᵀ, or with linear_before_reset H_{t-1}·R_hᵀ + Rb_h
// (multiplied by r here).
void gru_output(const GruCell &cell, const float *xw, float *gates, const float *h_prev, float *h_out);

struct RnnCell {
    size_t hidden = 0;
    Activation f;
    float clip = kNoClip;
};
void rnn_cell(const RnnCell &cell, const float *xw, const float *gates, float *h_out);

} // namespace onnxstream::recurrent
