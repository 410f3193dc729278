# Bench file of the vector add example (docs/bench-file.md): add_kernel (vector_add.toml) against
# torch.add and the same kernel through Triton's JIT, out = x + y for n = 2^12 .. 2^28 in fp32 and bf16.
# torch is imported where it is used, so that the file also loads on a machine without it (the sweep
# and the formulas need no torch).
import importlib.util
from pathlib import Path

import triton

LIBRARY = "vector_add"
KERNEL = "add_kernel"
DIMS = ("n", "dtype")
X_AXIS = "n"
METRIC = "gbps"  # a memory-bound kernel: its FLOP rate says little
SHAPES = [(2 ** k, dtype) for dtype in ("fp32", "bf16") for k in range(12, 29, 2)]
OUTPUTS = ["output_ptr"]
TOLERANCE = {"atol": 0, "rtol": 0}  # one rounding of x + y, as torch rounds it: equal

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
ELEMENT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
JIT_CONFIG = dict(BLOCK_SIZE=1024, num_warps=4)  # the spec's default config


def make_args(shape, device):
    """add_kernel(x_ptr, y_ptr, output_ptr, n_elements): x and y uniform in [0, 1), out uninitialised."""
    import torch
    n, dtype = shape["n"], getattr(torch, TORCH_DTYPES[shape["dtype"]])
    x = torch.rand(n, dtype=dtype, device=device)
    y = torch.rand(n, dtype=dtype, device=device)
    return x, y, torch.empty_like(x), n


def reference(x, y, out, n):
    return x + y


def torch_add(x, y, out, n):
    import torch
    torch.add(x, y, out=out)


# The kernel's source, loaded under its own module name: `vector_add` is the generated module's.
_source = importlib.util.spec_from_file_location("vector_add_source", Path(__file__).with_name("vector_add.py"))
_kernels = importlib.util.module_from_spec(_source)
_source.loader.exec_module(_kernels)


def triton_jit(x, y, out, n):
    _kernels.add_kernel[(triton.cdiv(n, JIT_CONFIG["BLOCK_SIZE"]),)](x, y, out, n, **JIT_CONFIG)


BASELINES = {"torch": torch_add, "triton": triton_jit}


def flops(shape):
    return shape["n"]


def bytes(shape):
    """x and y read, out written."""
    return 3 * shape["n"] * ELEMENT_BYTES[shape["dtype"]]
