"""Matmul throughput, side by side: taot's best compiled config (examples/matmul/aot.py, every tuned
tile of the spec timed, the fastest shown), torch (cuBLAS: torch.matmul for bf16, torch._scaled_mm
with unit scales for fp8), and the same kernel and config through Triton JIT (jit.py), for bf16, fp8
e4m3 (bf16 out, B column-major; every BLOCK_K step added into the fp32 accumulator, against cuBLAS
without fast accumulation) and "fp8 fast" (FAST_ACCUM tiles, against cuBLAS with use_fast_accum),
at 8192^3 and at M in {16, 128, 4096} with N = K in {4096, 8192}. GPU time per call:
triton.testing.do_bench median (CUDA events around each call, L2 flushed before each);
TFLOP/s = 2 M N K / time. Needs the generated modules matmul and matmul_fp8 on
PYTHONPATH (scripts/gpu.sh bench builds them); without torch or a GPU it says so and exits 0."""
import sys
from pathlib import Path

from gpu_or_skip import torch_on_gpu  # bench/, the script's folder, is on sys.path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "matmul"))

SHAPES = [(8192, 8192, 8192)] + [(m, nk, nk) for m in (16, 128, 4096) for nk in (4096, 8192)]


def config_label(config):
    return "{BLOCK_M}x{BLOCK_N}x{BLOCK_K} s{num_stages} w{num_warps}".format(**config) + (
        " fast" if config["FAST_ACCUM"] else "")


def operands(torch, kind, M, N, K, fast_accum):
    """(a, b, the torch / cuBLAS call) for bf16 (b row-major) or fp8 (b column-major, unit scales)."""
    a = torch.randn(M, K, device="cuda")
    if kind == "bf16":
        a, b = a.to(torch.bfloat16), torch.randn(K, N, device="cuda").to(torch.bfloat16)
        return a, b, lambda: torch.matmul(a, b)
    one = torch.ones((), dtype=torch.float32, device="cuda")
    a, b = a.to(torch.float8_e4m3fn), torch.randn(N, K, device="cuda").to(torch.float8_e4m3fn).t()
    return a, b, lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                          use_fast_accum=fast_accum)


def main():
    torch = torch_on_gpu("matmul", (9, 0), "compares fp8 kernels built for sm_90")
    import triton

    import aot
    import configs
    import jit
    import matmul as library  # noqa: F401  (the generated modules; aot.py imports them by name)
    import matmul_fp8 as library_fp8  # noqa: F401
    import reference

    def bench(fn):
        return triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")

    torch.manual_seed(0)
    print(f"matmul C = A @ B, {torch.cuda.get_device_name()}")
    print("TFLOP/s = 2 M N K / median GPU time (do_bench); taot: fastest of the spec's tuned tiles (picked: the "
          "tile configs.pick_config chooses); JIT: the same kernel with taot's fastest tile; taot/JIT and "
          "taot/cuBLAS are ratios of times (below 1: taot faster)")
    print(f"{'dtype':8} {'M':>5} {'N':>5} {'K':>5} {'best taot config':22} {'taot':>7} {'picked':>7} {'cuBLAS':>7} "
          f"{'JIT':>7} {'taot/JIT':>9} {'taot/cuBLAS':>12} {'bitwise':>8} {'rel err':>8}")
    per_tile = {}
    for kind, fast_accum in (("bf16", False), ("fp8", False), ("fp8", True)):
        name = "fp8 fast" if fast_accum else kind
        for M, N, K in SHAPES:
            a, b, run_torch = operands(torch, kind, M, N, K, fast_accum)
            c = torch.empty(M, N, dtype=torch.bfloat16, device="cuda")
            c_jit = torch.empty_like(c)
            tiles = configs.tiles(kind, fast_accum)
            taot_ms = {}
            for config in tiles:
                taot_ms[config_label(config)] = bench(lambda: aot.matmul(a, b, out=c, config=config))
            best = min(tiles, key=lambda config: taot_ms[config_label(config)])
            if (M, N, K) == SHAPES[0]:
                per_tile[name] = {label: 2.0 * M * N * K / (ms * 1e-3) / 1e12 for label, ms in taot_ms.items()}
            picked_ms = bench(lambda: aot.matmul(a, b, out=c, fast_accum=fast_accum))
            jit_ms = bench(lambda: jit.matmul_jit(a, b, out=c_jit, config=best))
            torch_ms = bench(run_torch)
            aot.matmul(a, b, out=c, config=best)
            jit.matmul_jit(a, b, out=c_jit, config=best)
            err = reference.relative_error(c, run_torch())
            same = torch.equal(c, c_jit)
            flops = 2.0 * M * N * K

            def tflops(ms):
                return flops / (ms * 1e-3) / 1e12
            best_ms = taot_ms[config_label(best)]
            print(f"{name:8} {M:5} {N:5} {K:5} {config_label(best):22} {tflops(best_ms):7.1f} {tflops(picked_ms):7.1f} "
                  f"{tflops(torch_ms):7.1f} {tflops(jit_ms):7.1f} {best_ms / jit_ms:9.3f} {best_ms / torch_ms:12.3f} "
                  f"{str(same):>8} {err:8.1e}")
            if err > (5e-2 if fast_accum else 2e-2):
                raise SystemExit(f"matmul {name} {M}x{N}x{K}: the taot result differs from torch's ({err:.2e})")
        print()
    M, N, K = SHAPES[0]
    print(f"taot, every tuned tile at {M}x{N}x{K}, TFLOP/s:")
    for name, rates in per_tile.items():
        print(f"  {name:8} " + ", ".join(f"{label}: {rate:.0f}" for label, rate in rates.items()))


if __name__ == "__main__":
    main()
