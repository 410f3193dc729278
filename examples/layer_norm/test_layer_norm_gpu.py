# GPU tests of the layer norm example through the Triton JIT path (jit.py) against the fp64 torch
# reference (reference.py) and torch's own layer norm. Every test is marked `gpu` and skipped without
# torch or a CUDA GPU. test_layer_norm_aot_gpu.py runs the taot module through the same checks.
#
#   pytest examples/layer_norm -m gpu -v
#
# Checks: y, mean and rstd for fp32 / fp16 / bf16 over a sweep of shapes (n_cols from 1 to 16384,
# powers of two and ragged, one to 4096 rows) with the config the kernel's @triton.heuristics choose,
# every config layer_norm.toml compiles (in the JIT: the aligned specialization), rows that are
# strided views (not 16-byte aligned, padded row strides), constant rows (variance 0: rstd =
# 1/sqrt(eps)), a large mean, no weight / bias, 3-d inputs, empty tensors. Outputs are poisoned (NaN)
# before launch; padding around the rows must stay untouched.
import zlib

import pytest

from example_support import gpu_marks, heuristic_configs, torch_and_skip_reason, triton_heuristics_config

torch, SKIP_REASON = torch_and_skip_reason()
pytestmark = gpu_marks(SKIP_REASON)

try:
    from layer_norm_kernels import layer_norm_fwd_kernel
except ImportError:  # no Triton: nothing here runs, and the spec tests say why
    layer_norm_fwd_kernel = None

if SKIP_REASON is None:
    import jit
    import reference as ref

DTYPE_NAMES = ["fp32", "fp16", "bf16"]
EPS = 1e-5
# (rtol, atol) of y against the fp64 reference: y is O(1) to O(10), rounded to the dtype
TOLERANCES = {"fp32": (1e-4, 1e-4), "fp16": (2e-3, 4e-3), "bf16": (1.6e-2, 3e-2)}
MAX_COLS = 16384                # the largest block layer_norm.toml compiles (test_layer_norm_spec.py checks it)
SHAPES = [(1, 1), (1, 7), (3, 100), (4096, 256), (777, 257), (64, 1000), (4096, 1024), (5, 1537),
          (300, 2048), (4096, 4096), (17, 5000), (1024, 8192), (3, 10000), (256, 16384)]


def heuristic_config(n_rows, n_cols):
    """The config the kernel's @triton.heuristics give a call (Triton's JIT and taot's runtime alike)."""
    return triton_heuristics_config(layer_norm_fwd_kernel, n_rows=n_rows, n_cols=n_cols)


# Every config the heuristics choose for some call: the 10 configs layer_norm.toml compiles.
CONFIGS = heuristic_configs(layer_norm_fwd_kernel, MAX_COLS) if layer_norm_fwd_kernel is not None else []


def torch_dtype(name):
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def seed(*params):
    """Fresh, reproducible random inputs per test case."""
    torch.manual_seed(zlib.crc32(repr(params).encode()))


def make_inputs(n_rows, n_cols, dtype_name):
    """x with a non-zero mean per row, weight and bias, all in the dtype."""
    dtype = torch_dtype(dtype_name)
    x = torch.randn(n_rows, n_cols, device="cuda") * 2 + torch.randn(n_rows, 1, device="cuda")
    w = torch.randn(n_cols, device="cuda") + 1
    b = torch.randn(n_cols, device="cuda")
    return x.to(dtype), w.to(dtype), b.to(dtype)


def check(result, x, w, b, dtype_name, label=""):
    """(y, mean, rstd) against the fp64 reference and against torch.native_layer_norm."""
    y, mean, rstd = result
    assert y.dtype == x.dtype and y.shape == x.shape
    assert mean.dtype == rstd.dtype == torch.float32 and mean.shape == rstd.shape == x.shape[:-1]
    ry, rmean, rrstd = ref.layer_norm_reference(x, w, b, EPS)
    for name, t in (("y", y), ("mean", mean), ("rstd", rstd)):
        finite = torch.isfinite(t)
        assert finite.all(), f"{label}: {(~finite).sum().item()} of {t.numel()} values of {name} are not finite"
    rtol, atol = TOLERANCES[dtype_name]
    torch.testing.assert_close(y.double(), ry, rtol=rtol, atol=atol, msg=lambda m: f"{label}: y: {m}")
    scale = x.double().abs().amax(dim=-1).clamp(min=1)
    assert ((mean.double() - rmean).abs() / scale).max().item() < 1e-5, f"{label}: mean"
    torch.testing.assert_close(rstd.double(), rrstd, rtol=1e-4, atol=0, msg=lambda m: f"{label}: rstd: {m}")
    if x.dim() == 2 and x.numel():
        ty, tmean, trstd = torch.native_layer_norm(x, x.shape[-1:], w, b, EPS)
        torch.testing.assert_close(y, ty, rtol=2 * rtol, atol=2 * atol)
        # torch keeps the statistics in fp32 on CUDA (in the input's type on the CPU)
        stats_rtol = 1e-4 if trstd.dtype == torch.float32 else rtol
        torch.testing.assert_close(rstd.double(), trstd.view(-1).double(), rtol=stats_rtol, atol=0)


