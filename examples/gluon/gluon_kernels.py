# Two Gluon kernels (`@gluon.jit`, triton.experimental.gluon), compiled ahead of time by taot
# (gluon_examples.toml). Gluon is Triton's lower-level language: the kernel, not the compiler, says
# how each tensor is spread over registers, lanes and warps (its layout), when shared memory is
# allocated and how TMA copies and tensor-core MMAs are issued and waited for. Imports only triton.
#
# Written for Triton 3.6 (the GPU machines' release). Gluon's API changes between releases, so each
# kernel compiles on the releases WRITTEN_FOR gives (below):
#   - softmax_kernel uses gl.num_warps(), which Triton 3.5 lacks;
#   - matmul_kernel also uses the Hopper TMA builtins by their 3.6 names
#     (tma.async_copy_global_to_shared / async_copy_shared_to_global): 3.8 added the new names
#     async_load / async_store beside them, and 3.9 removed the old ones.
# The no-GPU tests (test_gluon_spec.py) build each kernel on every installed release and check that
# the others fail with a message naming the release.
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, \
    warpgroup_mma_wait

# The Triton releases (major, minor), oldest and newest, whose Gluon each kernel is written for.
WRITTEN_FOR = {"softmax_kernel": ((3, 6), (3, 9)), "matmul_kernel": ((3, 6), (3, 8))}

# ---- row-wise softmax with an explicit BlockedLayout ----

VECTOR = gl.constexpr(4)      # contiguous elements per thread along a row (16 bytes of fp32)


@triton.heuristics(values={
    "BLOCK_COLS": lambda args: max(triton.next_power_of_2(args["n_cols"]), 128),
    "ROWS": lambda args: max(2048 // args["BLOCK_COLS"], 1),
    "num_warps": lambda args: 8 if args["BLOCK_COLS"] >= 4096 else 4,
})
@gluon.jit
def softmax_kernel(out_ptr, in_ptr, n_rows, n_cols, in_row_stride, out_row_stride,
                   BLOCK_COLS: gl.constexpr, ROWS: gl.constexpr):
    """out[r, :n_cols] = softmax(in[r, :n_cols]) for the ROWS rows r of this program (grid
    cdiv(n_rows, ROWS)), computed in fp32; rows and columns past n_rows / n_cols are masked.
    BLOCK_COLS (a power of two >= n_cols) columns per row, one tile of ROWS x BLOCK_COLS per program.

    The layout: each thread holds VECTOR contiguous columns, a warp's 32 lanes lie along the row, and
    the kernel's warps (gl.num_warps(): the variant's num_warps, which every layout must use) are
    split between rows (up to ROWS of them) and columns. The row reductions (gl.max, gl.sum along
    axis 1) give tensors in the SliceLayout of that layout, which broadcast back over the row."""
    WARPS_ROWS: gl.constexpr = min(ROWS, gl.num_warps())
    WARPS_COLS: gl.constexpr = gl.num_warps() // WARPS_ROWS
    layout: gl.constexpr = gl.BlockedLayout(size_per_thread=[1, VECTOR], threads_per_warp=[1, 32],
                                            warps_per_cta=[WARPS_ROWS, WARPS_COLS], order=[1, 0])
    rows = gl.program_id(0) * ROWS + gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout))
    cols = gl.arange(0, BLOCK_COLS, layout=gl.SliceLayout(0, layout))
    row_ok = gl.expand_dims(rows < n_rows, 1)
    col_ok = gl.expand_dims(cols < n_cols, 0)
    mask = row_ok & col_ok
    rows64 = gl.expand_dims(rows.to(gl.int64), 1)      # rows * stride may pass 2^31 elements
    cols2 = gl.expand_dims(cols, 0)

    x = gl.load(in_ptr + rows64 * in_row_stride + cols2, mask=mask, other=-float("inf")).to(gl.float32)
    row_max = gl.max(x, axis=1)
    numerator = gl.exp(x - gl.expand_dims(row_max, 1))
    denominator = gl.sum(numerator, axis=1)
    y = numerator / gl.expand_dims(denominator, 1)
    gl.store(out_ptr + rows64 * out_row_stride + cols2, y.to(out_ptr.dtype.element_ty), mask=mask)


# ---- Hopper matmul: TMA loads into NVMMA-swizzled shared memory, wgmma ----

