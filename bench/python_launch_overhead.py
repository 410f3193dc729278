"""CPU cost per call from Python, side by side: the taot module vs the same kernel and config
through Triton JIT vs torch.add, vector_add fp32 at n = 1024. Batches of 256 calls after a sync
(below the queue depth, so the CPU is measured), rounds interleaved, medians."""
import importlib.util
import statistics
import time
from pathlib import Path

import torch
import triton

import vector_add as taot_module  # the generated module (on PYTHONPATH)

BATCH, ROUNDS, N = 256, 200, 1024


def load_jit_kernel():
    """The @triton.jit add_kernel of the example, loaded under another name than the module."""
    path = Path(__file__).resolve().parents[1] / "examples" / "vector_add" / "vector_add.py"
    spec = importlib.util.spec_from_file_location("vector_add_triton_source", path)
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    return source.add_kernel


def main():
    if not hasattr(taot_module, "add_kernel_variants"):
        raise SystemExit("the taot module vector_add must be on PYTHONPATH")
    jit_add_kernel = load_jit_kernel()
    x, y, out = (torch.randn(N, device="cuda") for _ in range(3))
    grid = (triton.cdiv(N, 1024),)
    methods = {
        "taot module": lambda: taot_module.add_kernel(x, y, out, N),
        "Triton JIT (same kernel, config)": lambda: jit_add_kernel[grid](x, y, out, N, BLOCK_SIZE=1024, num_warps=4),
        "torch.add(out=)": lambda: torch.add(x, y, out=out),
    }
    for launch in methods.values():
        for _ in range(500):
            launch()
    torch.cuda.synchronize()
    samples = {name: [] for name in methods}
    for _ in range(ROUNDS):
        for name, launch in methods.items():
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(BATCH):
                launch()
            samples[name].append((time.perf_counter() - start) / BATCH * 1e6)
    torch.cuda.synchronize()
    print(f"CPU cost per call from Python, vector_add fp32 n={N}, {torch.cuda.get_device_name()}")
    print(f"batches of {BATCH} calls after a sync, {ROUNDS} rounds interleaved")
    print(f"{'method':36} {'median us':>10} {'vs torch.add':>13} {'vs JIT':>8}")
    medians = {name: statistics.median(values) for name, values in samples.items()}
    for name, median in medians.items():
        print(f"{name:36} {median:10.2f} {median / medians['torch.add(out=)']:12.2f}x "
              f"{median / medians['Triton JIT (same kernel, config)']:7.2f}x")

    # Where the module's CPU time goes: the Python-level pieces of its argument handling, and the
    # module with an empty grid (n = 0: argument handling and dispatch, no launch).
    calls = 100000

    def per_call_us(body):
        start = time.perf_counter()
        for _ in range(calls):
            body()
        return (time.perf_counter() - start) / calls * 1e6

    raw_stream, get_device = torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice
    pieces = {
        "x.data_ptr()": lambda: x.data_ptr(),
        "x.is_cuda": lambda: x.is_cuda,
        "x.dtype": lambda: x.dtype,
        "torch._C._cuda_getDevice()": lambda: get_device(),
        "torch._C._cuda_getCurrentRawStream(0)": lambda: raw_stream(0),
        "taot module, n=0 (no launch)": lambda: taot_module.add_kernel(x, y, out, 0),
        "taot module, n=0, stream=0 given": lambda: taot_module.add_kernel(x, y, out, 0, stream=0),
    }
    print(f"\nPython-side pieces, CPU us per call ({calls} calls each)")
    for name, body in pieces.items():
        print(f"{name:44} {per_call_us(body):8.3f}")


if __name__ == "__main__":
    main()
