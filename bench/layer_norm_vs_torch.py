"""Layer norm (forward) bandwidth, side by side: the taot module (examples/layer_norm/aot.py),
torch.nn.functional.layer_norm, and the same kernel and config through Triton JIT (jit.py), for 4096
rows x {1024, 4096, 8192, 16384} columns in fp16 and bf16 (and fp32 at 4096 x 4096), with weight and
bias. Both choose the config the kernel's @triton.heuristics give (the runtime in C++, Triton in
Python); the config column shows the runtime's choice. GPU time per call: triton.testing.do_bench
median (CUDA events around each call, L2 flushed before each, so the CPU launch cost is hidden
behind the flush); GB/s counts reading x, weight and bias and writing y once (the 8 bytes per row of
mean and rstd are left out: torch writes them too). Needs the generated module layer_norm on
PYTHONPATH (scripts/gpu.sh bench builds it); without torch or a GPU it says so and exits 0."""
import sys
from pathlib import Path

from gpu_or_skip import torch_on_gpu  # bench/, the script's folder, is on sys.path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path[:0] = [str(EXAMPLES / "layer_norm"), str(EXAMPLES)]

ROWS = 4096
EPS = 1e-5
SHAPES = [(ROWS, cols, dtype) for dtype in ("fp16", "bf16") for cols in (1024, 4096, 8192, 16384)] + \
         [(ROWS, 4096, "fp32")]


def main():
    torch = torch_on_gpu("layer norm")
    import triton

    import aot
    import jit
    import layer_norm as library  # the generated module
    from example_support import chosen

    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    torch.manual_seed(0)
    print(f"layer norm forward over the last dimension (weight, bias, eps={EPS}), {torch.cuda.get_device_name()}")
    print("GB/s = (read x, w, b + write y) / median GPU time (do_bench); taot and JIT run the same kernel and config;"
          " taot/JIT and taot/torch are ratios of times (below 1: taot faster)")
    print(f"{'dtype':5} {'rows':>5} {'cols':>6} {'config':22} {'taot GB/s':>10} {'torch GB/s':>11} {'JIT GB/s':>9} "
          f"{'taot us':>8} {'torch us':>9} {'JIT us':>7} {'taot/JIT':>9} {'taot/torch':>11} {'bitwise':>8}")
    for rows, cols, name in SHAPES:
        dtype = dtypes[name]
        x = (torch.randn(rows, cols, device="cuda") * 2 + 1).to(dtype)
        w = (torch.randn(cols, device="cuda") + 1).to(dtype)
        b = torch.randn(cols, device="cuda").to(dtype)
        stats = torch.empty(rows, device="cuda")
        config, _ = chosen(library.layer_norm_fwd, x, x, w, b, stats, stats, rows, cols, x.stride(0), x.stride(0), EPS)
        y_taot, mean_taot, rstd_taot = aot.layer_norm(x, w, b, EPS, module=library)
        y_jit, mean_jit, rstd_jit = jit.layer_norm_jit(x, w, b, EPS)
        same = torch.equal(y_taot, y_jit) and torch.equal(mean_taot, mean_jit) and torch.equal(rstd_taot, rstd_jit)
        expected = torch.nn.functional.layer_norm(x.float(), (cols,), w.float(), b.float(), EPS)
        close = torch.allclose(y_taot.float(), expected, rtol=2e-2, atol=5e-2)
        times = {
            "taot": triton.testing.do_bench(lambda: aot.layer_norm(x, w, b, EPS, module=library), warmup=50, rep=300,
                                            return_mode="median"),
            "torch": triton.testing.do_bench(lambda: torch.nn.functional.layer_norm(x, (cols,), w, b, EPS), warmup=50,
                                             rep=300, return_mode="median"),
            "jit": triton.testing.do_bench(lambda: jit.layer_norm_jit(x, w, b, EPS), warmup=50, rep=300,
                                           return_mode="median"),
        }
        bytes_moved = (2 * x.numel() + 2 * cols) * x.element_size()
        rate = {key: bytes_moved / (ms * 1e-3) / 1e9 for key, ms in times.items()}
        label = "bs{BLOCK_SIZE} r{BLOCK_ROWS} w{num_warps}".format(**config)
        print(f"{name:5} {rows:5} {cols:6} {label:22} {rate['taot']:10.0f} {rate['torch']:11.0f} {rate['jit']:9.0f} "
              f"{times['taot'] * 1e3:8.1f} {times['torch'] * 1e3:9.1f} {times['jit'] * 1e3:7.1f} "
              f"{times['taot'] / times['jit']:9.3f} {times['taot'] / times['torch']:11.3f} {str(same):>8}"
              + ("" if close else "   MISMATCH vs torch"))
        if not close:
            raise SystemExit(f"layer norm {name} {rows}x{cols}: the taot result differs from torch's")


if __name__ == "__main__":
    main()
