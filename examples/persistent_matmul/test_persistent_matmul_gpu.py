# GPU tests of the persistent matmul example: the taot module (aot.py; module `persistent_matmul` that
# the build_module fixture of tests/gpu_modules.py builds from persistent_matmul.toml) against
# torch.matmul and against the same kernel through Triton JIT (jit.py), for every compiled config;
# plus a benchmark printed with -s. Every test is marked `gpu` and skipped without torch or an sm_90
# GPU.
#
#   pytest examples/persistent_matmul -m gpu -v -s
import json
import os
import statistics
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

library = None  # the generated module of persistent_matmul.toml, set by persistent_matmul_module
persistent_matmul_module = module_fixture(HERE / "persistent_matmul.toml", bind="library")


SHAPES = [(128, 128, 128), (1000, 1024, 512), (4096, 4096, 4096), (8192, 8192, 8192)]
BF16_TOLERANCE = 1e-2           # ||C - torch.matmul|| / ||torch.matmul||, Frobenius
BENCH_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096)]


def shape_id(shape):
    return "x".join(map(str, shape))


def config_id(config):
    return f"{config['BLOCK_M']}x{config['BLOCK_N']}x{config['BLOCK_K']}-s{config['num_stages']}-w{config['num_warps']}"


def operands(M, N, K):
    generator = torch.Generator(device="cuda").manual_seed(M * 31 + N * 7 + K)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16, generator=generator)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16, generator=generator)
    return a, b


def poisoned(M, N):
    """An output full of NaN, so that a tile the kernel does not write shows up."""
    return torch.full((M, N), float("nan"), device="cuda", dtype=torch.bfloat16)


def relative_error(c, expected):
    return ((c.double() - expected.double()).norm() / expected.double().norm()).item()


def manifest():
    """OUT/manifest.json beside the module (built into OUT/build), or $TAOT_PERSISTENT_MATMUL_MANIFEST."""
    path = Path(os.environ.get("TAOT_PERSISTENT_MATMUL_MANIFEST")
                or Path(library.__file__).resolve().parent.parent / "manifest.json")
    return json.loads(path.read_text()) if path.exists() else None


def test_module_compiles_the_configs():
    compiled = [variant["config"] for variant in library.persistent_matmul_variants()]
    assert len(compiled) == len(aot.CONFIGS)
    for config in aot.CONFIGS:
        assert any(all(variant.get(key) == value for key, value in config.items()) for variant in compiled), config
    data = manifest()
    if data is not None:         # device-side descriptors: global scratch in every image
        for variant in data["kernels"][0]["variants"]:
            for image in variant["images"]:
                assert image["global_scratch_size"] > 0, variant["id"]


@pytest.mark.parametrize("config", aot.CONFIGS, ids=config_id)
@pytest.mark.parametrize("shape", SHAPES, ids=shape_id)
def test_against_torch_and_jit(shape, config):
    M, N, K = shape
    a, b = operands(M, N, K)
    c = aot.persistent_matmul(a, b, out=poisoned(M, N), config=config)
    c_jit = jit.persistent_matmul_jit(a, b, out=poisoned(M, N), config=config)
    expected = torch.matmul(a, b)
    torch.cuda.synchronize()
    assert not c.isnan().any(), "tiles left unwritten"
    error = relative_error(c, expected)
    assert error < BF16_TOLERANCE, f"relative error {error:.2e} against torch.matmul"
    if M * N * K <= 4096**3:     # and against the fp64 product of the same inputs
        exact_error = relative_error(c, a.double() @ b.double())
        assert exact_error < BF16_TOLERANCE, f"relative error {exact_error:.2e} against the fp64 product"
    equal = torch.equal(c, c_jit)
    print(f"[aot vs jit] persistent_matmul {shape_id(shape)} {config_id(config)}: "
          f"{'bitwise equal' if equal else 'DIFFERENT'}; error vs torch.matmul {error:.1e}")
    assert equal, "taot and Triton JIT results differ"


def test_default_config_and_empty_shapes():
    a, b = operands(300, 528, 784)
    c = aot.persistent_matmul(a, b)
    assert relative_error(c, torch.matmul(a, b)) < BF16_TOLERANCE
    assert aot.persistent_matmul(a[:0], b).shape == (0, 528)
    assert torch.equal(aot.persistent_matmul(a[:, :0], b[:0]), torch.zeros(300, 528, device="cuda", dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="multiples of 16"):
        aot.persistent_matmul(a[:, :8], b[:8])


def time_ms(fn, warmup=5, reps=20):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


@pytest.mark.parametrize("shape", BENCH_SHAPES, ids=shape_id)
def test_benchmark_against_torch(shape):
    """Prints TFLOP/s of every compiled config (taot module) and of torch.matmul (cuBLAS); run -s."""
    M, N, K = shape
    a, b = operands(M, N, K)
    c = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
    flops = 2.0 * M * N * K

    def tflops(ms):
        return flops / ms / 1e9
    torch_ms = time_ms(lambda: torch.matmul(a, b, out=c))
    results = {config_id(config): time_ms(lambda config=config: aot.persistent_matmul(a, b, out=c, config=config))
               for config in aot.CONFIGS}
    best = min(results, key=results.get)
    for name, ms in results.items():
        print(f"[persistent matmul] {shape_id(shape)} taot {name}: {ms:.3f} ms, {tflops(ms):.0f} TFLOP/s")
    print(f"[persistent matmul] {shape_id(shape)} torch.matmul: {torch_ms:.3f} ms, {tflops(torch_ms):.0f} TFLOP/s; "
          f"best taot ({best}) {tflops(results[best]):.0f} TFLOP/s = {torch_ms / results[best]:.2f}x torch")
