# GPU tests of the Gluon example: each @gluon.jit kernel through the taot module (aot.py; module
# `gluon_examples` that the build_module fixture of tests/gpu_modules.py builds from
# gluon_examples.toml) against the same kernel launched through Triton's JIT (jit.py,
# kernel[grid](...)): bitwise equal, over ragged shapes (rows and columns that are not multiples of
# the blocks), outputs poisoned with NaN first; and against torch (softmax, matmul) within a
# tolerance. Every test is marked `gpu` and skipped without torch or an sm_90 GPU, or on a Triton
# whose Gluon the kernels are not written for (gluon_kernels.WRITTEN_FOR).
#
#   pytest examples/gluon -m gpu -v -s
import zlib
from pathlib import Path

import pytest

from example_support import gpu_marks, torch_and_skip_reason  # on sys.path through conftest.py
from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py

import aot
import gluon_kernels


def _release_skip_reason():
    import triton
    minor = tuple(int(part) for part in triton.__version__.split(".")[:2])
    for kernel, (oldest, newest) in gluon_kernels.WRITTEN_FOR.items():
        if not oldest <= minor <= newest:
            return (f"{kernel} is written for Triton {oldest[0]}.{oldest[1]} to {newest[0]}.{newest[1]}'s Gluon; "
                    f"this is Triton {triton.__version__}")
    return None


torch, SKIP_REASON = torch_and_skip_reason(lambda capability: capability == (9, 0),
                                           "the library is compiled for sm_90 only (H100 / H200)")
SKIP_REASON = SKIP_REASON or _release_skip_reason()
pytestmark = gpu_marks(SKIP_REASON)
HERE = Path(__file__).resolve().parent

if SKIP_REASON is None:
    import jit

library = None  # the generated module of gluon_examples.toml, set by gluon_module
gluon_module = module_fixture(HERE / "gluon_examples.toml", bind="library")

# ---- softmax ----

SOFTMAX_DTYPES = ["fp32", "fp16", "bf16"]
# (rows, columns): every BLOCK_COLS the spec compiles, with widths that are not powers of two and
# row counts that are not multiples of ROWS.
SOFTMAX_SHAPES = [(1, 1), (3, 100), (37, 129), (1000, 781), (5, 2048), (17, 3000), (33, 4097), (2, 8192),
                  (4099, 64), (7, 255)]


def torch_dtype(name):
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def seeded(*key):
    return torch.Generator(device="cuda").manual_seed(zlib.crc32(repr(key).encode()))


def padded(rows, cols, dtype, fill, pad=24):
    """A [rows, cols] view with row stride cols + pad into a buffer full of `fill`: writes past a
    row's end land in the padding, where they show."""
    buffer = torch.full((rows, cols + pad), fill, device="cuda", dtype=dtype)
    return buffer, buffer[:, :cols]


