"""LSTM, GRU and RNN: forward, reverse and bidirectional; layout 0 and 1; with and without B, initial_h/initial_c
and sequence_lens (unequal lengths, LSTM and GRU also 0); LSTM peepholes, input_forget and clip; GRU with
linear_before_reset 0 and 1; non-default activations with activation_alpha/beta; Y only, Y and Y_h, all outputs;
W, R, B (and P) as weights, as float16 weights and as pushed inputs; hidden sizes 16, 64, 128 and odd ones.

Every float32 output is held to a relative L2 error of at most 1e-5 against ONNX Runtime (besides the default
elementwise atol/rtol 1e-4). ONNX Runtime has no layout=1 LSTM/GRU (and ignores RNN's layout), so those cases'
ONNX models run the op with layout 0 between Transposes; the float16-activation case runs it in float32 between
Casts (ONNX Runtime's recurrent kernels are float32 only).
"""

from opcase import Case, const, rand, weight

CASES = []
GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
REL_L2 = 1e-5


def batch_first(helper, node):
    """node with layout=1 computed as Transposes around the same op with layout 0."""
    out = []
    ins = list(node.input)
    for i in (0, 5, 6):  # X, initial_h, initial_c: [batch, a, b] -> [a, batch, b]
        if i < len(ins) and ins[i]:
            t = f"{ins[i]}_seq_first"
            out.append(helper.make_node("Transpose", [ins[i]], [t], perm=[1, 0, 2]))
            ins[i] = t
    outs = [f"{o}_seq_first" for o in node.output]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name != "layout"}
    out.append(helper.make_node(node.op_type, ins, outs, **attrs))
    out.append(helper.make_node("Transpose", [outs[0]], [node.output[0]], perm=[2, 0, 1, 3]))
    for o, t in zip(node.output[1:], outs[1:]):
        out.append(helper.make_node("Transpose", [t], [o], perm=[1, 0, 2]))
    return out


def in_float32(helper, node):
    """node on float16 tensors computed in float32 between Casts."""
    from onnx import TensorProto
    out = []
    ins = list(node.input)
    for i, name in enumerate(ins):
        if name and i != 4:  # sequence_lens stays int32
            out.append(helper.make_node("Cast", [name], [f"{name}_f32"], to=TensorProto.FLOAT))
            ins[i] = f"{name}_f32"
    outs = [f"{o}_f32" for o in node.output]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    out.append(helper.make_node(node.op_type, ins, outs, **attrs))
    for o, t in zip(node.output, outs):
        out.append(helper.make_node("Cast", [t], [o], to=TensorProto.FLOAT16))
    return out


def case(name, op, seq=5, batch=3, inp=8, hidden=16, direction="forward", layout=0, bias=True, lens=None,
         init_h=False, init_c=False, peep=False, outputs=None, stored=None, as_weights=True, dtype="float32",
         opset=17, **attrs):
    dirs = 2 if direction == "bidirectional" else 1
    gh = GATES[op] * hidden
    s = hidden ** -0.5  # PyTorch's init range: pre-activations stay in the non-saturated range

    def param(*shape):
        x = rand(*shape, dtype=dtype, low=-s, high=s)
        return weight(x, stored=stored) if as_weights else x

    x = rand(batch, seq, inp, dtype=dtype) if layout else rand(seq, batch, inp, dtype=dtype)
    state = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    inputs = [x, param(dirs, gh, inp), param(dirs, gh, hidden), param(dirs, 2 * gh) if bias else None,
              const(lens, "int32") if lens is not None else None, rand(*state, dtype=dtype) if init_h else None]
    if op == "LSTM":
        inputs += [rand(*state, dtype=dtype) if init_c else None, param(dirs, 3 * hidden) if peep else None]
    while inputs[-1] is None:
        inputs.pop()
    attrs = dict(attrs, hidden_size=hidden)
    if direction != "forward":
        attrs["direction"] = direction
    if layout:
        attrs["layout"] = layout
    reference = batch_first if layout else in_float32 if dtype == "float16" else None
    # A float16 output is rounded once more, to 2^-11 relative.
    rel_l2 = 1e-3 if dtype == "float16" else REL_L2
    n_out = outputs or (3 if op == "LSTM" else 2)
    CASES.append(Case(name, op, inputs, attrs=attrs, outputs=n_out, opset=opset, rel_l2=rel_l2, reference=reference))


