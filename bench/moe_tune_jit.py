"""The JIT tuner baseline of the `taot tune` figure: the search vLLM's benchmark_moe.py does, over the
same candidates and batch sizes `taot tune` gets. The candidates are the configs a built taot library
compiled for the kernel (its manifest.json; bench/specs/fused_moe_tune.toml by default), the batch
sizes the bench file's tune shapes (examples/fused_moe/bench_fused_moe.py: vLLM's 18), the arguments
the bench file's make_args. Per batch size, per config, as benchmark_config does: the kernel through
Triton's JIT (kernel[grid](...), the spec's grid, the variant's constexprs and options), the first
call compiling it (TRITON_CACHE_DIR is a fresh folder, as in a fresh tuning run; each config compiles
once, at the first batch size); 10 calls captured in a CUDA graph, 5 replays to warm up, then 100
replays each timed with CUDA events (synchronising before each), the mean per call; a config whose
launch Triton refuses (OutOfResources: more shared memory than the device has) is skipped, as vLLM
skips it. The best config per batch size is kept.

Prints a line per batch size as it goes, then the wall time, the time spent in first calls
(compiling) and timing, and writes --json:
  {"wall_s", "compile_s", "timing_s", "setup_s", "device", "candidates", "configs": {label: config},
   "batch_sizes": {M: {"best": config, "best_label", "best_us", "times_us": {label: us or null}}},
   "not_run": [M, ...], ...}
--configs N keeps the first N candidates (manifest order), --spread N keeps N spread over the whole list
(a sample of the grid: the cost per evaluation of the whole search), and --batch-sizes a subset, so that a run
fits one device call; --budget-s stops after the batch size that would overrun it (the rest are listed
in not_run: run them in a second call and give bench/moe_tune_compare.py both files).

  PYTHONPATH=python python3 bench/moe_tune_jit.py --library .carry/fused_moe_tune --json jit.json
"""
import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))

from taot.measure.benchfile import load_bench_file  # noqa: E402
from taot.spec.expressions import run_program  # noqa: E402

DEFAULT_LIBRARY = ROOT / ".carry" / "fused_moe_tune"
DEFAULT_BENCH = ROOT / "examples" / "fused_moe" / "bench_fused_moe.py"
GRAPH_CALLS, WARMUP_REPLAYS, TIMED_REPLAYS = 10, 5, 100   # benchmark_moe.py's benchmark_config
# Short names of vLLM's tile fields in labels ("m64 n128 k128 g1 w4 s3"); other fields that vary are
# written name=value.
SHORT = {"BLOCK_SIZE_M": "m", "BLOCK_SIZE_N": "n", "BLOCK_SIZE_K": "k", "GROUP_SIZE_M": "g", "num_warps": "w",
         "num_stages": "s"}


def parse_arguments(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", type=Path, default=DEFAULT_LIBRARY,
                        help="a taot library folder (its manifest.json names the candidates; no module needed); "
                             "default .carry/fused_moe_tune")
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH,
                        help="the bench file (make_args, tune shapes); default examples/fused_moe/bench_fused_moe.py")
    parser.add_argument("--kernel", help="the kernel (default: the bench file's one kernel)")
    parser.add_argument("--configs", type=int, metavar="N", help="time only the first N candidates")
    parser.add_argument("--spread", type=int, metavar="N",
                        help="time N candidates spread evenly over the manifest order (a sample of the whole grid, "
                             "for the JIT's cost per evaluation)")
    parser.add_argument("--batch-sizes", metavar="LIST",
                        help="comma-separated tuning-key values (M) to run, among the bench file's tune shapes "
                             "(default: all of them)")
    parser.add_argument("--budget-s", type=float, metavar="S",
                        help="stop before a batch size that would end past S seconds (estimated from the last one)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the results here")
    parser.add_argument("--device", default="cuda:0")
    arguments = parser.parse_args(argv)
    if arguments.configs is not None and arguments.configs < 1:
        parser.error("--configs must be 1 or more")
    if arguments.batch_sizes is not None:
        try:
            arguments.batch_sizes = [int(value) for value in arguments.batch_sizes.split(",") if value.strip()]
        except ValueError:
            parser.error(f"--batch-sizes: expected comma-separated integers, got {arguments.batch_sizes!r}")
        if not arguments.batch_sizes:
            parser.error("--batch-sizes: no value given")
    return arguments


def label(config, varying):
    """'m64 n128 k128 g1 w4 s3': vLLM's tile fields, then any other field that varies."""
    parts = [f"{short}{config[name]}" for name, short in SHORT.items() if name in config]
    parts += [f"{name}={config[name]}" for name in varying if name not in SHORT]
    return " ".join(parts)


