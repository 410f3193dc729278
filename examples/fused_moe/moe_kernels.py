# Triton kernels of a mixture-of-experts (MoE) layer, as used by modern LLMs:
#
#   moe_align_count_kernel     histogram of the routed expert ids (atomics); each (token, slot) gets
#                              its rank inside its expert
#   moe_align_scan_kernel      per expert: padded start offset (exclusive scan of the counts rounded
#                              up to BLOCK_SIZE_M), expert id of each BLOCK_SIZE_M block, sentinel
#                              padding, and the padded total (num_tokens_post_padded)
#   moe_align_scatter_kernel   sorted_token_ids[offset[expert] + rank] = flat (token * top_k + slot)
#   fused_moe_kernel           grouped GEMM over the sorted rows: C[t] = A[t // top_k] @ B[expert].T,
#                              bf16, or fp8 (e4m3) w8a8 with block quantization (group_n x group_k)
#   silu_and_mul_kernel        [T, 2I] -> [T, I]: silu(gate) * up
#   per_token_group_quant_fp8_kernel   bf16 [T, K] -> fp8 [T, K] and fp32 scales [T, K / GROUP_SIZE]
#   moe_sum_kernel             out[m] = sum_k y[m, k, :] (the routing weights are applied by the second
#                              GEMM with MUL_ROUTED_WEIGHT = 1)
#
# The file imports only triton: taot imports it on machines without torch or a GPU.
import triton
import triton.language as tl

FP8_E4M3_MAX = tl.constexpr(448.0)       # largest finite float8_e4m3fn (Triton's fp8e4nv)
FP8_SCALE_EPS = tl.constexpr(1e-10)      # smallest amax used for a scale (an all-zero group gets a tiny scale, not 0)


# ----------------------------------------------------------------------------------------------------
# Token sort / align
#
# Input: topk_ids [M, top_k] int32, read flat (numel = M * top_k entries, each in [0, num_experts)).
# Output:
#   sorted_token_ids  flat indices (token * top_k + slot) grouped by expert, experts in increasing
#                     order; each expert's group starts at a multiple of BLOCK_SIZE_M and is padded
#                     with the sentinel numel up to a multiple of BLOCK_SIZE_M (an expert that
#                     receives no token gets no block). Entries at and after num_tokens_post_padded
#                     are not written.
#   expert_ids        one expert id per BLOCK_SIZE_M block of sorted_token_ids (blocks at and after
#                     num_tokens_post_padded / BLOCK_SIZE_M are not written)
#   num_tokens_post_padded  [1]: the padded total, a multiple of BLOCK_SIZE_M
# Work buffers: counts [num_experts] (must be ZERO before moe_align_count_kernel), offsets
# [num_experts], ranks [numel]. The order of the tokens inside one expert's group depends on the
# order in which the atomics ran; every flat index appears exactly once.
# Sizes: with numel entries, num_tokens_post_padded <= numel + min(numel, num_experts) *
# (BLOCK_SIZE_M - 1), so buffers of that many entries (rounded up to BLOCK_SIZE_M) always suffice.
# ----------------------------------------------------------------------------------------------------

