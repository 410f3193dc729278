# The matmul tile configs that matmul.toml (fp16, bf16) and matmul_fp8.toml (fp8) compile, the layout
# rule that says whether a call may use the tuned kernel (`matmul`, `matmul_fp8`) or only the generic
# one (`matmul_generic`, `matmul_fp8_generic`), and the config to use for a shape. Shared by aot.py
# (the taot modules) and jit.py (Triton JIT), so that both paths launch the same kernel with the same
# config. Plain Python: no torch, no Triton.

GROUP_SIZE_M = 8


def tile(m, n, k, stages, warps, fast_accum=False):
    """A config in the specs' field order (FAST_ACCUM matters for fp8 only)."""
    return dict(BLOCK_M=m, BLOCK_N=n, BLOCK_K=k, GROUP_SIZE_M=GROUP_SIZE_M, FAST_ACCUM=fast_accum,
                num_stages=stages, num_warps=warps)


fp8 = tile


# Tuned tiles, largest first (the order pick_config tries them in), with their shared memory on
# sm_90. fp8 tiles carry FAST_ACCUM (see matmul_kernels.py): the 128 x 256 ones only with it (the
# second accumulator would spill), the 16-row ones (mma.sync, fp32 accumulation anyway) only without.
TUNED = {
    "fp16": [tile(128, 256, 64, 3, 8),               # 144 KiB
             tile(128, 256, 64, 4, 8),               # 192 KiB
             tile(128, 128, 64, 4, 4),               # 128 KiB
             tile(64, 128, 64, 4, 4),                #  96 KiB
             tile(64, 64, 64, 4, 4),
             tile(32, 64, 128, 4, 4),
             tile(16, 64, 256, 4, 4),                # 120 KiB
             tile(16, 32, 256, 4, 4)],
    "fp8": [fp8(128, 256, 128, 3, 8, True),          # 144 KiB
            fp8(128, 256, 128, 4, 8, True),          # 192 KiB
            fp8(128, 128, 128, 4, 8, False),         # 128 KiB
            fp8(128, 128, 128, 4, 8, True),
            fp8(64, 128, 128, 4, 4, False),          #  96 KiB
            fp8(64, 128, 128, 4, 4, True),
            fp8(64, 64, 128, 4, 4, False),
            fp8(64, 64, 128, 4, 4, True),
            fp8(16, 64, 256, 4, 4, False),
            fp8(16, 32, 256, 4, 4, False)],
}
TUNED["bf16"] = TUNED["fp16"]
# The one tile of the generic kernels (any layout, alignment and shape).
GENERIC = {"fp16": tile(64, 64, 32, 3, 4), "bf16": tile(64, 64, 32, 3, 4), "fp8": fp8(64, 64, 64, 3, 4, False)}
# Tiles pick_config skips unless asked for (the same tile with fewer stages is preferred).
NOT_PICKED = [tile(128, 256, 64, 4, 8), fp8(128, 256, 128, 4, 8, True)]
SHARED_LIMIT_KIB = 100          # "large" shared memory, for the tests: above this many KiB per block


def tiles(kind, fast_accum=False):
    """The tuned tiles for a kind ("fp16", "bf16", "fp8") and, for fp8, an accumulation mode: those
    compiled with that FAST_ACCUM, plus the 16-row ones with fast_accum (they accumulate in fp32)."""
    if kind != "fp8":
        return TUNED[kind]
    return [t for t in TUNED[kind] if t["FAST_ACCUM"] == fast_accum or (fast_accum and t["BLOCK_M"] < 64)]


def tuned_layout(a_ptr, b_ptr, c_ptr, N, K, a_strides, b_strides, c_strides, fp8):
    """Whether a call may use the tuned kernel: every pointer 16-byte aligned, N and K multiples of
    16, A and C row-major with row strides multiples of 16; B row-major [K, N] (fp16 / bf16) or
    column-major (fp8: stride_bk == 1) with its other stride a multiple of 16. Otherwise only the
    generic kernel accepts it. (Strides in elements, as (rows, columns).)"""
    b_unit, b_other = (b_strides[0], b_strides[1]) if fp8 else (b_strides[1], b_strides[0])
    return (all(p % 16 == 0 for p in (a_ptr, b_ptr, c_ptr)) and N % 16 == 0 and K % 16 == 0
            and a_strides[1] == 1 and c_strides[1] == 1 and b_unit == 1
            and a_strides[0] % 16 == 0 and c_strides[0] % 16 == 0 and b_other % 16 == 0)


def uses_generic_kernel(config, kind, tuned):
    """Whether a call with `config` runs the generic kernel: its layout is not tuned_layout, or the
    config is the generic tile (which the tuned kernel does not compile)."""
    return not tuned or config not in TUNED[kind]


def next_power_of_2(n):
    return 1 << max(n - 1, 0).bit_length()


def pick_config(M, N, K, kind, tuned=True, fast_accum=False, num_sms=132):
    """The config for C[M, N] = A[M, K] @ B[K, N]; kind "fp16", "bf16" or "fp8" (fast_accum: the
    FAST_ACCUM mode of the fp8 tiles). The generic kernels have one tile. For the tuned ones: among
    the tiles whose BLOCK_M does not exceed M (rounded up to a power of two, at least 16), the
    largest that still gives at least num_sms / 2 tiles; else the one that gives the most.
    `tuned`: whether the call has tuned_layout; else the generic tile."""
    if not tuned:
        return dict(GENERIC[kind])
    m_cap = max(16, next_power_of_2(M))
    candidates = [t for t in tiles(kind, fast_accum) if t["BLOCK_M"] <= m_cap and t not in NOT_PICKED]

    def count(t):
        return -(-M // t["BLOCK_M"]) * -(-N // t["BLOCK_N"])
    for t in candidates:
        if count(t) >= num_sms // 2:
            return dict(t)
    return dict(max(candidates, key=count))
