import numpy as np

from opcase import Case, rand, randint, weight

CASES = []


def add(*args, **kw):
    CASES.append(Case(*args, **kw))


# MatMul: numpy semantics (1-D promotion, batch broadcasting of any rank), weights on either side.
MATMUL_SHAPES = {
    "vec_vec": ((16,), (16,)),
    "vec_mat": ((16,), (16, 5)),
    "mat_vec": ((7, 16), (16,)),
    "vec_batch": ((8,), (3, 8, 4)),
    "batch_vec": ((2, 3, 5, 8), (8,)),
    "mat_mat": ((7, 16), (16, 5)),
    "k1": ((6, 1), (1, 9)),
    "m1": ((1, 33), (33, 17)),
    "n1": ((9, 33), (33, 1)),
    "large_k_odd": ((13, 777), (777, 19)),
    "batch_mat": ((2, 3, 7, 16), (16, 5)),
    "mat_batch": ((7, 16), (2, 3, 16, 5)),
    "batch_same": ((4, 7, 16), (4, 16, 5)),
    "batch_bcast": ((2, 1, 4, 8, 16), (3, 1, 16, 5)),
    "batch_bcast_b1": ((3, 1, 4, 8), (1, 5, 8, 6)),
    "attention_qk": ((2, 4, 10, 16), (2, 4, 16, 10)),
    "attention_av": ((2, 4, 10, 10), (2, 4, 10, 16)),
    "rank_mismatch": ((5, 4, 3), (1, 1, 3, 2)),
    "big": ((64, 256), (256, 96)),
}
for name, (a, b) in MATMUL_SHAPES.items():
    add(f"matmul_{name}", "MatMul", [rand(*a), rand(*b)])
add("matmul_weight_b", "MatMul", [rand(2, 10, 32), weight(rand(32, 24))])
add("matmul_weight_a", "MatMul", [weight(rand(6, 32)), rand(3, 32, 5)])
add("matmul_weight_batched_b", "MatMul", [rand(3, 4, 8), weight(rand(3, 8, 6))])
add("matmul_weight_vec_b", "MatMul", [rand(3, 4, 8), weight(rand(8))])
add("matmul_f16", "MatMul", [rand(3, 5, 16, dtype="float16"), rand(16, 7, dtype="float16")])
add("matmul_f16_batch", "MatMul", [rand(2, 5, 16, dtype="float16"), weight(rand(2, 16, 7, dtype="float16"))])
# 2-D float16 weights: the products the fp16-arithmetic run computes with XNNPACK's f16 kernels.
add("matmul_f16_weight", "MatMul", [rand(2, 10, 32, dtype="float16"), weight(rand(32, 24, dtype="float16"))])
# float16 weights beside float32 activations (`onnxstream-convert --fp16` models), computed in float32: the
# weight is widened when the op runs. ONNX Runtime gets the same values as float32 initializers, so the float32 tolerance holds (atol 1e-4,
# rtol 1e-4). chunk_bytes: one more run with the weights in row chunks ([K, N] in slices of K, [N, K] of N).
add("matmul_f16w", "MatMul", [rand(2, 10, 32), weight(rand(32, 24), stored="float16")], chunk_bytes=256)
add("matmul_f16w_batched", "MatMul", [rand(3, 4, 8), weight(rand(3, 8, 6), stored="float16")])
add("matmul_f16w_vec", "MatMul", [rand(3, 4, 8), weight(rand(8), stored="float16")])
# Over the default 4 MiB chunk size as float16 (5 MiB): streamed in every run, in three slices of K.
add("matmul_f16w_streamed", "MatMul", [rand(16, 1024), weight(rand(1024, 2560), stored="float16")])
# Whole weights over half of a thread's level-2 cache, with more rows than one kernel tile: computed in
# blocks of output columns (ops/column_blocks.h), each packed on its own; [K, N] weights have
# their columns copied out, [N, K] ones (Gemm transB) not. N is no multiple of the block.
add("matmul_weight_column_blocks", "MatMul", [rand(1, 77, 768), weight(rand(768, 1000))])
add("gemm_linear_column_blocks", "Gemm", [rand(40, 1024), weight(rand(900, 1024)), weight(rand(900))],
    attrs=dict(transB=1))
