"""CPU cost per call from Python, side by side in one run, against torch.add on the same small
tensors: (a) vector_add's add_kernel, 4 arguments: automatic, with config keywords, bound, and
Triton JIT of the same kernel and config; (b) fused MoE's fused_moe_kernel (examples/fused_moe,
the GEMM of vLLM's fused MoE: 25 arguments and 12 config keywords, bf16, prebuilt arguments):
config keywords, bound, automatic, and Triton JIT; (c) torch.add(x, y, out=out), fp32 n=1024.
Batches of 256 calls after a sync (fewer than the launch queue holds, so the CPU is measured),
rounds interleaved, medians. Then each taot call again on a grid of 0 programs: the module's own
cost, without cuLaunchKernel.

Needs the generated modules on PYTHONPATH (scripts/gpu.sh bench builds both; so does python3 tests/gpu_modules.py SPEC...):
  PYTHONPATH=<vector_add module dir>:<fused_moe module dir> python3 bench/python_launch_overhead.py
Without the fused_moe module, part (b) is skipped with a line saying so."""
import importlib
import importlib.util
import statistics
import sys
import time
from pathlib import Path

from gpu_or_skip import torch_on_gpu

torch = torch_on_gpu("Python launch overhead")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
BATCH, ROUNDS, WARMUP = 256, 200, 500
N = 1024
# The fused MoE launch: a few tokens routed to top_k of E experts, in bf16.
TOKENS, EXPERTS, TOP_K, MOE_N, MOE_K = 4, 8, 2, 256, 256
MOE_CONFIG = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, BLOCK_SIZE_K=128, GROUP_SIZE_M=1, num_warps=4, num_stages=3)
# The targets (issue M): taot's own cost per call, on a grid of 0 programs, at most this many ns.
EMPTY_GRID_TARGETS_NS = {"vector": 350, "bound": 1000}


def load_source(path, name):
    """A kernel source file loaded under its own name (not the generated module's)."""
    spec = importlib.util.spec_from_file_location(name, path)
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    return source


class Method:
    """One way of making the call: fn(*args, **kwargs), timed as the caller writes it."""

    def __init__(self, label, fn, args, kwargs=None, target=None):
        self.label, self.fn, self.args, self.kwargs, self.target = label, fn, tuple(args), dict(kwargs or {}), target
        self.samples = []

    def batch_ns(self, calls):
        fn, args, kwargs = self.fn, self.args, self.kwargs
        start = time.perf_counter_ns()
        for _ in range(calls):
            fn(*args, **kwargs)
        return (time.perf_counter_ns() - start) / calls


def bound_method(label, kernel, config, args, target):
    """The row of a bound launcher; none for a module built before bind() (to compare with one)."""
    if not hasattr(kernel, "bind"):
        print(f"({label}: skipped, this module has no bind())")
        return []
    return [Method(label, kernel.bind(**config), args, target=target)]


def vector_add_methods():
    import vector_add
    jit = load_source(REPO / "examples" / "vector_add" / "vector_add.py", "vector_add_source").add_kernel
    x, y, out = (torch.randn(N, device="cuda") for _ in range(3))
    config = dict(BLOCK_SIZE=1024, num_warps=4)
    kernel = vector_add.add_kernel
    methods = [
        Method("vector_add, 4 args, automatic", kernel, (x, y, out, N), target="vector"),
        Method("vector_add, 4 args + 2 config keywords", kernel, (x, y, out, N), config),
        *bound_method("vector_add, bound: add_kernel.bind(**config)", kernel, config, (x, y, out, N), None),
        Method("vector_add, Triton JIT add_kernel[grid]", jit[(triton.cdiv(N, 1024),)], (x, y, out, N),
               dict(config, num_stages=3)),
    ]
    empty = [Method(m.label, m.fn, (*m.args[:3], 0), m.kwargs) for m in methods if "JIT" not in m.label]

    def check():
        for method in methods:
            out.zero_()
            method.fn(*method.args, **method.kwargs)
            torch.testing.assert_close(out, x + y, rtol=0, atol=0, msg=f"{method.label}: wrong result")
    return methods, empty, check


