# GPU tests of the matmul example through the Triton JIT path (jit.py) against the fp64 torch
# reference (reference.py). Every test is marked `gpu` and skipped without torch or a CUDA GPU.
# test_matmul_aot_gpu.py runs the taot modules through the same checks.
#
#   pytest examples/matmul -m gpu -v
#
# Checks: fp16, bf16 and fp8 e4m3 (fp16 and bf16 out; bf16 also with FAST_ACCUM) over a sweep of
# shapes (M from 1 to 4096, M / N / K multiples of the tiles and not, N and K not multiples of 16: the
# generic kernel), every tile config the specs compile, the tiles with more than 100 KiB of shared
# memory by name, strided and transposed operands, a result written into a padded buffer. Relative
# error ||C - ref|| / ||ref|| in fp64 below 2e-3 (fp16 out of fp16 inputs), 1e-2 (bf16 out, fp8
# inputs) or 3e-2 (fp8 with fast accumulation); outputs are poisoned (NaN) before launch, so a tile
# that is not written shows up.
import zlib

import pytest

from example_support import gpu_marks, torch_and_skip_reason  # on sys.path through conftest.py

torch, SKIP_REASON = torch_and_skip_reason(lambda capability: capability >= (9, 0),
                                           "the fp8 kernels and these tests target sm_90 (H100 / H200)")
pytestmark = gpu_marks(SKIP_REASON)

import configs  # noqa: E402  (plain Python)

if SKIP_REASON is None:
    import jit
    import reference as ref

# (input kind, output dtype name, fp8 fast accumulation)
PRECISIONS = [("fp16", "fp16", False), ("bf16", "bf16", False), ("fp8", "fp16", False), ("fp8", "bf16", False),
              ("fp8", "bf16", True)]
SHAPES = [(1, 16, 16), (7, 48, 80), (16, 4096, 4096), (128, 4096, 4096), (300, 528, 784), (1000, 1008, 1040),
          (2048, 2048, 2048), (4096, 4096, 4096), (99, 101, 97), (1000, 1001, 1003)]
ALIGNED_RAGGED = (300, 528, 784)       # M, N, K: N and K multiples of 16, none a multiple of the tiles


def precision_id(precision):
    kind, out_name, fast_accum = precision
    return (f"{kind}-{out_name}" + ("-fast" if fast_accum else "")) if kind == "fp8" else kind


def precision_tiles(precision):
    """The tuned tiles of the spec for this precision (fp8: of its accumulation mode)."""
    return configs.tiles(precision[0], precision[2])


def large_shared_tiles(precision):
    """Its tiles of more than 100 KiB of shared memory on sm_90, the 128-row ones (the manifest
    says so; the AOT tests check)."""
    return [t for t in precision_tiles(precision) if t["BLOCK_M"] == 128]


def config_id(config):
    return "m{BLOCK_M}n{BLOCK_N}k{BLOCK_K}s{num_stages}w{num_warps}".format(**config) + (
        "-fast" if config.get("FAST_ACCUM") else "")


def shape_id(shape):
    return "x".join(map(str, shape))


def torch_dtype(name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16, "fp8": torch.float8_e4m3fn}[name]


def seed(*params):
    """Fresh, reproducible random inputs per test case."""
    torch.manual_seed(zlib.crc32(repr(params).encode()))


def tolerance(precision):
    if precision[2]:
        return 3e-2
    return 2e-3 if precision[0] == "fp16" else 1e-2


def make_operands(M, N, K, kind):
    """a [M, K] row-major and b [K, N]: row-major for fp16 / bf16, column-major (b = w.t(), w [N, K]
    row-major) for fp8 — the layouts of the tuned variants when N and K are multiples of 16."""
    a = torch.randn(M, K, device="cuda")
    if kind == "fp8":
        return a.to(torch.float8_e4m3fn), torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn).t()
    return a.to(torch_dtype(kind)), torch.randn(K, N, device="cuda").to(torch_dtype(kind))


def poisoned(M, N, out_name):
    return torch.full((M, N), float("nan"), dtype=torch_dtype(out_name), device="cuda")


def check(c, a, b, precision, label=""):
    finite = torch.isfinite(c)
    assert finite.all(), f"{label}: {(~finite).sum().item()} of {c.numel()} outputs are not finite (unwritten tiles?)"
    err = ref.relative_error(c, ref.matmul_reference(a, b))
    print(f"[matmul] {label}: relative error {err:.2e}")
    assert err < tolerance(precision), f"{label}: relative error {err:.3e}"
    return err