@gluon.jit
def matmul_kernel(a_desc, b_desc, c_desc, M, N, K,
                  BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr,
                  GROUP_M: gl.constexpr, NUM_STAGES: gl.constexpr):
    """C[M, N] = A[M, K] @ B[K, N] for sm_90, fp32 accumulation, C in A's dtype (fp16 or bf16). a_desc,
    b_desc and c_desc are host tensor descriptors of row-major A, B and C with blocks [BLOCK_M,
    BLOCK_K], [BLOCK_K, BLOCK_N] and [BLOCK_M, BLOCK_N] and the default NVMMA shared layouts
    (NVMMASharedLayout.get_default_for(block, dtype)). One output tile per program (grid
    cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)), tiles in grouped order (GROUP_M tile rows per band, for L2
    reuse). TMA zero-fills loads and clips stores past M, N and K, so there are no masks.

    The K loop is software-pipelined by hand over NUM_STAGES shared-memory slots: the loads of
    NUM_STAGES - 1 tiles are in flight while one asynchronous wgmma runs. Each slot has an mbarrier
    that its two TMA loads arrive on (with their byte count); slot s is reloaded only after the
    wgmma that read it has retired (warpgroup_mma_wait with one MMA left outstanding)."""
    dtype: gl.constexpr = a_desc.dtype
    gl.static_assert(BLOCK_N <= 256, "one wgmma instruction covers at most 256 columns")
    # The accumulator's layout: wgmma (NVMMA version 3), the warps stacked along M (4 warps make a
    # warpgroup of 64 rows), one instruction 16 rows x BLOCK_N columns x 16 elements of K.
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[gl.num_warps(), 1],
                                                         instr_shape=[16, BLOCK_N, 16])

    tiles_m = gl.cdiv(M, BLOCK_M)
    tiles_n = gl.cdiv(N, BLOCK_N)
    tiles_per_band = GROUP_M * tiles_n
    pid = gl.program_id(0)
    band = pid // tiles_per_band
    first_m = band * GROUP_M
    band_height = min(tiles_m - first_m, GROUP_M)
    position = pid % tiles_per_band
    off_m = (first_m + position % band_height) * BLOCK_M
    off_n = (position // band_height) * BLOCK_N

    a_slots = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_M, BLOCK_K], a_desc.layout)
    b_slots = gl.allocate_shared_memory(dtype, [NUM_STAGES, BLOCK_K, BLOCK_N], b_desc.layout)
    loaded = gl.allocate_shared_memory(gl.int64, [NUM_STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NUM_STAGES):
        mbarrier.init(loaded.index(i), count=1)
    fence_async_shared()

    k_tiles = gl.cdiv(K, BLOCK_K)
    tile_bytes: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
    for i in gl.static_range(NUM_STAGES - 1):           # the prologue: the first NUM_STAGES - 1 K tiles
        first = i < k_tiles
        mbarrier.expect(loaded.index(i), tile_bytes, pred=first)
        tma.async_copy_global_to_shared(a_desc, [off_m, i * BLOCK_K], loaded.index(i), a_slots.index(i), pred=first)
        tma.async_copy_global_to_shared(b_desc, [i * BLOCK_K, off_n], loaded.index(i), b_slots.index(i), pred=first)

    acc = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, layout=acc_layout)
    for step in range(k_tiles):
        slot = step % NUM_STAGES
        mbarrier.wait(loaded.index(slot), (step // NUM_STAGES) & 1)
        acc = warpgroup_mma(a_slots.index(slot), b_slots.index(slot), acc, is_async=True)
        # The wgmma of the previous step has retired: its slot is the one to refill.
        acc, _, _ = warpgroup_mma_wait(num_outstanding=1, deps=(acc, a_slots.index(slot), b_slots.index(slot)))
        ahead = step + NUM_STAGES - 1
        refill = ahead % NUM_STAGES
        issue = ahead < k_tiles
        mbarrier.expect(loaded.index(refill), tile_bytes, pred=issue)
        tma.async_copy_global_to_shared(a_desc, [off_m, ahead * BLOCK_K], loaded.index(refill),
                                        a_slots.index(refill), pred=issue)
        tma.async_copy_global_to_shared(b_desc, [ahead * BLOCK_K, off_n], loaded.index(refill),
                                        b_slots.index(refill), pred=issue)
    acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
    for i in gl.static_range(NUM_STAGES):
        mbarrier.invalidate(loaded.index(i))

    # The epilogue: registers -> C's NVMMA-swizzled staging buffer -> one TMA store.
    c_tile = gl.allocate_shared_memory(dtype, [BLOCK_M, BLOCK_N], c_desc.layout)
    c_tile.store(acc.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [off_m, off_n], c_tile)
    tma.store_wait(pendings=0)