def read_candidates(library, kernel_name):
    """(kernel manifest entry, [(label, config, grid programs)]) in manifest order, one per distinct
    config."""
    manifest = json.loads((library / "manifest.json").read_text())
    kernels = {kernel["name"]: kernel for kernel in manifest["kernels"]}
    if kernel_name not in kernels:
        raise SystemExit(f"{library}/manifest.json: no kernel {kernel_name}; its kernels: {', '.join(kernels)}")
    kernel = kernels[kernel_name]
    varying = [field["name"] for field in kernel["config"] if len(field["values"]) > 1]
    candidates, seen = [], set()
    for variant in kernel["variants"]:
        text = json.dumps(variant["config"], sort_keys=True)
        if text not in seen:
            seen.add(text)
            candidates.append((label(variant["config"], varying), variant["config"], variant["grid"]))
    return manifest, kernel, candidates


def import_kernel(library, kernel):
    """The @triton.jit function the library compiled (its source, by the manifest), imported as its
    file's module name with its folder on sys.path (the bench file may have imported it already)."""
    source = (library / kernel["source"]).resolve()
    name = source.stem
    module = sys.modules.get(name)
    if module is None or Path(getattr(module, "__file__", "")).resolve() != source:
        sys.path.insert(0, str(source.parent))
        spec = importlib.util.spec_from_file_location(name, source)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return getattr(module, kernel["function"])


def jit_keywords(kernel, config):
    """The variant's config as Triton's JIT takes it: dtype fields as triton.language dtypes."""
    from taot.spec.dtypes import triton_dtype
    kinds = {field["name"]: field["kind"] for field in kernel["config"]}
    return {name: triton_dtype(value) if kinds.get(name) == "dtype" else value for name, value in config.items()}


def graph_time_us(torch, run):
    """benchmark_moe.py's benchmark_config after its first call: mean us per call over 100 replays of a
    graph of 10 calls, after 5 warm-up replays."""
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(GRAPH_CALLS):
            run()
    torch.cuda.synchronize()
    for _ in range(WARMUP_REPLAYS):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    latencies = []
    for _ in range(TIMED_REPLAYS):
        torch.cuda.synchronize()
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        latencies.append(start.elapsed_time(end))
    graph.reset()
    return sum(latencies) / (TIMED_REPLAYS * GRAPH_CALLS) * 1000