def run_with(matmul, a, b, precision, config=None):
    """matmul (jit.matmul_jit or aot.matmul) into a poisoned result."""
    out = poisoned(a.shape[0], b.shape[1], precision[1])
    result = matmul(a, b, out=out, fast_accum=precision[2], config=config)
    torch.cuda.synchronize()
    assert result is out
    return out


# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("precision", PRECISIONS, ids=precision_id)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_shapes(shape, precision):
    seed("shapes", shape, precision)
    a, b = make_operands(*shape, precision[0])
    c = run_with(jit.matmul_jit, a, b, precision)
    check(c, a, b, precision, f"{shape_id(shape)} {precision_id(precision)}")


@pytest.mark.parametrize("precision", PRECISIONS, ids=precision_id)
def test_every_config(precision):
    """Every tuned tile of the spec on an aligned shape that is ragged in every tile, and the
    generic tile on the same shape."""
    kind = precision[0]
    seed("configs", precision)
    a, b = make_operands(*ALIGNED_RAGGED, kind)
    for config in precision_tiles(precision) + [configs.GENERIC[kind]]:
        c = run_with(jit.matmul_jit, a, b, precision, config)
        check(c, a, b, precision, f"{config_id(config)} {precision_id(precision)}")


@pytest.mark.parametrize("precision", PRECISIONS, ids=precision_id)
def test_large_shared_memory_tiles(precision):
    """The tiles of more than 100 KiB of shared memory (128 x 256 with 3 and 4 stages, 128 x 128)
    on a 4096^2 x 4096 product (many tiles, full pipelines) and a ragged one."""
    kind = precision[0]
    for shape in ((4096, 4096, 4096), ALIGNED_RAGGED):
        seed("large", precision, shape)
        a, b = make_operands(*shape, kind)
        for config in large_shared_tiles(precision):
            c = run_with(jit.matmul_jit, a, b, precision, config)
            check(c, a, b, precision, f"{shape_id(shape)} {config_id(config)} {precision_id(precision)}")


@pytest.mark.parametrize("precision", PRECISIONS, ids=precision_id)
def test_strided_and_transposed_operands(precision):
    """Operands that only the generic variant takes: a one element into a padded buffer (not
    16-byte aligned), b in the other layout (transposed), C a column slice of a wider buffer."""
    kind = precision[0]
    seed("views", precision)
    M, N, K = 200, 272, 208
    a = torch.randn(M, K + 8, device="cuda").to(torch_dtype(kind))[:, 1:K + 1]
    w = torch.randn(N, K, device="cuda")
    # b in the other layout than the tuned one: column-major for fp16 / bf16, row-major for fp8
    b = w.to(torch_dtype(kind)).t() if kind != "fp8" else w.t().contiguous().to(torch.float8_e4m3fn)
    assert not configs.tuned_layout(a.data_ptr(), b.data_ptr(), 0, N, K, a.stride(), b.stride(), (N, 1), kind == "fp8")
    c = run_with(jit.matmul_jit, a, b, precision)
    check(c, a, b, precision, f"views {precision_id(precision)}")
    # C inside a wider buffer: the tuned variants (aligned row stride), padding untouched
    a, b = make_operands(M, N, K, kind)
    c_buffer = poisoned(M, N + 16, precision[1])
    c = c_buffer[:, :N]
    jit.matmul_jit(a, b, out=c)
    torch.cuda.synchronize()
    check(c, a, b, precision, f"padded C {precision_id(precision)}")
    assert c_buffer[:, N:].isnan().all(), "the kernel wrote outside C"


def test_empty_and_refused():
    a = torch.randn(0, 64, device="cuda", dtype=torch.float16)
    assert jit.matmul_jit(a, torch.randn(64, 32, device="cuda", dtype=torch.float16)).shape == (0, 32)
    c = jit.matmul_jit(torch.randn(4, 0, device="cuda", dtype=torch.bfloat16),
                       torch.randn(0, 8, device="cuda", dtype=torch.bfloat16))
    assert c.shape == (4, 8) and (c == 0).all()
    with pytest.raises(TypeError, match="must both be fp16, bf16 or float8_e4m3fn"):
        jit.matmul_jit(torch.randn(4, 4, device="cuda"), torch.randn(4, 4, device="cuda"))
    with pytest.raises(TypeError, match="stored as"):
        jit.matmul_jit(torch.randn(4, 4, device="cuda").half(), torch.randn(4, 4, device="cuda").half(),
                       out_dtype=torch.bfloat16)
