# Bench file of the matmul library (matmul.toml; docs/bench-file.md), one entry per kernel: `matmul`
# (the tuned tiles: row-major A, B, C) over M = 1 .. 4096 at N = K = 4096 in bf16 and fp16, and
# `matmul_generic` (one tile, any layout) on ragged shapes with B column-major, each against
# torch.matmul (cuBLAS) and the same kernel through Triton's JIT with the config aot.py's host code
# picks. What both kernels share is written once, at the top. torch is imported where it is used, so
# that the file also loads on a machine without it.
import triton

from configs import GENERIC, pick_config
from matmul_kernels import matmul_kernel

LIBRARY = "matmul"
DIMS = ("M", "N", "K", "dtype")
X_AXIS = "M"
OUTPUTS = ["c_ptr"]
# Element by element against the fp64 product, inputs scaled so that |C| is about 1: fp16 and bf16
# round C once; fp32 accumulation over K adds little.
TOLERANCE = {"fp16": {"atol": 2e-3, "rtol": 2e-3}, "bf16": {"atol": 1e-2, "rtol": 1e-2}}

M_VALUES = (1, 16, 64, 128, 256, 512, 1024, 2048, 4096)
TORCH_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}
KINDS = {"torch.float16": "fp16", "torch.bfloat16": "bf16"}


def operands(shape, device, b_column_major=False):
    """matmul_kernel's runtime arguments: a [M, K], b [K, N] (row-major, or column-major: b = w.t()),
    c [M, N] uninitialised, then M, N, K and the strides of a, b, c in elements."""
    import torch
    M, N, K = shape["M"], shape["N"], shape["K"]
    dtype = getattr(torch, TORCH_DTYPES[shape["dtype"]])
    a = torch.randn(M, K, device=device).to(dtype)
    if b_column_major:
        b = torch.randn(N, K, device=device).mul_(K ** -0.5).to(dtype).t()
    else:
        b = torch.randn(K, N, device=device).mul_(K ** -0.5).to(dtype)
    c = torch.empty(M, N, dtype=dtype, device=device)
    return [a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)]


def reference(a, b, c, *sizes_and_strides):
    return a.double() @ b.double()


def torch_matmul(a, b, c, *sizes_and_strides):
    import torch
    torch.matmul(a, b, out=c)


def jit_launch(config_for):
    """A baseline launching matmul_kernel through Triton's JIT with config_for(M, N, K, kind)."""
    def launch(a, b, c, M, N, K, *strides):
        config = config_for(M, N, K, KINDS[str(a.dtype)])
        grid = (triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"]),)
        matmul_kernel[grid](a, b, c, M, N, K, *strides, **config)
    return launch


def flops(shape):
    return 2 * shape["M"] * shape["N"] * shape["K"]


def bytes(shape):
    """A and B read once, C written once (2-byte elements)."""
    M, N, K = shape["M"], shape["N"], shape["K"]
    return 2 * (M * K + K * N + M * N)


def flops_dtype(shape):
    return shape["dtype"]


KERNELS = {
    "matmul": {
        "shapes": [(m, 4096, 4096, dtype) for dtype in ("bf16", "fp16") for m in M_VALUES],
        "make_args": operands,
        "baselines": {"torch": torch_matmul, "triton": jit_launch(pick_config)},
        # The M values `taot tune` times (the spec's tuning key would be ["M"]).
        "tune_shapes": [(2 ** k, 4096, 4096, "bf16") for k in range(13)],
    },
    "matmul_generic": {
        "shapes": [(m, 1001, 1003, "bf16") for m in (16, 128, 1024, 4096)],
        "make_args": lambda shape, device: operands(shape, device, b_column_major=True),
        "baselines": {"torch": torch_matmul,
                      "triton": jit_launch(lambda M, N, K, kind: dict(GENERIC[kind]))},
    },
}
