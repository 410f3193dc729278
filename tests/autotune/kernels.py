"""Kernels autotuned the way Triton users write them, for first-call autotuning: a GEMM over eight
tile configs, a split-K GEMM that accumulates with atomics into an output the autotuner zeroes
(reset_to_zero), and a fused attention forward pass keyed on the sequence length."""
import triton
import triton.language as tl


def _tiles(stages_and_warps):
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8}, num_stages=s, num_warps=w)
            for m, n, k, s, w in stages_and_warps]


@triton.autotune(
    configs=_tiles([(128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
                    (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2)]),
    key=["M", "N", "K"],
)
@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * tiles_n)
    first_m = group * GROUP_M
    rows_in_group = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % (GROUP_M * tiles_n)) % rows_in_group
    tile_n = (pid % (GROUP_M * tiles_n)) // rows_in_group
    rm = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        left = K - k * BLOCK_K
        acc = tl.dot(tl.load(a, mask=rk[None, :] < left, other=0.0), tl.load(b, mask=rk[:, None] < left, other=0.0), acc)
        a += BLOCK_K * stride_ak
        b += BLOCK_K * stride_bk
    cm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "SPLIT_K": s}, num_stages=3, num_warps=4)
             for s in (1, 2, 4, 8)],
    key=["M", "N", "K"],
    reset_to_zero=["c_ptr"],
)
@triton.jit
def split_k_matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    """C (fp32, zeroed by the caller) += A @ B, each of SPLIT_K programs per tile adding its share of K."""
    tile_m = tl.program_id(0)
    tile_n = tl.program_id(1)
    split = tl.program_id(2)
    rm = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    rn = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    rk = split * BLOCK_K + tl.arange(0, BLOCK_K)
    a = a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak
    b = b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K * SPLIT_K)):
        left = K - (k * SPLIT_K + split) * BLOCK_K
        acc = tl.dot(tl.load(a, mask=tl.arange(0, BLOCK_K)[None, :] < left, other=0.0),
                     tl.load(b, mask=tl.arange(0, BLOCK_K)[:, None] < left, other=0.0), acc)
        a += BLOCK_K * SPLIT_K * stride_ak
        b += BLOCK_K * SPLIT_K * stride_bk
    cm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c = c_ptr + cm[:, None] * stride_cm + cn[None, :] * stride_cn
    tl.atomic_add(c, acc, mask=(cm[:, None] < M) & (cn[None, :] < N))


@triton.autotune(
    configs=[triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_stages=s, num_warps=w)
             for m, n, s, w in [(128, 64, 3, 8), (128, 64, 2, 4), (128, 32, 3, 4), (64, 64, 3, 4), (64, 32, 2, 4)]],
    key=["N_CTX"],
)
@triton.jit
def attention(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, N_CTX, stride_h, stride_n,
              HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Softmax(Q K^T * sm_scale) V for one (batch x head) per program column; [Z*H, N_CTX, HEAD_DIM] fp16."""
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    base = head * stride_h
    rm = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + rm[:, None] * stride_n + rd[None, :], mask=rm[:, None] < N_CTX, other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), tl.float32)
    scale = sm_scale * 1.44269504  # exp2
    for start_n in range(0, N_CTX, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + base + rn[None, :] * stride_n + rd[:, None], mask=rn[None, :] < N_CTX, other=0.0)
        s = tl.dot(q, k) * scale
        s = tl.where(rn[None, :] < N_CTX, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + base + rn[:, None] * stride_n + rd[None, :], mask=rn[:, None] < N_CTX, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + rm[:, None] * stride_n + rd[None, :], out.to(o_ptr.dtype.element_ty), mask=rm[:, None] < N_CTX)