# The same over weights bigger than balanced's 4 MiB chunk, which stream: with packed weights kept they run
# in column blocks too, [N, K] blocks reading their rows, [K, N] ones copying their columns out of the
# weight's row chunks, a few blocks per pass over the chunks (matmul_gemm.cpp, BlockColumns).
add("gemm_linear_streamed_column_blocks", "Gemm", [rand(40, 1024), weight(rand(1200, 1024)), weight(rand(1200))],
    attrs=dict(transB=1))
add("matmul_streamed_column_blocks", "MatMul", [rand(1, 77, 1024), weight(rand(1024, 2000))])
add("matmul_i64", "MatMul", [randint(3, 4, 5, low=-50, high=50), randint(5, 6, low=-50, high=50)])
add("matmul_i64_vec", "MatMul", [randint(5, low=-9, high=9), randint(2, 5, 3, low=-9, high=9)])
add("matmul_i32", "MatMul", [randint(4, 5, low=-50, high=50, dtype="int32"),
                             randint(2, 5, 3, low=-50, high=50, dtype="int32")])

# Gemm: every transpose / alpha / beta / C-shape combination.
M, K, N = 6, 11, 5
C_SHAPES = {"none": None, "n": (N,), "1n": (1, N), "mn": (M, N), "m1": (M, 1), "11": (1, 1), "scalar": ()}
for ta in (0, 1):
    for tb in (0, 1):
        for cname, cshape in C_SHAPES.items():
            for alpha, beta in ((1.0, 1.0), (0.5, 2.0)):
                if cname == "none" and beta != 1.0:
                    continue
                a = rand(K, M) if ta else rand(M, K)
                b = weight(rand(N, K) if tb else rand(K, N))
                inputs = [a, b] if cshape is None else [a, b, weight(rand(*cshape))]
                attrs = dict(transA=ta, transB=tb)
                if alpha != 1.0:
                    attrs.update(alpha=alpha, beta=beta)
                suffix = "" if alpha == 1.0 else "_scaled"
                add(f"gemm_ta{ta}_tb{tb}_c{cname}{suffix}", "Gemm", inputs, attrs=attrs)
add("gemm_beta0", "Gemm", [rand(M, K), weight(rand(K, N)), weight(rand(N))], attrs=dict(beta=0.0))
add("gemm_c_activation", "Gemm", [rand(M, K), rand(N, K), rand(M, N)], attrs=dict(transB=1))
add("gemm_linear_large", "Gemm", [rand(8, 300), weight(rand(200, 300)), weight(rand(200))], attrs=dict(transB=1))
add("gemm_f16w_linear", "Gemm", [rand(8, 64), weight(rand(40, 64), stored="float16"),
                                weight(rand(40), stored="float16")], attrs=dict(transB=1), chunk_bytes=256)
# beta * C is not a float16 value: XNNPACK's f32_f16 operator takes a float16 bias, so the op adds this one after.
add("gemm_f16w_kn_beta", "Gemm", [rand(6, 64), weight(rand(64, 48), stored="float16"), weight(rand(48))],
    attrs=dict(beta=0.3), chunk_bytes=256)
add("gemm_f16w_scaled", "Gemm", [rand(M, K), weight(rand(N, K), stored="float16"),
                                 weight(rand(M, N), stored="float16")], attrs=dict(transB=1, alpha=0.5, beta=2.0))
add("gemm_f16", "Gemm", [rand(M, K, dtype="float16"), weight(rand(N, K, dtype="float16")),
                         weight(rand(N, dtype="float16"))], attrs=dict(transB=1, alpha=0.75))
add("gemm_f16_linear", "Gemm", [rand(8, 64, dtype="float16"), weight(rand(40, 64, dtype="float16")),
                                weight(rand(40, dtype="float16"))], attrs=dict(transB=1))
