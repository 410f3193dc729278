"""Row-wise softmax bandwidth, side by side: the taot module (examples/softmax/aot.py), torch.softmax,
and the same kernel and config through Triton JIT (jit.py), for 4096 rows x {1024, 4096, 8192,
16384} columns in fp16 and bf16 (and fp32 at 4096 x 4096). Both choose the config the kernel's
@triton.heuristics give (the runtime in C++, Triton in Python); the config column shows the
runtime's choice. GPU time per call: triton.testing.do_bench median (CUDA events around each call,
L2 flushed before each, so the CPU launch cost is hidden behind the flush); GB/s counts reading x
and writing y once. Needs the generated module softmax on PYTHONPATH
(scripts/gpu.sh bench builds it); without torch or a GPU it says so and exits 0."""
import sys
from pathlib import Path

from gpu_or_skip import torch_on_gpu  # bench/, the script's folder, is on sys.path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path[:0] = [str(EXAMPLES / "softmax"), str(EXAMPLES)]

ROWS = 4096
SHAPES = [(ROWS, cols, dtype) for dtype in ("fp16", "bf16") for cols in (1024, 4096, 8192, 16384)] + \
         [(ROWS, 4096, "fp32")]


def main():
    torch = torch_on_gpu("softmax")
    import triton

    import aot
    import jit
    import softmax as library  # the generated module
    from example_support import chosen

    dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    torch.manual_seed(0)
    print(f"softmax over the last dimension, {torch.cuda.get_device_name()}")
    print("GB/s = (read x + write y) / median GPU time (do_bench); taot and JIT run the same kernel and config;"
          " taot/JIT and taot/torch are ratios of times (below 1: taot faster)")
    print(f"{'dtype':5} {'rows':>5} {'cols':>6} {'config':22} {'taot GB/s':>10} {'torch GB/s':>11} {'JIT GB/s':>9} "
          f"{'taot us':>8} {'torch us':>9} {'JIT us':>7} {'taot/JIT':>9} {'taot/torch':>11} {'bitwise':>8}")
    for rows, cols, name in SHAPES:
        x = torch.randn(rows, cols, device="cuda").mul_(4).to(dtypes[name])
        config, _ = chosen(library.softmax, x, x, rows, cols, x.stride(0), x.stride(0))
        y_taot = aot.softmax(x, module=library)
        y_jit = jit.softmax_jit(x)
        same = torch.equal(y_taot, y_jit)
        close = torch.allclose(y_taot.float(), torch.softmax(x.float(), -1), rtol=2e-2, atol=1e-5)
        times = {
            "taot": triton.testing.do_bench(lambda: aot.softmax(x, module=library), warmup=50, rep=300,
                                            return_mode="median"),
            "torch": triton.testing.do_bench(lambda: torch.softmax(x, -1), warmup=50, rep=300, return_mode="median"),
            "jit": triton.testing.do_bench(lambda: jit.softmax_jit(x), warmup=50, rep=300, return_mode="median"),
        }
        bytes_moved = 2 * x.numel() * x.element_size()
        rate = {key: bytes_moved / (ms * 1e-3) / 1e9 for key, ms in times.items()}
        label = "bs{BLOCK_SIZE} r{BLOCK_ROWS} w{num_warps}".format(**config)
        print(f"{name:5} {rows:5} {cols:6} {label:22} {rate['taot']:10.0f} {rate['torch']:11.0f} {rate['jit']:9.0f} "
              f"{times['taot'] * 1e3:8.1f} {times['torch'] * 1e3:9.1f} {times['jit'] * 1e3:7.1f} "
              f"{times['taot'] / times['jit']:9.3f} {times['taot'] / times['torch']:11.3f} {str(same):>8}"
              + ("" if close else "   MISMATCH vs torch"))
        if not close:
            raise SystemExit(f"softmax {name} {rows}x{cols}: the taot result differs from torch.softmax")


if __name__ == "__main__":
    main()
