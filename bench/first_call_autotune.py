"""First-call autotuning against Triton's JIT autotuner, side by side in one run, per shape of the
autotuned kernels of tests/autotune/kernels.py (a GEMM over eight tile configs, fused attention,
split-K with reset_to_zero):

  first call: the JIT's first call of a shape in a fresh process with an empty Triton cache (it
              compiles every config, then times them) beside taot's first call of the key (every
              config is a cubin already: it times them, dropping those far behind early);
  steady:     GPU time of the launch each then makes (triton.testing.do_bench_cudagraph: replays
              of a CUDA graph of the launch, so that the host's launch cost, the JIT's far above
              taot's, is not in it; median of rounds interleaved), taot/JIT.

Targets (issue M): first call <= 0.2x the JIT's, steady state <= 1.02x on every shape.

Needs the module `first_call` on PYTHONPATH:
  PYTHONPATH=$(python3 tests/gpu_modules.py tests/autotune/autotune.toml) python3 bench/first_call_autotune.py
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "autotune"))

from gpu_or_skip import torch_on_gpu  # noqa: E402

torch = torch_on_gpu("first-call autotuning")
import triton  # noqa: E402

import kernels  # noqa: E402

ROUNDS = 5
CASES = [("matmul", (7, 1000, 4096)), ("matmul", (1024, 1024, 1024)), ("matmul", (333, 517, 129)),
         ("matmul", (4096, 4096, 4096)), ("matmul", (16, 8192, 1024)), ("attention", (1, 2, 1024)),
         ("attention", (4, 8, 4096)), ("split_k_matmul", (256, 384, 8192))]


def case_calls(name, shape, library):
    """(taot call, JIT call) of one case, on inputs made once."""
    torch.manual_seed(0)
    if name == "attention":
        z, h, n_ctx = shape
        q, k, v = (torch.randn(z * h, n_ctx, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        o = torch.empty_like(q)
        args = (q, k, v, o, 0.125, n_ctx, q.stride(0), q.stride(1))

        def jit_grid(meta):
            return (triton.cdiv(n_ctx, meta["BLOCK_M"]), z * h)
        return ((lambda: library.attention(*args, z * h)), (lambda: kernels.attention[jit_grid](*args, HEAD_DIM=64)),
                (lambda: library.attention.choose(*args, z * h)))
    M, N, K = shape
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    dtype = torch.float32 if name == "split_k_matmul" else torch.float16
    c = torch.zeros(M, N, device="cuda", dtype=dtype)
    args = (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
    if name == "split_k_matmul":
        def jit_grid(meta):
            return (triton.cdiv(M, meta["BLOCK_M"]), triton.cdiv(N, meta["BLOCK_N"]), meta["SPLIT_K"])
    else:
        def jit_grid(meta):
            return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    kernel = getattr(kernels, name)
    return ((lambda: getattr(library, name)(*args)), (lambda: kernel[jit_grid](*args)),
            (lambda: getattr(library, name).choose(*args)))


def jit_first_call_ms(name, shape):
    """The JIT's first call of the case in a new process with an empty cache (compile and tune)."""
    with tempfile.TemporaryDirectory() as cache:
        result = subprocess.run([sys.executable, __file__, "--jit-first-call", name, json.dumps(shape)],
                                env=dict(os.environ, TRITON_CACHE_DIR=cache), capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"the JIT's first call of {name} {shape} failed:\n{result.stderr[-3000:]}")
    return float(result.stdout.strip().splitlines()[-1])


def graph_ms(call):
    """GPU time per launch of `call`, from replays of a CUDA graph of it (the launches of a tuned key:
    neither tunes inside the capture)."""
    return triton.testing.do_bench_cudagraph(call, rep=100, return_mode="median")


def first_call_ms(call):
    torch.cuda.synchronize()
    start = time.perf_counter()
    call()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--jit-first-call":
        _, jit_call, _ = case_calls(sys.argv[2], tuple(json.loads(sys.argv[3])), None)
        print(first_call_ms(jit_call))
        return
    import first_call as library  # the generated module
    print(f"device: {torch.cuda.get_device_name()}, triton {triton.__version__}, torch {torch.__version__}")
    print(f"{'kernel':<15} {'shape':<16} {'JIT first ms':>12} {'taot first ms':>13} {'ratio':>6} "
          f"{'JIT us':>8} {'taot us':>8} {'taot/JIT':>8}  configs (JIT | taot)")
    worst_first, worst_steady = 0.0, 0.0
    for name, shape in CASES:
        jit_first = jit_first_call_ms(name, shape)
        taot_call, jit_call, taot_choose = case_calls(name, shape, library)
        # Three fresh tunings: the first call's time is the first one's; the choice must not change.
        firsts, choices = [], []
        for _ in range(3):
            getattr(library, name).reset_autotune()
            firsts.append(first_call_ms(taot_call))
            choices.append(taot_choice(library, name, taot_choose))
        taot_first = firsts[0]
        jit_call()  # this process's JIT tunes too before its steady state is timed
        taot_times, jit_times = [], []
        for _ in range(ROUNDS):
            taot_times.append(graph_ms(taot_call))
            jit_times.append(graph_ms(jit_call))
        taot_us, jit_us = statistics.median(taot_times) * 1e3, statistics.median(jit_times) * 1e3
        first_ratio, steady_ratio = taot_first / jit_first, taot_us / jit_us
        worst_first, worst_steady = max(worst_first, first_ratio), max(worst_steady, steady_ratio)
        stable = "" if len(set(choices)) == 1 else f" (3 tunings chose: {' / '.join(choices)})"
        print(f"{name:<15} {'x'.join(map(str, shape)):<16} {jit_first:12.0f} {taot_first:13.0f} {first_ratio:6.3f} "
              f"{jit_us:8.1f} {taot_us:8.1f} {steady_ratio:8.3f}  {jit_choice(name)} | "
              f"{taot_choice(library, name, taot_choose)}{stable}")
    print(f"worst first-call ratio {worst_first:.3f} (target <= 0.2); worst steady-state ratio {worst_steady:.3f} "
          f"(target <= 1.02)")


def jit_choice(name):
    """The config the JIT's autotuner chose last, its tuned fields only."""
    config = getattr(kernels, name).best_config
    return " ".join(f"{value}" for value in config.kwargs.values()) + f" w{config.num_warps} s{config.num_stages}"


def taot_choice(library, name, choose):
    """The config of the variant taot launches for the case, as jit_choice writes it."""
    index, step = choose()
    assert step == "autotuned at first call", step
    config = getattr(library, name).variants()[index]["config"]
    tuned = [key for key in getattr(kernels, name).configs[0].kwargs]
    jit_config = getattr(kernels, name).configs[0]  # options the configs all leave alone are no fields
    warps, stages = config.get("num_warps", jit_config.num_warps), config.get("num_stages", jit_config.num_stages)
    return " ".join(f"{config[key]}" for key in tuned) + f" w{warps} s{stages}"


if __name__ == "__main__":
    main()
