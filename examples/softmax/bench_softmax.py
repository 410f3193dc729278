# Bench file of the softmax library (softmax.toml; docs/bench-file.md): the `softmax` kernel over
# 4096 rows of 128 .. 32768 columns (every block size the spec compiles, so every config the
# heuristics choose) in fp16, bf16 and fp32, against torch.softmax and the same kernel through
# Triton's JIT (jit.py's launch, whose @triton.heuristics choose the config the library's runtime
# computes). The kernel reads x once and writes y once: a memory-bound sweep, plotted in GB/s.
# torch is imported where it is used (jit.py imports it at its top, so it is loaded at the first JIT
# launch), so that the file also loads on a machine without it.
import functools
import importlib.util
import sys
from pathlib import Path

LIBRARY = "softmax"
KERNEL = "softmax"
DIMS = ("rows", "cols", "dtype")
X_AXIS = "cols"
METRIC = "gbps"
ROWS = 4096
SHAPES = [(ROWS, 2 ** k, dtype) for dtype in ("fp16", "bf16", "fp32") for k in range(7, 16)]
OUTPUTS = ["y_ptr"]
# Against the fp64 reference (test_softmax_gpu.py's bounds): y's rounding of values in [0, 1], plus
# the error of exp2.approx; atol for the entries that underflow.
TOLERANCE = {"fp32": {"atol": 1e-7, "rtol": 2e-5},
             "fp16": {"atol": 1e-6, "rtol": 2e-3},
             "bf16": {"atol": 1e-6, "rtol": 1.6e-2}}
FLOPS_DTYPE = "fp32"  # the kernel computes in fp32 whatever the element type

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
ELEMENT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
HERE = Path(__file__).resolve().parent


def load_neighbour(name, filename):
    """This folder's `filename` as module `name`, with the folder on sys.path while it runs. Own names:
    `softmax` is the generated module's, and other examples have a jit.py and a reference.py too."""
    spec = importlib.util.spec_from_file_location(name, HERE / filename)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(HERE))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(HERE))
    return module


_reference = load_neighbour("softmax_reference", "reference.py")  # plain functions, no imports


@functools.cache
def jit_module():
    """jit.py (softmax_kernels.py through Triton's JIT; imports aot.py, and with it torch)."""
    return load_neighbour("softmax_jit", "jit.py")


def make_args(shape, device):
    """softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride): x normal with
    standard deviation 4 (rows with a few dominant entries, as bench/softmax_vs_torch.py uses), rows
    contiguous (16-byte aligned for every width here: the aligned variants); y uninitialised."""
    import torch
    rows, cols = shape["rows"], shape["cols"]
    x = torch.randn(rows, cols, device=device).mul_(4).to(getattr(torch, TORCH_DTYPES[shape["dtype"]]))
    y = torch.empty_like(x)
    return x, y, rows, cols, x.stride(0), y.stride(0)


def reference(x, y, n_rows, n_cols, x_row_stride, y_row_stride):
    return _reference.softmax_reference(x)


def torch_softmax(x, y, n_rows, n_cols, x_row_stride, y_row_stride):
    import torch
    torch.softmax(x, -1, out=y)


def triton_jit(x, y, n_rows, n_cols, x_row_stride, y_row_stride):
    jit_module().jit_launch(x, y, n_rows, n_cols, x_row_stride, y_row_stride)


BASELINES = {"torch": torch_softmax, "triton": triton_jit}


def flops(shape):
    """Per element: the max, x - max, the scale by log2(e), exp2, the sum and the scale by 1 / sum;
    one reciprocal per row."""
    return shape["rows"] * (6 * shape["cols"] + 1)


def bytes(shape):
    """x read once, y written once."""
    return 2 * shape["rows"] * shape["cols"] * ELEMENT_BYTES[shape["dtype"]]
