# C = A @ B.T in bf16 or fp8 e4m3 (fp32 accumulation, C bf16) as a persistent Triton kernel for sm_90,
# compiled ahead of time by taot (tma_matmul.toml). A [M, K], B [N, K] and C [M, N] are host-side
# tensor descriptors (TMA loads and stores; the caller encodes them). The grid is at most one program
# per SM; each program walks the output tiles with a stride of NUM_SMS, in grouped order. Imports only
# triton.
#
# Not here: a warp-specialized form (tl.range(..., warp_specialize=True)) was tried and hung on an H200
# at its first launch (bf16, 128 x 256 x 64, 3 stages, M = N = K = 128; not investigated). It could
# not take C as a host-side descriptor either: Triton 3.6's Hopper warp specialization splits the C
# store into row halves and rebuilds C's descriptor with a [BLOCK_M // 2, ...] block, which a host
# descriptor's type does not allow ("tensor descriptor block and tensor types must match"), so it
# built C's descriptor on the device.
import triton
import triton.language as tl


@triton.jit
def tma_matmul_kernel(a_desc, b_desc, c_desc, M, N, K, NUM_SMS,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_SIZE_M: tl.constexpr, EPILOGUE_BLOCK_N: tl.constexpr, FAST_ACCUM: tl.constexpr):
    """C[M, N] = A[M, K] @ B[N, K].T: a_desc a descriptor of A with block [BLOCK_M, BLOCK_K], b_desc one
    of B (K-major, as fp8 wgmma wants it: B is the weight W of y = x @ W.T) with block [BLOCK_N,
    BLOCK_K], c_desc one of C with block [BLOCK_M, EPILOGUE_BLOCK_N], EPILOGUE_BLOCK_N = BLOCK_N // 2.
    TMA loads zero-fill and TMA stores clip past M, N and K, so no masks and any M.

    The tile loop is flattened with the K loop (flatten=True), so the next tile's loads are issued
    during this tile's epilogue, and the epilogue stores the tile in two column halves (subtiling:
    half the shared memory for the TMA store, room for a deeper pipeline).

    fp8 on sm_90: wgmma accumulates fp8 products with reduced precision. Unless FAST_ACCUM, each
    BLOCK_K step is added into the fp32 accumulator (max_num_imprecise_acc=BLOCK_K: with BLOCK_K =
    128, every 4 wgmma instructions, as cuBLAS without use_fast_accum); FAST_ACCUM keeps the whole K
    loop in the tensor cores' accumulator. No effect on bf16."""
    tl.static_assert(EPILOGUE_BLOCK_N * 2 == BLOCK_N, "the epilogue stores two column halves")
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    num_tiles = tiles_m * tiles_n
    k_steps = tl.cdiv(K, BLOCK_K)
    # Grouped order: tile t lies in band t // (GROUP_SIZE_M * tiles_n) of GROUP_SIZE_M tile rows,
    # which is walked column by column, so that the NUM_SMS tiles in flight at a time share rows of
    # A and columns of B in L2.
    tiles_per_band = GROUP_SIZE_M * tiles_n

    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True):
        band = tile // tiles_per_band
        band_first_m = band * GROUP_SIZE_M
        band_height = tl.minimum(tiles_m - band_first_m, GROUP_SIZE_M)    # the last band may be shorter
        position = tile - band * tiles_per_band
        row = (band_first_m + position % band_height) * BLOCK_M
        col = (position // band_height) * BLOCK_N

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for step in range(k_steps):
            k = step * BLOCK_K
            a = a_desc.load([row, k])
            b = b_desc.load([col, k])
            if a.dtype.is_fp8() and not FAST_ACCUM:
                acc = tl.dot(a, b.T, acc, max_num_imprecise_acc=BLOCK_K)     # into fp32 every BLOCK_K
            else:
                acc = tl.dot(a, b.T, acc)

        # [BLOCK_M, BLOCK_N] -> two [BLOCK_M, BLOCK_N // 2] column halves, stored one after the other
        left, right = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, EPILOGUE_BLOCK_N)), (0, 2, 1)))
        c_desc.store([row, col], left.to(c_desc.dtype))
        c_desc.store([row, col + EPILOGUE_BLOCK_N], right.to(c_desc.dtype))
