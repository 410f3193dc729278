# GPU tests of the softmax example through the Triton JIT path (jit.py) against the fp64 torch
# reference (reference.py) and torch.softmax. Every test is marked `gpu` and skipped without torch or
# a CUDA GPU. test_softmax_aot_gpu.py runs the taot module through the same checks.
#
#   pytest examples/softmax -m gpu -v
#
# Checks: fp32 / fp16 / bf16 over a sweep of shapes (n_cols from 1 to 32768, powers of two and
# ragged, one to 4096 rows) with the config the kernel's @triton.heuristics choose, every config
# softmax.toml compiles (in the JIT: the aligned specialization), rows that are strided views (not
# 16-byte aligned, padded row strides), -inf entries, huge values, other dims, `out=`, empty tensors.
# Outputs are poisoned (NaN) before launch and every row of the result must be finite and sum to 1;
# padding around the rows must stay untouched.
import zlib

import pytest

from example_support import gpu_marks, heuristic_configs, torch_and_skip_reason, triton_heuristics_config

torch, SKIP_REASON = torch_and_skip_reason()
pytestmark = gpu_marks(SKIP_REASON)

try:
    from softmax_kernels import softmax_kernel
except ImportError:  # no Triton: nothing here runs, and the spec tests say why
    softmax_kernel = None

if SKIP_REASON is None:
    import jit
    import reference as ref

DTYPE_NAMES = ["fp32", "fp16", "bf16"]
# (rtol, atol) against the fp64 reference: the dtype's rounding of values in [0, 1], plus ex2.approx
TOLERANCES = {"fp32": (2e-5, 1e-7), "fp16": (2e-3, 1e-6), "bf16": (1.6e-2, 1e-6)}
MAX_COLS = 32768                # the largest block softmax.toml compiles (test_softmax_spec.py checks it)
SHAPES = [(1, 1), (1, 7), (3, 100), (4096, 128), (777, 129), (64, 1000), (4096, 1024), (5, 1537),
          (300, 2048), (4096, 4096), (17, 5000), (1024, 8192), (3, 10000), (256, 16384), (9, 30000),
          (64, 32768)]


def heuristic_config(n_rows, n_cols):
    """The config the kernel's @triton.heuristics give a call (Triton's JIT and taot's runtime alike)."""
    return triton_heuristics_config(softmax_kernel, n_rows=n_rows, n_cols=n_cols)


# Every config the heuristics choose for some call: the 13 configs softmax.toml compiles.
CONFIGS = heuristic_configs(softmax_kernel, MAX_COLS) if softmax_kernel is not None else []


def torch_dtype(name):
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def seed(*params):
    """Fresh, reproducible random inputs per test case."""
    torch.manual_seed(zlib.crc32(repr(params).encode()))


def make_input(n_rows, n_cols, dtype_name, scale=4.0):
    return (torch.randn(n_rows, n_cols, device="cuda") * scale).to(torch_dtype(dtype_name))


def check(y, x, dtype_name, dim=-1, label=""):
    """y against the fp64 reference: close, finite, rows summing to 1, and near torch.softmax."""
    assert y.dtype == x.dtype and y.shape == x.shape
    expected = ref.softmax_reference(x, dim)
    finite = torch.isfinite(y)
    assert finite.all(), f"{label}: {(~finite).sum().item()} of {y.numel()} outputs are not finite"
    rtol, atol = TOLERANCES[dtype_name]
    torch.testing.assert_close(y.double(), expected, rtol=rtol, atol=atol, msg=lambda m: f"{label}: {m}")
    sums = y.double().sum(dim)
    n = x.shape[dim] if x.dim() else 1
    assert (sums - 1).abs().max().item() < max(1e-5, n * rtol), f"{label}: rows do not sum to 1"
    torch.testing.assert_close(y, torch.softmax(x, dim), rtol=2 * rtol, atol=2 * atol)


