# softmax(x) and matmul(a, b) through the taot library built from gluon_examples.toml (module
# `gluon_examples`: `taot build gluon_examples.toml -o OUT --python`, then CMake; OUT/build on
# PYTHONPATH): the host side of the Gluon example. jit.py runs the same code with Triton's JIT launch
# of the same @gluon.jit kernels in place of the module. The module takes plain torch tensors for
# the matmul's tensor descriptors (a descriptor over the whole tensor, with the variant's block; the
# runtime encodes the TMA map with the swizzle the compiled kernel reports). Needs torch (imported at
# call time, so that the configs below can be read without it); no Triton at run time.
MAX_COLS = 8192          # the widest softmax row: the largest BLOCK_COLS the spec compiles
INT32_MAX = 2**31 - 1


def matmul_config(block_m, block_n, block_k, stages, warps):
    """A matmul config in the spec's field order."""
    return dict(BLOCK_M=block_m, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_M=8, NUM_STAGES=stages, num_warps=warps)


# The configs gluon_examples.toml lists for the matmul (its `configs`), the first the default.
MATMUL_CONFIGS = [matmul_config(128, 128, 64, 4, 4),
                  matmul_config(128, 256, 64, 3, 8),
                  matmul_config(64, 128, 64, 4, 4)]


def softmax_module_launch(out, x, n_rows, n_cols, x_row_stride, out_row_stride):
    """The generated module's kernel `softmax` on torch's current stream: its config (BLOCK_COLS, ROWS,
    num_warps) comes from the kernel's @triton.heuristics, which the library evaluates at launch."""
    import gluon_examples as module  # the generated module of gluon_examples.toml
    module.softmax(out, x, n_rows, n_cols, x_row_stride, out_row_stride)


def softmax(x, out=None, launch=None):
    """Row-wise softmax of a 2-d fp32, fp16 or bf16 tensor whose rows are contiguous (any row stride,
    16-byte aligned base), computed in fp32; at most MAX_COLS columns. out: an optional tensor of
    x's shape and dtype with contiguous rows; launch: a callable taking the kernel's arguments in
    place of the module (jit.py passes Triton's)."""
    import torch
    if x.dim() != 2 or x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"softmax: expected a 2-d fp32, fp16 or bf16 tensor, got {x.dtype} {tuple(x.shape)}")
    n_rows, n_cols = x.shape
    if n_cols > MAX_COLS:
        raise ValueError(f"softmax: rows of at most {MAX_COLS} columns, got {n_cols}")
    if x.stride(1) != 1 and n_cols > 1:
        x = x.contiguous()
    out = torch.empty_like(x, memory_format=torch.contiguous_format) if out is None else out
    if out.shape != x.shape or out.dtype != x.dtype or (out.stride(1) != 1 and n_cols > 1):
        raise ValueError(f"softmax: out must be a {x.dtype} tensor of shape {tuple(x.shape)} with contiguous rows")
    if max(x.stride(0), out.stride(0)) > INT32_MAX:
        raise ValueError("softmax: a row stride is 2^31 or more (the kernel takes strides as i32)")
    if n_rows == 0 or n_cols == 0:
        return out
    (launch or softmax_module_launch)(out, x, n_rows, n_cols, x.stride(0), out.stride(0))
    return out


def matmul_module_launch(a, b, c, M, N, K, **config):
    """The generated module's kernel `matmul` (grid cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N), from the
    spec), on torch's current stream; the module encodes a descriptor of each of a, b and c."""
    import gluon_examples as module
    module.matmul(a, b, c, M, N, K, **config)


def matmul(a, b, out=None, config=None, launch=None):
    """C = a @ b for a [M, K] and b [K, N], both fp16 or both bf16, fp32 accumulation, C in their
    dtype. a and b are made row-major (copied when they are not); N and K must be multiples of 8 (TMA
    needs 16-byte row pitches), data pointers 16-byte aligned (fresh torch tensors are). out: an
    optional contiguous [M, N] result; config: one of MATMUL_CONFIGS (the first by default); launch:
    a callable taking (a, b, c, M, N, K) and the config's keywords in place of the module."""
    import torch
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: expected a [M, K] and b [K, N], got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype not in (torch.float16, torch.bfloat16) or b.dtype != a.dtype:
        raise TypeError(f"matmul: a and b must both be fp16 or both bf16, got {a.dtype} and {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    if N % 8 or K % 8:
        raise ValueError(f"matmul: N and K must be multiples of 8 (16-byte TMA row pitches), got N = {N}, K = {K}")
    if max(M, N, K) > INT32_MAX:
        raise ValueError("matmul: a dimension is 2^31 or more (the kernel takes M, N, K as i32)")
    a, b = a.contiguous(), b.contiguous()
    if out is None:
        out = torch.empty(M, N, dtype=a.dtype, device=a.device)
    elif out.shape != (M, N) or out.dtype != a.dtype or not out.is_contiguous():
        raise ValueError(f"matmul: out must be a contiguous {a.dtype} tensor of shape ({M}, {N})")
    for name, t in (("a", a), ("b", b), ("out", out)):
        if t.data_ptr() % 16:
            raise ValueError(f"matmul: {name} is not 16-byte aligned (TMA needs 16-byte aligned tensors)")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    (launch or matmul_module_launch)(a, b, out, M, N, K, **dict(config or MATMUL_CONFIGS[0]))
    return out