# --- LSTM -----------------------------------------------------------------------------------------------------
case("lstm_forward", "LSTM")
case("lstm_reverse", "LSTM", direction="reverse", init_h=True, init_c=True)
case("lstm_bidirectional", "LSTM", direction="bidirectional", init_h=True, init_c=True, hidden=64, inp=32)
case("lstm_no_bias", "LSTM", bias=False)
case("lstm_no_bias_initial_state", "LSTM", bias=False, init_h=True, init_c=True, direction="reverse")
case("lstm_layout1", "LSTM", layout=1, init_h=True, init_c=True)
case("lstm_layout1_bidirectional_lens", "LSTM", layout=1, direction="bidirectional", batch=4, lens=[5, 2, 4, 1],
     init_h=True, init_c=True, peep=True)
case("lstm_lens_forward", "LSTM", batch=4, lens=[5, 2, 0, 3], init_h=True, init_c=True)
case("lstm_lens_reverse", "LSTM", direction="reverse", batch=4, lens=[1, 5, 3, 0], init_h=True, init_c=True)
case("lstm_lens_bidirectional", "LSTM", direction="bidirectional", batch=4, lens=[4, 5, 1, 2], peep=True)
case("lstm_peepholes", "LSTM", peep=True, init_h=True, init_c=True)
case("lstm_peepholes_bidirectional", "LSTM", direction="bidirectional", peep=True, init_c=True)
case("lstm_input_forget", "LSTM", input_forget=1, peep=True, init_c=True)
case("lstm_clip", "LSTM", clip=0.3, peep=True, init_h=True, init_c=True, direction="bidirectional")
case("lstm_hardsigmoid_acts", "LSTM", direction="bidirectional",
     activations=["HardSigmoid", "Tanh", "Tanh", "HardSigmoid", "Tanh", "Tanh"],
     activation_alpha=[0.3, 0.25], activation_beta=[0.6, 0.45])
case("lstm_other_acts", "LSTM", activations=["Sigmoid", "ScaledTanh", "Softsign"],
     activation_alpha=[0.9], activation_beta=[1.3])
case("lstm_elu_softplus", "LSTM", activations=["HardSigmoid", "Elu", "Softplus"], activation_alpha=[0.2, 0.7],
     activation_beta=[0.5])
case("lstm_y_only", "LSTM", outputs=1, direction="bidirectional")
case("lstm_y_yh", "LSTM", outputs=2, init_h=True)
case("lstm_h128", "LSTM", hidden=128, inp=64, batch=2, seq=6, direction="bidirectional", init_h=True, init_c=True)
# Steps of at least 2^24 multiply-adds in H_{t-1}·Rᵀ: the per-step products and gate loops use the thread pool.
case("lstm_h512_threaded", "LSTM", hidden=512, inp=16, batch=16, seq=3, lens=[3, 1] * 8, init_h=True, init_c=True)
case("lstm_odd_hidden", "LSTM", hidden=37, inp=13, batch=5, seq=4, peep=True, lens=[4, 1, 3, 4, 2])
case("lstm_batch1", "LSTM", batch=1, seq=9, hidden=24)
case("lstm_f16_weights", "LSTM", stored="float16", peep=True, direction="bidirectional", init_h=True)
case("lstm_inputs_not_weights", "LSTM", as_weights=False, peep=True, init_h=True, init_c=True)
case("lstm_f16", "LSTM", dtype="float16", init_h=True, init_c=True, peep=True, as_weights=False)
case("lstm_opset7", "LSTM", opset=7, direction="bidirectional", init_h=True)
case("lstm_opset14", "LSTM", opset=14, direction="reverse", lens=[2, 5, 4])

