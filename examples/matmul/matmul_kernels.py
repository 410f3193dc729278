# C = A @ B as a Triton kernel, compiled ahead of time by taot (matmul.toml: fp16 and bf16;
# matmul_fp8.toml: fp8 e4m3 inputs): one program per BLOCK_M x BLOCK_N tile of C, accumulating in
# fp32 over K in BLOCK_K steps (tl.dot: wgmma on sm_90 for 64-row tiles, mma.sync otherwise), tiles
# visited in bands of GROUP_SIZE_M tile rows for L2 reuse. Imports only triton.
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                  FAST_ACCUM: tl.constexpr = False):
    """C[M, N] = A[M, K] @ B[K, N] for any strides (elements, 32-bit offsets: each operand below 2^31
    elements); fp32 accumulation, C stored in C's element type. Program `pid` computes one tile.

    fp8 on sm_90: wgmma accumulates fp8 products with reduced precision. By default each BLOCK_K step
    is added into the fp32 accumulator (one extra add per element and step, a second accumulator's
    registers); FAST_ACCUM keeps the whole K loop in the tensor cores' accumulator (Triton's sm_90
    default, cuBLAS's use_fast_accum), faster and less precise. No effect on other types."""
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    # Grouped order: programs walk a band of GROUP_SIZE_M tile rows column by column, so that the
    # band's rows of A and the current columns of B are read from L2 by neighbouring programs.
    tiles_per_band = GROUP_SIZE_M * tiles_n
    band = pid // tiles_per_band
    band_first_m = band * GROUP_SIZE_M
    band_height = tl.minimum(tiles_m - band_first_m, GROUP_SIZE_M)    # the last band may be shorter
    position = pid - band * tiles_per_band
    tile_m = band_first_m + position % band_height
    tile_n = position // band_height

    rows = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ks = tl.arange(0, BLOCK_K)
    row_in = rows < M
    col_in = cols < N
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k_start in range(0, K, BLOCK_K):
        k_in = ks < K - k_start                                         # the last step may be partial
        a = tl.load(a_tile, mask=row_in[:, None] & k_in[None, :], other=0.0)
        b = tl.load(b_tile, mask=k_in[:, None] & col_in[None, :], other=0.0)
        if a.dtype.is_fp8() and not FAST_ACCUM:
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K)      # into fp32 every BLOCK_K
        else:
            acc = tl.dot(a, b, acc)
        a_tile += BLOCK_K * stride_ak
        b_tile += BLOCK_K * stride_bk
    c_tile = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=row_in[:, None] & col_in[None, :])