def run_padded(launch, n_rows, n_cols, dtype_name, config, aligned, pad=16):
    """Launch on rows inside a wider, NaN-poisoned buffer (row stride n_cols + pad, one element in
    when not `aligned`, weight and bias too): ((y, mean, rstd), x, w, b, whether the padding of y
    stayed untouched)."""
    offset = 0 if aligned else 1
    dtype = torch_dtype(dtype_name)
    x, w, b = make_inputs(n_rows, n_cols + pad, dtype_name)
    x, w, b = x[:, offset:offset + n_cols], w[offset:offset + n_cols], b[offset:offset + n_cols]
    y_buffer = torch.full((n_rows, n_cols + pad), float("nan"), dtype=dtype, device="cuda")
    y = y_buffer[:, offset:offset + n_cols]
    mean = torch.full((n_rows,), float("nan"), device="cuda")
    rstd = torch.full((n_rows,), float("nan"), device="cuda")
    launch(x, y, w, b, mean, rstd, n_rows, n_cols, x.stride(0), y.stride(0), EPS, **config)
    torch.cuda.synchronize()
    outside = torch.ones_like(y_buffer, dtype=torch.bool)
    outside[:, offset:offset + n_cols] = False
    return (y, mean, rstd), x, w, b, bool(y_buffer[outside].isnan().all())


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
    x, w, b = make_inputs(*shape, dtype_name)
    check(jit.layer_norm_jit(x, w, b, EPS), x, w, b, dtype_name, label=f"{shape} {dtype_name}")


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("config", CONFIGS, ids=config_id)
def test_every_config(config, dtype_name):
    """Every config of layer_norm.toml on an aligned shape (n_cols a multiple of 16, ragged in the block)."""
    seed("config", config_id(config), dtype_name)
    n_rows, n_cols = 3 * config["BLOCK_ROWS"] + 1, aligned_cols(config)
    result, x, w, b, untouched = run_padded(jit.jit_launch, n_rows, n_cols, dtype_name, config, aligned=True)
    check(result, x, w, b, dtype_name, label=config_id(config))
    assert untouched, "the kernel wrote outside the rows"


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("n_cols", [1, 100, 1000, 3000])
def test_misaligned_views(n_cols, dtype_name):
    """Rows starting one element into a padded buffer: not 16-byte aligned, row stride n_cols + 16."""
    seed("views", n_cols, dtype_name)
    result, x, w, b, untouched = run_padded(jit.jit_launch, 5, n_cols, dtype_name, {}, aligned=False)
    check(result, x, w, b, dtype_name, label=f"view {n_cols}")
    assert untouched, "the kernel wrote outside the rows"


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_constant_rows_and_large_mean(dtype_name):
    """A constant row has variance 0: y = b and rstd = 1 / sqrt(eps); a mean of 1000 must not swamp
    the variance (the kernel subtracts the mean before squaring)."""
    seed("special", dtype_name)
    x, w, b = make_inputs(8, 1000, dtype_name)
    x[3] = 2.5
    x[5] = (torch.randn(1000, device="cuda") + 1000).to(x.dtype)
    y, mean, rstd = jit.layer_norm_jit(x, w, b, EPS)
    torch.testing.assert_close(y[3], b)
    assert abs(rstd[3].item() - EPS ** -0.5) < 1e-3 * EPS ** -0.5
    check((y, mean, rstd), x, w, b, dtype_name, label="special rows")


def test_no_weight_bias_and_3d():
    seed("3d")
    x = torch.randn(4, 30, 200, device="cuda", dtype=torch.bfloat16)
    y, mean, rstd = jit.layer_norm_jit(x)
    assert mean.shape == (4, 30)
    check((y, mean, rstd), x, None, None, "bf16", label="3-d, no weight or bias")
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (200,), eps=EPS), rtol=3e-2, atol=6e-2)


def test_empty_and_refused():
    y, mean, rstd = jit.layer_norm_jit(torch.empty(0, 10, device="cuda"))
    assert y.shape == (0, 10) and mean.shape == (0,)
    y, mean, rstd = jit.layer_norm_jit(torch.empty(3, 0, device="cuda"))
    assert y.shape == (3, 0) and mean.shape == (3,)
    with pytest.raises(ValueError, match="weight must be"):
        jit.layer_norm_jit(torch.zeros(2, 8, device="cuda"), torch.ones(8, device="cuda", dtype=torch.float16))