def fused_moe_methods():
    try:
        module = importlib.import_module("fused_moe")
    except ImportError as error:
        print(f"(b) skipped: the generated module fused_moe is not on PYTHONPATH ({error}); build it with "
              "`taot build examples/fused_moe/fused_moe.toml -o OUT --python --build-library` and add OUT/build")
        return [], [], lambda: None
    sys.path.insert(0, str(REPO / "examples" / "fused_moe"))
    from jit import moe_align_block_size  # noqa: E402  (examples/fused_moe)
    from moe_kernels import fused_moe_kernel as jit_kernel  # noqa: E402

    torch.manual_seed(0)
    a = torch.randn(TOKENS, MOE_K, device="cuda").to(torch.bfloat16)
    b = (torch.randn(EXPERTS, MOE_N, MOE_K, device="cuda") / MOE_K ** 0.5).to(torch.bfloat16)
    c = torch.empty(TOKENS * TOP_K, MOE_N, device="cuda", dtype=torch.bfloat16)
    scales = torch.empty(4, device="cuda", dtype=torch.float32)  # bf16 variants take the scale pointers too
    probs = torch.softmax(torch.randn(TOKENS, EXPERTS, device="cuda"), dim=-1)
    topk_weights, topk_ids = torch.topk(probs, TOP_K, dim=-1)
    topk_weights, topk_ids = topk_weights.float().contiguous(), topk_ids.to(torch.int32).contiguous()
    sorted_ids, expert_ids, post_padded = moe_align_block_size(topk_ids, EXPERTS, MOE_CONFIG["BLOCK_SIZE_M"])
    em, valid = sorted_ids.numel(), topk_weights.numel()

    # The AOT kernel also takes the token count M (its tuning key), and topk_weights None when the
    # routing weights are not multiplied in (MUL_ROUTED_WEIGHT=0 is compiled with it None).
    def arguments(em_value, launch_only=True):
        return (a, b, c, scales, scales, None if launch_only else topk_weights, sorted_ids, expert_ids, post_padded, MOE_N, MOE_K, em_value,
                valid, a.stride(0), a.stride(1), b.stride(0), b.stride(2), b.stride(1), c.stride(0), c.stride(1),
                0, 0, 0, 0, 0) + ((TOKENS,) if launch_only else ())
    constexprs = dict(group_n=0, group_k=0, MUL_ROUTED_WEIGHT=0, top_k=TOP_K, use_fp8_w8a8=0, **MOE_CONFIG)
    keywords = dict(constexprs, compute_type="bf16")
    kernel = module.fused_moe_kernel
    grid = (triton.cdiv(em, MOE_CONFIG["BLOCK_SIZE_M"]) * triton.cdiv(MOE_N, MOE_CONFIG["BLOCK_SIZE_N"]),)
    count = f"{len(arguments(em))} args"
    methods = [
        Method(f"fused_moe_kernel, {count} + {len(keywords)} config keywords", kernel, arguments(em), keywords),
        *bound_method("fused_moe_kernel, bound: .bind(**config)", kernel, keywords, arguments(em), "bound"),
        Method(f"fused_moe_kernel, {count}, automatic", kernel, arguments(em)),
        Method("fused_moe_kernel, Triton JIT [grid]", jit_kernel[grid], arguments(em, launch_only=False),
               dict(constexprs, compute_type=tl.bfloat16)),
    ]
    empty = [Method(m.label, m.fn, arguments(0), m.kwargs) for m in methods if "JIT" not in m.label]

    def check():  # the keyword call and the bound launcher write what JIT writes
        results = []
        for method in [m for m in methods if "automatic" not in m.label]:
            c.fill_(float("nan"))
            method.fn(*method.args, **method.kwargs)
            results.append((method.label, c.clone()))
        for label, result in results[:-1]:
            torch.testing.assert_close(result, results[-1][1], rtol=0, atol=0, msg=f"{label}: differs from JIT")
    return methods, empty, check


def measure(methods):
    for method in methods:
        for _ in range(WARMUP):
            method.fn(*method.args, **method.kwargs)
    torch.cuda.synchronize()
    for _ in range(ROUNDS):
        for method in methods:
            torch.cuda.synchronize()
            method.samples.append(method.batch_ns(BATCH))
    torch.cuda.synchronize()
    return {method.label: statistics.median(method.samples) for method in methods}


def main():
    x, y, out = (torch.randn(N, device="cuda") for _ in range(3))
    torch_add = Method(f"torch.add(x, y, out=out), fp32 n={N}", torch.add, (x, y), dict(out=out))
    vector, vector_empty, vector_check = vector_add_methods()
    moe, moe_empty, moe_check = fused_moe_methods()
    vector_check()
    moe_check()
    methods = [torch_add, *vector, *moe]
    medians = measure(methods)
    reference = medians[torch_add.label]
    print(f"CPU cost per call from Python, {torch.cuda.get_device_name()}; torch {torch.__version__}, "
          f"triton {triton.__version__}, Python {sys.version.split()[0]}")
    print(f"batches of {BATCH} calls after a sync, {ROUNDS} rounds interleaved, median ns per call")
    print(f"{'call':58} {'ns/call':>8} {'vs torch.add':>13}")
    for method in methods:
        print(f"{method.label:58} {medians[method.label]:8.0f} {medians[method.label] / reference:12.2f}x")

    empty = vector_empty + moe_empty
    empty_medians = measure(empty)
    targets = {method.label: EMPTY_GRID_TARGETS_NS[method.target] for method in methods if method.target in
               EMPTY_GRID_TARGETS_NS}
    print("\nthe same taot calls on a grid of 0 programs (n = 0, EM = 0): the module's and the runtime's own cost, "
          "without cuLaunchKernel")
    for method in empty:
        limit = targets.get(method.label)
        verdict = "" if limit is None else f"  <= {limit} ns {'met' if empty_medians[method.label] <= limit else 'MISSED'}"
        print(f"{method.label:58} {empty_medians[method.label]:8.0f}{verdict}")


if __name__ == "__main__":
    main()