def run_padded(launch, n_rows, n_cols, dtype_name, config, aligned, pad=16):
    """Launch on rows that live inside a wider, NaN-poisoned buffer (row stride n_cols + pad, and
    one element offset when not `aligned`): the result, and whether the padding stayed untouched."""
    offset = 0 if aligned else 1
    dtype = torch_dtype(dtype_name)
    x_buffer = (torch.randn(n_rows, n_cols + pad, device="cuda") * 4).to(dtype)
    x = x_buffer[:, offset:offset + n_cols]
    y_buffer = torch.full((n_rows, n_cols + pad), float("nan"), dtype=dtype, device="cuda")
    y = y_buffer[:, offset:offset + n_cols]
    launch(x, y, n_rows, n_cols, x.stride(0), y.stride(0), **config)
    torch.cuda.synchronize()
    outside = torch.ones_like(y_buffer, dtype=torch.bool)
    outside[:, offset:offset + n_cols] = False
    return x, y, bool(y_buffer[outside].isnan().all())


def aligned_cols(config):
    """An n_cols that fits `config`'s block, a multiple of 16 (the aligned variants) and ragged in the block."""
    return max(16, config["BLOCK_SIZE"] - 48)


def config_id(config):
    return "bs{BLOCK_SIZE}r{BLOCK_ROWS}w{num_warps}".format(**config)


# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_shapes(shape, dtype_name):
    seed("shapes", shape, dtype_name)
    x = make_input(*shape, dtype_name)
    check(jit.softmax_jit(x), x, dtype_name, label=f"{shape} {dtype_name}")


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_every_config(config, dtype_name):
    """Every config of softmax.toml on an aligned shape (n_cols a multiple of 16, ragged in the block)."""
    seed("config", config_id(config), dtype_name)
    n_rows, n_cols = 3 * config["BLOCK_ROWS"] + 1, aligned_cols(config)
    x, y, untouched = run_padded(jit.jit_launch, n_rows, n_cols, dtype_name, config, aligned=True)
    check(y, x, dtype_name, label=config_id(config))
    assert untouched, "the kernel wrote outside the rows"


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("n_cols", [1, 100, 1000, 3000])
def test_misaligned_views(n_cols, dtype_name):
    """Rows starting one element into a padded buffer: not 16-byte aligned, row stride n_cols + 16."""
    seed("views", n_cols, dtype_name)
    x, y, untouched = run_padded(jit.jit_launch, 5, n_cols, dtype_name, {}, aligned=False)
    check(y, x, dtype_name, label=f"view {n_cols}")
    assert untouched, "the kernel wrote outside the rows"


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_special_values(dtype_name):
    """-inf entries (masked attention scores) and huge values (the max subtraction keeps exp finite)."""
    seed("special", dtype_name)
    x = make_input(64, 300, dtype_name)
    huge = 6e4 if dtype_name == "fp16" else 1e30
    x[5] = huge                        # a row of equal huge values: uniform
    x[6, 7] = huge                     # one huge value: one-hot
    x[:, ::3] = float("-inf")
    y = jit.softmax_jit(x)
    torch.testing.assert_close(y.double(), ref.softmax_reference(x), rtol=TOLERANCES[dtype_name][0], atol=1e-6)
    assert (y[:, ::3] == 0).all()


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_other_dims_and_out(dim):
    seed("dims", dim)
    x = make_input(12, 300, "fp32").view(12, 30, 10)
    check(jit.softmax_jit(x, dim=dim), x, "fp32", dim=dim, label=f"dim {dim}")
    out = torch.full_like(x, float("nan"))
    assert jit.softmax_jit(x, dim=dim, out=out) is out
    check(out, x, "fp32", dim=dim, label=f"dim {dim} out=")


def test_empty_and_scalar():
    assert jit.softmax_jit(torch.empty(0, 10, device="cuda")).shape == (0, 10)
    assert jit.softmax_jit(torch.empty(10, 0, device="cuda")).shape == (10, 0)
    assert jit.softmax_jit(torch.tensor(3.0, device="cuda")).item() == 1.0

