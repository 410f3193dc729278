# GPU tests of the TMA matmul example: the taot module (aot.py; module `tma_matmul` that the
# build_module fixture of tests/gpu_modules.py builds from tma_matmul.toml) against cuBLAS
# (torch.matmul for bf16, torch._scaled_mm with unit scales for fp8) and the fp64 product, and against
# the same kernel through Triton JIT (jit.py, TensorDescriptor arguments), for every compiled config
# and mode (bf16, fp8, fp8 with fast accumulation); descriptors given to the module as
# TensorDescriptor objects; plus a benchmark printed with -s. Every test is marked `gpu` and skipped
# without torch or an sm_90 GPU.
#
#   pytest examples/tma_matmul -m gpu -v -s
import functools
import statistics
import zlib

from pathlib import Path

import pytest

from example_support import gpu_marks, torch_and_skip_reason  # on sys.path through conftest.py
from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py

torch, SKIP_REASON = torch_and_skip_reason(lambda capability: capability == (9, 0),
                                           "the library is compiled for sm_90 only (H100 / H200)")
pytestmark = gpu_marks(SKIP_REASON)
HERE = Path(__file__).resolve().parent

import aot  # noqa: E402  (torch only at call time)

if SKIP_REASON is None:
    import jit

library = None  # the generated module of tma_matmul.toml, set by tma_matmul_module
tma_matmul_module = module_fixture(HERE / "tma_matmul.toml", bind="library")


# Ragged shapes (M, N, K not multiples of the tiles; N and K multiples of 16), LLM projections (M
# tokens in {16, 128, 4096}, N = K hidden) and the benchmark's shapes.
SHAPES = [(128, 128, 128), (1000, 1024, 512), (300, 528, 784), (16, 4096, 4096), (128, 8192, 8192),
          (4096, 4096, 4096), (8192, 8192, 8192)]
# ||C - reference|| / ||reference|| (Frobenius) against cuBLAS and against the fp64 product; C is
# bf16 (about 2e-3 from rounding alone). Fast fp8 accumulation is expected to lose about 1% at K = 4096
# and 2% at K = 8192 (the tensor cores' accumulator keeps fewer mantissa bits than fp32).
TOLERANCE = {"bf16": 1e-2, "fp8": 1e-2, "fp8-fast": 5e-2}
BENCH_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096)]
H100_BLOCK_SHARED = 232448 - 1024          # opt-in limit minus Triton's 1 KiB of static shared memory


def shape_id(shape):
    return "x".join(map(str, shape))


def config_id(config):
    return ("{BLOCK_M}x{BLOCK_N}x{BLOCK_K}-s{num_stages}-w{num_warps}".format(**config)
            + ("-fast" if config["FAST_ACCUM"] else ""))


def case_id(case):
    return f"{case[0]}-{shape_id(case[1])}-{config_id(case[2])}" if isinstance(case, tuple) else None


def operands(mode, M, N, K):
    """a [M, K] row-major and b [K, N] K-major (b = w.t() for a contiguous w [N, K]), bf16 or fp8 e4m3."""
    generator = torch.Generator(device="cuda").manual_seed(zlib.crc32(repr((mode, M, N, K)).encode()))
    dtype = torch.bfloat16 if mode == "bf16" else torch.float8_e4m3fn
    a = torch.randn(M, K, device="cuda", generator=generator).to(dtype)
    w = torch.randn(N, K, device="cuda", generator=generator).to(dtype)
    return a, w.t()


def cublas(a, b, mode):
    """The same product by cuBLAS: torch.matmul (bf16), torch._scaled_mm with unit scales (fp8; with
    use_fast_accum for "fp8-fast")."""
    if mode == "bf16":
        return torch.matmul(a, b)
    one = torch.ones((), dtype=torch.float32, device="cuda")
    return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                            use_fast_accum=mode == "fp8-fast")


@functools.lru_cache(maxsize=1)
def references(mode, shape):
    """(a, b, cuBLAS's C, the fp64 product) for a case; the cases of one mode and shape come in a row."""
    a, b = operands(mode, *shape)
    return a, b, cublas(a, b, mode), a.double() @ b.double()


def poisoned(M, N):
    """An output full of NaN, so that a tile the kernel does not write shows up."""
    return torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)


def relative_error(c, expected):
    c, expected = c.double(), expected.double()
    return ((c - expected).norm() / expected.norm()).item()


def key(config):
    return tuple(sorted(config.items()))


def test_module_compiles_the_configs():
    """The module's variants are aot.CONFIGS; their images fit an H100 block, with 8 warps and no
    global scratch."""
    variants = library.tma_matmul_variants()
    listed = [c for mode in aot.MODES for c in aot.CONFIGS[mode]]
    assert sorted(key(v["config"]) for v in variants) == sorted(map(key, listed))
    for variant in variants:
        image = variant["images"][0]
        assert image["shared"] <= H100_BLOCK_SHARED, (variant["id"], image["shared"])
        assert image["num_warps"] == 8, (variant["id"], image["num_warps"])
        assert image["global_scratch_size"] == 0, variant["id"]


CASES = [(mode, shape, config) for mode in aot.MODES for shape in SHAPES for config in aot.CONFIGS[mode]]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_against_cublas_and_jit(case):
    mode, (M, N, K), config = case
    a, b, expected, exact = references(mode, (M, N, K))
    c = aot.tma_matmul(a, b, out=poisoned(M, N), config=config)
    c_jit = jit.tma_matmul_jit(a, b, out=poisoned(M, N), config=config)
    torch.cuda.synchronize()
    assert not c.isnan().any(), "tiles left unwritten"
    error, exact_error = relative_error(c, expected), relative_error(c, exact)
    assert error < TOLERANCE[mode], f"relative error {error:.2e} against cuBLAS"
    assert exact_error < TOLERANCE[mode], f"relative error {exact_error:.2e} against the fp64 product"
    equal = torch.equal(c, c_jit)
    print(f"[aot vs jit] tma_matmul {mode} {shape_id((M, N, K))} {config_id(config)}: "
          f"{'bitwise equal' if equal else 'DIFFERENT'}; error vs cuBLAS {error:.1e}, vs fp64 {exact_error:.1e}")
    assert equal, "taot and Triton JIT results differ"


