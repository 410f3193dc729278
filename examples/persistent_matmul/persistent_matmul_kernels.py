# C = A @ B in bf16 (fp32 accumulation) as a persistent Triton kernel for sm_90, compiled ahead of time
# by taot (persistent_matmul.toml). A, B and C are read and written through tensor descriptors built
# on the device (tl.make_tensor_descriptor: TMA loads and stores, 128 bytes of global scratch per
# descriptor and program, which taot allocates); the grid is at most one program per SM and each
# program walks the output tiles with a stride of NUM_SMS, in grouped order. Imports only triton.
import triton
import triton.language as tl


@triton.jit
def persistent_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS,
                             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                             GROUP_SIZE_M: tl.constexpr):
    """C[M, N] = A[M, K] @ B[K, N], all three contiguous row-major; K and N multiples of 8 (TMA wants
    16-byte row pitches; the spec promises multiples of 16), pointers 16-byte aligned. Launched with
    min(NUM_SMS, tiles) programs; program p computes tiles p, p + NUM_SMS, p + 2 * NUM_SMS, ... of the
    grouped order. Out-of-range rows and columns are zero-filled by the TMA loads and clipped by the
    TMA stores, so M, N and K need not be multiples of the tile."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])

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
            b = b_desc.load([k, col])
            acc = tl.dot(a, b, acc)
        c_desc.store([row, col], acc.to(c_desc.dtype))