@triton.jit
def moe_align_count_kernel(topk_ids_ptr, counts_ptr, ranks_ptr, numel, BLOCK_SIZE: tl.constexpr):
    """grid = (cdiv(numel, BLOCK_SIZE),). counts[e] += 1 per entry routed to e; ranks[i] = the count
    of expert topk_ids[i] before entry i was added (a unique slot inside that expert)."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < numel
    expert = tl.load(topk_ids_ptr + offs, mask=mask, other=0)
    ones = tl.full([BLOCK_SIZE], 1, tl.int32)
    rank = tl.atomic_add(counts_ptr + expert, ones, mask=mask, sem="relaxed")
    tl.store(ranks_ptr + offs, rank, mask=mask)


@triton.jit
def moe_align_scan_kernel(counts_ptr, offsets_ptr, sorted_token_ids_ptr, expert_ids_ptr,
                          num_tokens_post_padded_ptr, num_experts, sentinel,
                          BLOCK_SIZE_M: tl.constexpr, BLOCK_E: tl.constexpr, FILL_BLOCK: tl.constexpr = 128):
    """grid = (num_experts,), num_experts <= BLOCK_E. Program e computes the padded start of expert e
    from all counts, writes offsets[e], the expert ids of its blocks and its sentinel padding;
    program 0 also writes the padded total."""
    e = tl.program_id(0)
    offs_e = tl.arange(0, BLOCK_E)
    counts = tl.load(counts_ptr + offs_e, mask=offs_e < num_experts, other=0)
    padded = (counts + BLOCK_SIZE_M - 1) // BLOCK_SIZE_M * BLOCK_SIZE_M
    start = tl.sum(tl.where(offs_e < e, padded, 0), axis=0)
    count = tl.load(counts_ptr + e)
    my_padded = (count + BLOCK_SIZE_M - 1) // BLOCK_SIZE_M * BLOCK_SIZE_M
    tl.store(offsets_ptr + e, start)
    if e == 0:
        tl.store(num_tokens_post_padded_ptr, tl.sum(padded, axis=0))
    # expert id of each of this expert's blocks
    first_block = start // BLOCK_SIZE_M
    num_blocks = my_padded // BLOCK_SIZE_M
    ids = tl.zeros([FILL_BLOCK], dtype=tl.int32) + e
    for b0 in range(0, num_blocks, FILL_BLOCK):
        b = b0 + tl.arange(0, FILL_BLOCK)
        tl.store(expert_ids_ptr + first_block + b, ids, mask=b < num_blocks)
    # sentinel in the padding slots [start + count, start + my_padded): fewer than BLOCK_SIZE_M
    p = tl.arange(0, BLOCK_SIZE_M)
    pad = tl.zeros([BLOCK_SIZE_M], dtype=tl.int32) + sentinel
    tl.store(sorted_token_ids_ptr + start + count + p, pad, mask=p < my_padded - count)


@triton.jit
def moe_align_scatter_kernel(topk_ids_ptr, ranks_ptr, offsets_ptr, sorted_token_ids_ptr, numel,
                             BLOCK_SIZE: tl.constexpr):
    """grid = (cdiv(numel, BLOCK_SIZE),). sorted_token_ids[offsets[e] + ranks[i]] = i, e = topk_ids[i]."""
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < numel
    expert = tl.load(topk_ids_ptr + offs, mask=mask, other=0)
    rank = tl.load(ranks_ptr + offs, mask=mask, other=0)
    start = tl.load(offsets_ptr + expert, mask=mask, other=0)
    tl.store(sorted_token_ids_ptr + start + rank, offs, mask=mask)


# ----------------------------------------------------------------------------------------------------
# Grouped GEMM
# ----------------------------------------------------------------------------------------------------

@triton.jit(do_not_specialize=["num_valid_tokens"])
def fused_moe_kernel(
    # pointers
    a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, topk_weights_ptr,
    sorted_token_ids_ptr, expert_ids_ptr, num_tokens_post_padded_ptr,
    # sizes
    N, K, EM, num_valid_tokens,
    # strides, in elements
    stride_am, stride_ak, stride_be, stride_bk, stride_bn, stride_cm, stride_cn,
    stride_asm, stride_ask, stride_bse, stride_bsk, stride_bsn,
    # block quantization shape (fp8 only)
    group_n: tl.constexpr, group_k: tl.constexpr,
    # tiling
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
    MUL_ROUTED_WEIGHT: tl.constexpr, top_k: tl.constexpr, compute_type: tl.constexpr,
    use_fp8_w8a8: tl.constexpr,
):
    """One program computes a BLOCK_SIZE_M x BLOCK_SIZE_N tile of C for one block of sorted rows
    (all routed to the same expert).

    A [num_valid_tokens // top_k, K]; row r of the sorted list is flat index t = token * top_k + slot,
        and reads A row t // top_k.
    B [E, N, K] (stride_be, stride_bn, stride_bk).
    C rows are flat indices t: C is [M, top_k, N] with stride_cm = C.stride(1), stride_cn = C.stride(2).
    topk_weights [M, top_k] contiguous (read flat at t) when MUL_ROUTED_WEIGHT.
    fp8 w8a8: A and B are fp8e4nv; a_scale [M, cdiv(K, group_k)] (stride_asm, stride_ask): one scale
        per token and group of group_k columns; b_scale [E, cdiv(N, group_n), cdiv(K, group_k)]
        (stride_bse, stride_bsn, stride_bsk): one scale per group_n x group_k block of B[e].
        BLOCK_SIZE_K must divide group_k, so each K step lies in one scale group.
    grid = (cdiv(EM, BLOCK_SIZE_M) * cdiv(N, BLOCK_SIZE_N),), EM = sorted_token_ids' length; programs
    whose row block starts at or after num_tokens_post_padded return at once.
    """
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(EM, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    # Grouped launch order: GROUP_SIZE_M consecutive row blocks walk the N tiles together, so the
    # tiles of B they share stay in L2.
    pids_per_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // pids_per_group
    first_pid_m = group_id * GROUP_SIZE_M
    rows_in_group = tl.minimum(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_in_group = pid % pids_per_group
    pid_m = first_pid_m + pid_in_group % rows_in_group
    pid_n = pid_in_group // rows_in_group

    num_tokens_post_padded = tl.load(num_tokens_post_padded_ptr)
    if pid_m * BLOCK_SIZE_M >= num_tokens_post_padded:
        return

    offs_row = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    token = tl.load(sorted_token_ids_ptr + offs_row).to(tl.int64)      # flat index, or the sentinel
    token_mask = token < num_valid_tokens
    expert = tl.load(expert_ids_ptr + pid_m).to(tl.int64)
    a_row = token // top_k

    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    n_mask = offs_n < N
    offs_bn = tl.where(n_mask, offs_n, 0).to(tl.int64)    # columns past N read column 0 (never stored)
    offs_k = tl.arange(0, BLOCK_SIZE_K)

    a_ptrs = a_ptr + a_row[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + expert * stride_be + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn

    if use_fp8_w8a8:
        tl.static_assert(group_k > 0)
        tl.static_assert(group_n > 0)
        tl.static_assert(group_k % BLOCK_SIZE_K == 0)
        a_scale_ptrs = a_scale_ptr + a_row * stride_asm
        b_scale_ptrs = b_scale_ptr + expert * stride_bse + (offs_bn // group_n) * stride_bsn

    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        k_left = K - k * BLOCK_SIZE_K
        a = tl.load(a_ptrs, mask=token_mask[:, None] & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        if use_fp8_w8a8:
            k_group = (k * BLOCK_SIZE_K) // group_k
            a_s = tl.load(a_scale_ptrs + k_group * stride_ask, mask=token_mask, other=0.0)
            b_s = tl.load(b_scale_ptrs + k_group * stride_bsk)
            acc += tl.dot(a, b) * a_s[:, None] * b_s[None, :]
        else:
            acc = tl.dot(a, b, acc=acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk

    if MUL_ROUTED_WEIGHT:
        weight = tl.load(topk_weights_ptr + token, mask=token_mask, other=0.0)
        acc = acc * weight[:, None]
    c = acc.to(compute_type)
    c_ptrs = c_ptr + token[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=token_mask[:, None] & n_mask[None, :])


# ----------------------------------------------------------------------------------------------------
# Element-wise and reduction kernels
# ----------------------------------------------------------------------------------------------------

@triton.jit
def silu_and_mul_kernel(x_ptr, out_ptr, num_rows, I, stride_xm, stride_om, BLOCK_SIZE: tl.constexpr):
    """grid = (num_rows, cdiv(I, BLOCK_SIZE)). x [num_rows, 2I] = [gate | up]; out = silu(gate) * up,
    computed in fp32, stored in out's dtype."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = (offs < I) & (row < num_rows)
    x_row = x_ptr + row * stride_xm
    gate = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x_row + I + offs, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + row * stride_om + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def per_token_group_quant_fp8_kernel(x_ptr, q_ptr, s_ptr, num_rows, num_cols, stride_xm, stride_qm, stride_sm,
                                     GROUP_SIZE: tl.constexpr):
    """grid = (num_rows, cdiv(num_cols, GROUP_SIZE)). Per row and group of GROUP_SIZE columns:
    scale = max(amax(|x|), 1e-10) / 448, q = clamp(x / scale, -448, 448) as fp8e4nv (round to
    nearest even); s[row, group] = scale (the group index has stride 1)."""
    row = tl.program_id(0).to(tl.int64)
    group = tl.program_id(1)
    offs = group * GROUP_SIZE + tl.arange(0, GROUP_SIZE)
    mask = (offs < num_cols) & (row < num_rows)
    x = tl.load(x_ptr + row * stride_xm + offs, mask=mask, other=0.0).to(tl.float32)
    amax = tl.max(tl.abs(x), axis=0)
    scale = tl.div_rn(tl.maximum(amax, FP8_SCALE_EPS), FP8_E4M3_MAX)    # IEEE division, as torch does
    q = tl.clamp(tl.div_rn(x, scale), -FP8_E4M3_MAX, FP8_E4M3_MAX)
    tl.store(q_ptr + row * stride_qm + offs, q.to(q_ptr.dtype.element_ty), mask=mask)
    tl.store(s_ptr + row * stride_sm + group, scale, mask=row < num_rows)


@triton.jit
def moe_sum_kernel(y_ptr, out_ptr, num_tokens, H, top_k, stride_ym, stride_yk, stride_om, BLOCK_SIZE: tl.constexpr):
    """grid = (num_tokens, cdiv(H, BLOCK_SIZE)). out[m, :] = sum over k < top_k of y[m, k, :], in fp32."""
    row = tl.program_id(0).to(tl.int64)
    offs = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = (offs < H) & (row < num_tokens)
    y_row = y_ptr + row * stride_ym
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for k in range(0, top_k):
        acc += tl.load(y_row + k * stride_yk + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * stride_om + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)