# --- GRU ------------------------------------------------------------------------------------------------------
for lbr in (0, 1):
    case(f"gru_forward_lbr{lbr}", "GRU", linear_before_reset=lbr)
    case(f"gru_reverse_lbr{lbr}", "GRU", linear_before_reset=lbr, direction="reverse", init_h=True)
    case(f"gru_bidirectional_lbr{lbr}", "GRU", linear_before_reset=lbr, direction="bidirectional", init_h=True,
         hidden=64, inp=20)
    case(f"gru_no_bias_lbr{lbr}", "GRU", linear_before_reset=lbr, bias=False, init_h=True)
    case(f"gru_lens_lbr{lbr}", "GRU", linear_before_reset=lbr, direction="bidirectional", batch=4,
         lens=[3, 5, 0, 1], init_h=True)
    case(f"gru_layout1_lbr{lbr}", "GRU", linear_before_reset=lbr, layout=1, init_h=True, lens=[5, 3, 2])
    case(f"gru_clip_lbr{lbr}", "GRU", linear_before_reset=lbr, clip=0.25, init_h=True)
case("gru_acts", "GRU", direction="bidirectional", activations=["HardSigmoid", "LeakyRelu", "Sigmoid", "Affine"],
     activation_alpha=[0.25, 0.1, 0.8], activation_beta=[0.55, 0.05], linear_before_reset=1)
case("gru_thresholded_relu", "GRU", activations=["Sigmoid", "ThresholdedRelu"], activation_alpha=[0.05])
case("gru_y_only", "GRU", outputs=1, direction="reverse", lens=[5, 1, 3])
case("gru_h128", "GRU", hidden=128, inp=48, batch=3, seq=4, direction="bidirectional", linear_before_reset=1)
case("gru_h512_threaded", "GRU", hidden=512, inp=8, batch=22, seq=2, init_h=True)
case("gru_odd_hidden", "GRU", hidden=29, inp=11, batch=2, seq=7)
case("gru_f16_weights", "GRU", stored="float16", init_h=True)
case("gru_inputs_not_weights", "GRU", as_weights=False, init_h=True, linear_before_reset=1)
case("gru_opset7", "GRU", opset=7, init_h=True)

# --- RNN ------------------------------------------------------------------------------------------------------
case("rnn_forward", "RNN")
case("rnn_reverse", "RNN", direction="reverse", init_h=True)
case("rnn_bidirectional", "RNN", direction="bidirectional", init_h=True, hidden=64, inp=24)
case("rnn_no_bias", "RNN", bias=False)
case("rnn_relu", "RNN", activations=["Relu"], init_h=True)
case("rnn_relu_bidirectional", "RNN", direction="bidirectional", activations=["Relu", "Relu"])
case("rnn_leaky_relu", "RNN", direction="bidirectional", activations=["LeakyRelu", "LeakyRelu"],
     activation_alpha=[0.1, 0.2])
case("rnn_sigmoid", "RNN", activations=["Sigmoid"])
case("rnn_affine", "RNN", activations=["Affine"], activation_alpha=[0.5], activation_beta=[0.1])
case("rnn_softsign", "RNN", activations=["Softsign"], init_h=True)
case("rnn_softplus", "RNN", activations=["Softplus"])
case("rnn_elu", "RNN", activations=["Elu"], activation_alpha=[0.6])
case("rnn_default_two_activations", "RNN", activations=["Tanh", "Tanh"])
case("rnn_lens", "RNN", direction="bidirectional", batch=4, lens=[5, 1, 3, 2], init_h=True)
case("rnn_lens_reverse", "RNN", direction="reverse", batch=3, lens=[2, 5, 4], init_h=True)
case("rnn_layout1", "RNN", layout=1, init_h=True, direction="bidirectional", lens=[4, 5, 2])
case("rnn_clip", "RNN", clip=0.2, init_h=True)
case("rnn_y_only", "RNN", outputs=1)
case("rnn_h128", "RNN", hidden=128, inp=64, batch=4, seq=8)
case("rnn_odd_hidden", "RNN", hidden=45, inp=7, batch=2, direction="bidirectional")
case("rnn_f16_weights", "RNN", stored="float16", direction="bidirectional", init_h=True)
case("rnn_inputs_not_weights", "RNN", as_weights=False, init_h=True)
case("rnn_opset14", "RNN", opset=14)