@pytest.mark.parametrize("dtype", SOFTMAX_DTYPES)
@pytest.mark.parametrize("shape", SOFTMAX_SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_softmax_against_jit_and_torch(dtype, shape):
    rows, cols = shape
    x = (torch.randn(rows, cols, device="cuda", generator=seeded("softmax", dtype, shape)) * 4).to(torch_dtype(dtype))
    out_buffer, out = padded(rows, cols, x.dtype, float("nan"))
    jit_buffer, out_jit = padded(rows, cols, x.dtype, float("nan"))
    aot.softmax(x, out)
    jit.softmax_jit(x, out_jit)
    torch.cuda.synchronize()
    assert not out.isnan().any(), "elements left unwritten"
    assert out_buffer[:, cols:].isnan().all(), "written past a row's end"
    expected = torch.softmax(x.float(), dim=1)
    tolerance = {"fp32": 1e-6, "fp16": 2e-3, "bf16": 1e-2}[dtype]
    torch.testing.assert_close(out.float(), expected, atol=tolerance, rtol=tolerance)
    equal = torch.equal(out, out_jit)
    print(f"[aot vs jit] gluon softmax {dtype} {rows}x{cols}: {'bitwise equal' if equal else 'DIFFERENT'}")
    assert equal, "taot and Triton JIT results differ"


def test_softmax_strided_rows_and_config():
    """Rows read with a stride larger than the row (a slice of a wider tensor), and the config the
    library's heuristics pick is the one Triton's @triton.heuristics computes."""
    from example_support import chosen, triton_heuristics_config
    wide = torch.randn(300, 1500, device="cuda", generator=seeded("strided"))
    x = wide[:, 100:1100]
    assert torch.equal(aot.softmax(x), jit.softmax_jit(x))
    out = torch.empty(300, 1000, device="cuda")
    config, step = chosen(library.softmax, out, x, 300, 1000, x.stride(0), out.stride(0))
    assert step == "heuristics"
    assert config == triton_heuristics_config(gluon_kernels.softmax_kernel, n_cols=1000)


# ---- matmul ----

MATMUL_DTYPES = ["fp16", "bf16"]
# (M, N, K): N and K multiples of 8 (TMA row pitches), none of M, N, K a multiple of every block.
MATMUL_SHAPES = [(128, 128, 128), (1, 8, 8), (300, 528, 784), (1000, 1032, 520), (257, 264, 1000),
                 (64, 256, 64), (2048, 2048, 2048)]


def config_id(config):
    return "{BLOCK_M}x{BLOCK_N}x{BLOCK_K}-s{NUM_STAGES}-w{num_warps}".format(**config)


@pytest.mark.parametrize("config", aot.MATMUL_CONFIGS, ids=config_id)
@pytest.mark.parametrize("dtype", MATMUL_DTYPES)
@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_against_jit_and_torch(shape, dtype, config):
    M, N, K = shape
    generator = seeded("matmul", dtype, shape)
    a = torch.randn(M, K, device="cuda", generator=generator).to(torch_dtype(dtype))
    b = torch.randn(K, N, device="cuda", generator=generator).to(torch_dtype(dtype))
    c = aot.matmul(a, b, out=torch.full((M, N), float("nan"), device="cuda", dtype=a.dtype), config=config)
    c_jit = jit.matmul_jit(a, b, out=torch.full((M, N), float("nan"), device="cuda", dtype=a.dtype), config=config)
    torch.cuda.synchronize()
    assert not c.isnan().any(), "tiles left unwritten"
    expected = a.double() @ b.double()
    error = ((c.double() - expected).norm() / expected.norm()).item()
    assert error < 1e-2, f"relative error {error:.2e} against the fp64 product"
    equal = torch.equal(c, c_jit)
    print(f"[aot vs jit] gluon matmul {dtype} {M}x{N}x{K} {config_id(config)}: "
          f"{'bitwise equal' if equal else 'DIFFERENT'}; error vs fp64 {error:.1e}")
    assert equal, "taot and Triton JIT results differ"


def test_matmul_variants_and_refusals():
    """The module's matmul variants are aot.MATMUL_CONFIGS per dtype; aot.matmul refuses what TMA
    cannot load."""
    variants = library.matmul_variants()
    assert len(variants) == len(aot.MATMUL_CONFIGS) * len(MATMUL_DTYPES)
    for variant in variants:
        assert variant["config"] in aot.MATMUL_CONFIGS, variant["id"]
    a = torch.randn(100, 36, device="cuda").half()
    with pytest.raises(ValueError, match="multiples of 8"):
        aot.matmul(a, torch.randn(36, 20, device="cuda").half())
    with pytest.raises(TypeError, match="must both be fp16 or both bf16"):
        aot.matmul(a, torch.randn(36, 16, device="cuda").bfloat16())
    empty = aot.matmul(a[:, :0], torch.randn(0, 16, device="cuda").half())
    assert torch.equal(empty, torch.zeros(100, 16, device="cuda").half())