def test_descriptor_objects():
    """The module takes TensorDescriptor objects where the spec has descriptors (the same result as
    plain tensors), and refuses one whose block no variant of the config loads, naming the argument."""
    M, N, K = 1000, 1024, 512
    a, b, expected, _ = references("bf16", (M, N, K))
    w = b.t()
    config = aot.CONFIGS["bf16"][0]
    kernel = library.tma_matmul
    sms = aot.num_sms(a.device)
    c_plain, c_objects = poisoned(M, N), poisoned(M, N)
    kernel(a, w, c_plain, M, N, K, sms, **config)
    a_desc = jit.descriptor(a, [config["BLOCK_M"], config["BLOCK_K"]])
    b_desc = jit.descriptor(w, [config["BLOCK_N"], config["BLOCK_K"]])
    c_desc = jit.descriptor(c_objects, [config["BLOCK_M"], config["EPILOGUE_BLOCK_N"]])
    kernel(a_desc, b_desc, c_desc, M, N, K, sms, **config)
    torch.cuda.synchronize()
    assert relative_error(c_plain, expected) < TOLERANCE["bf16"]
    assert torch.equal(c_plain, c_objects)
    with pytest.raises((ValueError, TypeError), match="a_desc"):
        kernel(jit.descriptor(a, [64, config["BLOCK_K"]]), b_desc, c_desc, M, N, K, sms, **config)


def test_default_config_layouts_and_refusals():
    M, N, K = 300, 528, 784
    for mode in aot.MODES:
        a, b = operands(mode, M, N, K)
        c = aot.tma_matmul(a, b, fast_accum=mode == "fp8-fast")           # pick_config
        assert relative_error(c, a.double() @ b.double()) < TOLERANCE[mode], mode
        row_major = aot.tma_matmul(a, b.contiguous(), fast_accum=mode == "fp8-fast")   # copied to K-major
        assert torch.equal(c, row_major), mode
    a, b = operands("bf16", M, N, K)
    assert aot.tma_matmul(a[:0], b).shape == (0, N)
    assert torch.equal(aot.tma_matmul(a[:, :0], b[:0]), torch.zeros(M, N, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="multiples of 16"):
        aot.tma_matmul(a[:, :8], b[:8])
    with pytest.raises(TypeError, match="must both be bf16 or both float8_e4m3fn"):
        aot.tma_matmul(a, b.to(torch.float16))
    misaligned = torch.empty(M * K + 8, device="cuda", dtype=torch.bfloat16)[1:M * K + 1].view(M, K)
    with pytest.raises(ValueError, match="16-byte aligned"):
        aot.tma_matmul(misaligned, b)


def time_ms(fn, warmup=5, reps=20, calls=5):
    """Median GPU time per call over `reps` samples of `calls` back-to-back calls (CUDA events), so that
    the time is the GPU's and not the CPU's launch path."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


@pytest.mark.parametrize("mode", aot.MODES)
@pytest.mark.parametrize("shape", BENCH_SHAPES, ids=shape_id)
def test_benchmark_against_cublas(shape, mode):
    """Prints TFLOP/s of every compiled config of the mode (taot module), of cuBLAS (for fp8 with and
    without use_fast_accum), and the time of taot's best config over the JIT's with that config; run -s."""
    M, N, K = shape
    a, b = operands(mode, M, N, K)
    c, c_jit = (torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    fast_accum = mode == "fp8-fast"

    def tflops(ms):
        return 2.0 * M * N * K / ms / 1e9
    results = {config_id(config): time_ms(lambda config=config: aot.tma_matmul(a, b, out=c, config=config))
               for config in aot.CONFIGS[mode]}
    best_id = min(results, key=results.get)
    best = next(config for config in aot.CONFIGS[mode] if config_id(config) == best_id)
    jit_ms = time_ms(lambda: jit.tma_matmul_jit(a, b, out=c_jit, config=best))
    picked_ms = time_ms(lambda: aot.tma_matmul(a, b, out=c, fast_accum=fast_accum))
    name = f"[tma matmul] {shape_id(shape)} {mode}"
    for config_name, ms in results.items():
        print(f"{name} taot {config_name}: {ms:.3f} ms, {tflops(ms):.0f} TFLOP/s")
    if mode == "bf16":
        cublas_ms = {"torch.matmul": time_ms(lambda: cublas(a, b, mode))}
    else:
        cublas_ms = {f"torch._scaled_mm use_fast_accum={fast}": time_ms(lambda fast=fast: cublas(
            a, b, "fp8-fast" if fast else "fp8")) for fast in (fast_accum, not fast_accum)}
    for cublas_name, ms in cublas_ms.items():
        print(f"{name} cuBLAS {cublas_name}: {ms:.3f} ms, {tflops(ms):.0f} TFLOP/s")
    ratios = ", ".join(f"{ms / results[best_id]:.2f}x {cublas_name}" for cublas_name, ms in cublas_ms.items())
    print(f"{name} best taot ({best_id}) {tflops(results[best_id]):.0f} TFLOP/s = {ratios}; "
          f"picked config {tflops(picked_ms):.0f} TFLOP/s; JIT with the best config {tflops(jit_ms):.0f} TFLOP/s, "
          f"taot/JIT time {results[best_id] / jit_ms:.2f}")