def main(argv=None):
    arguments = parse_arguments(argv)
    started = time.perf_counter()
    cache_dir = tempfile.mkdtemp(prefix="moe_tune_jit_triton_cache_")
    os.environ["TRITON_CACHE_DIR"] = cache_dir  # before Triton is imported: every config compiles once

    bench = load_bench_file(arguments.bench)
    kernel_bench = bench.kernel(arguments.kernel) if arguments.kernel else bench.kernels[0]
    manifest, kernel, candidates = read_candidates(arguments.library, kernel_bench.name)
    bench.check_library(manifest["library"], [entry["name"] for entry in manifest["kernels"]])
    if arguments.configs is not None:
        candidates = candidates[:arguments.configs]
    if arguments.spread is not None:
        step = max(1, len(candidates) // arguments.spread)
        candidates = candidates[step // 2::step][:arguments.spread]
    parameters = [arg["name"] for arg in kernel["args"] if arg["kind"] != "constexpr"]
    launch_only = {arg["name"] for arg in kernel["args"] if arg.get("launch_only")}
    key_names = kernel.get("tuning_key") or ["M"]
    shapes = {}
    for shape in kernel_bench.tune_shapes:
        shapes.setdefault(shape[key_names[0]] if key_names[0] in shape else shape[kernel_bench.x_axis], shape)
    batch_sizes = arguments.batch_sizes or list(shapes)
    unknown = [m for m in batch_sizes if m not in shapes]
    if unknown:
        raise SystemExit(f"--batch-sizes: {', '.join(map(str, unknown))} not among the bench file's tune shapes "
                         f"({', '.join(map(str, shapes))})")

    import torch
    import triton
    from triton.runtime.errors import OutOfResources

    function = import_kernel(arguments.library, kernel)
    torch.cuda.set_device(arguments.device)
    device_name = torch.cuda.get_device_name(arguments.device)
    num_sms = torch.cuda.get_device_properties(arguments.device).multi_processor_count
    print(f"JIT tuner (benchmark_moe.py's method) for {kernel_bench.name} on {device_name}: {len(candidates)} configs "
          f"of library {manifest['library']} x {len(batch_sizes)} batch sizes; Triton {triton.__version__}, "
          f"cache {cache_dir}", flush=True)

    first_call_s = {}     # label -> seconds of its first call (the compile)
    failed = {}           # label -> why Triton refused it
    results, not_run = {}, []
    setup_s = timing_s = 0.0
    last_batch_s = None
    for position, m in enumerate(batch_sizes):
        elapsed = time.perf_counter() - started
        over_budget = arguments.budget_s is not None and last_batch_s is not None
        if over_budget and elapsed + 1.2 * last_batch_s > arguments.budget_s:
            not_run = batch_sizes[position:]
            print(f"budget: {elapsed:.0f} s used, the next batch size would take about {last_batch_s:.0f} s more; "
                  f"not run: {', '.join(map(str, not_run))}", flush=True)
            break
        batch_started = time.perf_counter()
        shape = shapes[m]
        calls = {}        # the arguments per value of the fields they depend on, for this batch size
        times = {}
        for index, (name, config, grid_programs) in enumerate(candidates):
            if name in failed:
                times[name] = None
                continue
            depends = tuple(config[field] for field in kernel_bench.args_depend_on)
            if depends not in calls:
                made = time.perf_counter()
                call = kernel_bench.call(shape, arguments.device, config)
                named = dict(zip(parameters, call.args), **call.kwargs)
                torch.cuda.synchronize()
                setup_s += time.perf_counter() - made
                calls[depends] = named
            named = calls[depends]
            values = dict(named, num_sms=num_sms)
            grid = tuple(run_program(program, values) for program in grid_programs)
            kernel_args = [named[p] for p in parameters if p not in launch_only]
            keywords = jit_keywords(kernel, config)

            def run():
                function[grid](*kernel_args, **keywords)

            first = time.perf_counter()
            try:
                run()
                torch.cuda.synchronize()
            except OutOfResources as error:
                failed[name] = str(error)
                times[name] = None
                first_call_s.setdefault(name, time.perf_counter() - first)
                print(f"  {name}: skipped ({error})", flush=True)
                continue
            first_call_s.setdefault(name, time.perf_counter() - first)
            timed = time.perf_counter()
            times[name] = graph_time_us(torch, run)
            timing_s += time.perf_counter() - timed
            if position == 0 and (index + 1) % 16 == 0:
                print(f"  M={m}: {index + 1}/{len(candidates)} configs compiled and timed, "
                      f"{time.perf_counter() - started:.0f} s", flush=True)
        del calls
        timed_ok = {name: t for name, t in times.items() if t is not None}
        if not timed_ok:
            raise SystemExit(f"M={m}: no config ran")
        best = min(timed_ok, key=timed_ok.get)
        results[m] = {"best": next(c for n, c, _ in candidates if n == best), "best_label": best,
                      "best_us": timed_ok[best], "times_us": times}
        last_batch_s = time.perf_counter() - batch_started
        print(f"M={m:5}: best {best:26} {timed_ok[best]:9.2f} us  ({len(timed_ok)} timed, {last_batch_s:6.1f} s; "
              f"{time.perf_counter() - started:6.0f} s elapsed)", flush=True)

    wall_s = time.perf_counter() - started
    compile_s = sum(first_call_s.values())
    print(f"wall {wall_s:.1f} s: first calls (compile) {compile_s:.1f} s for {len(first_call_s)} configs, "
          f"timing {timing_s:.1f} s, arguments {setup_s:.1f} s; {len(results)} batch sizes x {len(candidates)} configs"
          + (f"; {len(failed)} refused by Triton" if failed else ""), flush=True)
    if arguments.json:
        report = {
            "tool": "JIT tuner, benchmark_moe.py's method (bench/moe_tune_jit.py)",
            "device": device_name, "triton_version": triton.__version__, "torch_version": torch.__version__,
            "library": manifest["library"], "kernel": kernel_bench.name, "bench_file": str(arguments.bench),
            "method": {"graph_calls": GRAPH_CALLS, "warmup_replays": WARMUP_REPLAYS, "timed_replays": TIMED_REPLAYS},
            "wall_s": wall_s, "compile_s": compile_s, "timing_s": timing_s, "setup_s": setup_s,
            "candidates": len(candidates), "configs": {name: config for name, config, _ in candidates},
            "first_call_s": first_call_s, "refused": failed,
            "batch_sizes": {str(m): result for m, result in results.items()}, "not_run": not_run,
        }
        arguments.json.parent.mkdir(parents=True, exist_ok=True)
        arguments.json.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {arguments.json}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