add("gemm_f16_ta", "Gemm", [rand(K, M, dtype="float16"), weight(rand(K, N, dtype="float16")),
                            weight(rand(M, N, dtype="float16"))], attrs=dict(transA=1, beta=0.5))

# Einsum: the matmul-shaped equations of exported transformers, transposes, reductions, diagonals.
EINSUM = [
    ("bmm", "bij,bjk->bik", [(3, 4, 5), (3, 5, 6)]),
    ("attn_scores", "bhid,bhjd->bhij", [(2, 3, 7, 8), (2, 3, 9, 8)]),
    ("attn_values", "bhij,bhjd->bhid", [(2, 3, 7, 9), (2, 3, 9, 8)]),
    ("mm", "ij,jk->ik", [(4, 5), (5, 6)]),
    ("linear", "bid,jd->bij", [(2, 7, 8), (5, 8)]),
    ("transpose", "ij->ji", [(4, 7)]),
    ("permute3", "abc->cab", [(2, 3, 4)]),
    ("implicit_mm", "ij,jk", [(4, 5), (5, 6)]),
    ("implicit_transpose", "ji", [(3, 5)]),
    ("outer", "i,j->ij", [(4,), (5,)]),
    ("dot", "i,i->", [(7,), (7,)]),
    ("sum_all", "ij->", [(3, 4)]),
    ("sum_axis", "ij->i", [(3, 4)]),
    ("trace", "ii->", [(5, 5)]),
    ("diag", "ii->i", [(5, 5)]),
    ("batch_diag", "bii->bi", [(2, 4, 4)]),
    ("one_side_sum", "ij,jk->k", [(3, 4), (4, 5)]),
    ("contract_two", "bijk,bjkl->bil", [(2, 3, 4, 5), (2, 4, 5, 6)]),
    ("transposed_out", "bij,bjk->bki", [(2, 3, 4), (2, 4, 5)]),
    ("hadamard", "ij,ij->ij", [(3, 4), (3, 4)]),
    ("ellipsis_mm", "...ij,...jk->...ik", [(2, 3, 4, 5), (2, 3, 5, 6)]),
    ("ellipsis_bcast", "...ij,...jk->...ik", [(2, 1, 4, 5), (1, 3, 5, 6)]),
    ("ellipsis_implicit", "...ij,jk", [(2, 4, 5), (5, 6)]),
    ("three_operands", "ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),
    ("upper_labels", "bIJ,bJK->bIK", [(2, 3, 4), (2, 4, 5)]),
    ("spaces", "b i j , b j k -> b i k", [(2, 3, 4), (2, 4, 5)]),
]


def einsum_shape(eq, shapes):
    # onnx's shape inference does not know most Einsum output shapes; numpy does.
    return np.einsum(eq.replace(" ", ""), *[np.zeros(s) for s in shapes]).shape


def add_einsum(name, eq, inputs, shapes):
    add(name, "Einsum", inputs, attrs=dict(equation=eq), opset=12, out_shapes=[einsum_shape(eq, shapes)])


for name, eq, shapes in EINSUM:
    add_einsum(f"einsum_{name}", eq, [rand(*s) for s in shapes], shapes)
add_einsum("einsum_weight", "bid,jd->bij", [rand(2, 7, 8), weight(rand(5, 8))], [(2, 7, 8), (5, 8)])
add_einsum("einsum_f16", "bij,bjk->bik", [rand(2, 3, 4, dtype="float16"), rand(2, 4, 5, dtype="float16")],
           [(2, 3, 4), (2, 4, 5)])
add_einsum("einsum_f64", "bij,bjk->bik", [rand(2, 3, 4, dtype="float64"), rand(2, 4, 5, dtype="float64")],
           [(2, 3, 4), (2, 4, 5)])
add_einsum("einsum_f64_diag_sum", "ii->", [rand(4, 4, dtype="float64")], [(4, 4)])
add_einsum("einsum_i64", "bij,bjk->bik", [randint(2, 3, 4, low=-9, high=9), randint(2, 4, 5, low=-9, high=9)],
           [(2, 3, 4), (2, 4, 5)])
