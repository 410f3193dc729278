# `taot tune LIBRARY --bench FILE --kernel K`: per value of the kernel's tuning key (the bench file's
# tune shapes), time every compiled config that accepts the arguments, after a correctness gate, on
# every GPU given (one worker process each); write taot's tuned table and vLLM's JSON. Resumable.
import math
import os
import sys
import time
from pathlib import Path

from ..cli import add_no_wait_flag
from ..compile.output_lock import OutputLock
from ..measure import tuner
from ..measure.benchfile import load_bench_file
from ..errors import TaotError
from ..library.built import manifest_kernels
from .bench import add_where_argument, parse_where, shape_filter
from .compile import positive_int


def add_arguments(parser):
    parser.add_argument("library", metavar="LIBRARY",
                        help="the output folder of `taot build SPEC --python --build-library` (manifest.json, module in build/)")
    parser.add_argument("--bench", required=True, metavar="FILE", help="the bench file (docs/bench-file.md): its "
                        "TUNE_SHAPES (default: its sweep), make_args, reference and tolerance")
    parser.add_argument("--kernel", metavar="NAME", help="the kernel to tune (default: the file's one kernel)")
    add_where_argument(parser)
    parser.add_argument("-o", "--output", metavar="DIR",
                        help="where the tables and the journal go (default: LIBRARY/tuning)")
    parser.add_argument("--gpus", default="all", metavar="LIST",
                        help="GPU indices to use, one worker each (default: all; or a count such as 2)")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="one worker per GPU of a Ray cluster (docs/scale.md): its address (HOST:PORT, "
                             "ray://HOST:PORT) or auto; --gpus then counts the cluster's GPUs")
    parser.add_argument("--device", metavar="NAME",
                        help="tune this kind of GPU (as the driver names it); workers on others are named and not "
                             "used (default: the journal's, else the first worker's)")
    parser.add_argument("--resume", action="store_true", help="go on with the journal of an interrupted run")
    parser.add_argument("--restart", action="store_true", help="discard an earlier run's journal and start over")
    parser.add_argument("--candidate-timeout", type=float, default=60.0, metavar="S",
                        help="seconds one candidate may take before its worker is killed and it is recorded as hung "
                             "(default 60)")
    parser.add_argument("--prune-ratio", type=float, default=1.15, metavar="R",
                        help="a candidate whose quick time is more than R x the best so far is not timed in full "
                             "(default 1.15; 0 times every candidate in full)")
    parser.add_argument("--warmup-ms", type=float, default=2.0, metavar="MS", help="full timing's warm-up (default 2)")
    parser.add_argument("--rep-ms", type=float, default=10.0, metavar="MS", help="full timing's reps (default 10)")
    parser.add_argument("--quick-ms", type=float, default=1.0, metavar="MS",
                        help="the quick timing's warm-up and reps, each (default 1)")
    parser.add_argument("--graph", action="store_true", help="time CUDA-graph replays")
    parser.add_argument("--launches-per-rep", type=positive_int, default=1, metavar="N",
                        help="launches per timed rep (default 1)")
    parser.add_argument("--no-flush", action="store_true", help="do not flush the L2 between reps")
    parser.add_argument("--no-check", action="store_true", help="no correctness gate (the file's reference)")
    parser.add_argument("--vllm-json", metavar="PATH",
                        help="vLLM's JSON file (default: OUTPUT/device_name=<device>.json; one-argument keys only)")
    parser.add_argument("--module-dir", metavar="DIR", help="where the library's module is (default LIBRARY/build)")
    parser.add_argument("--backend", help=argparse_suppress())  # tests: a fake measuring backend
    add_no_wait_flag(parser, "the output folder")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def argparse_suppress():
    import argparse
    return argparse.SUPPRESS


def check(parser, arguments):
    for option in ("candidate_timeout", "warmup_ms", "rep_ms", "quick_ms"):
        value = getattr(arguments, option)
        if not (value > 0 and math.isfinite(value)):
            parser.error(f"--{option.replace('_', '-')} {value}: expected a positive number")
    if not math.isfinite(arguments.prune_ratio) or (arguments.prune_ratio != 0 and arguments.prune_ratio < 1):
        parser.error(f"--prune-ratio {arguments.prune_ratio}: expected 1 or more (0: no pruning)")
    if arguments.resume and arguments.restart:
        parser.error("--resume and --restart: give one")
    arguments.filters = parse_where(parser, arguments.where)
    if arguments.cluster:
        from ..compile.cluster import address_problem
        problem = address_problem(arguments.cluster)
        if problem:
            parser.error(f"--cluster {arguments.cluster}: {problem}")
        if arguments.gpus != "all" and not (arguments.gpus.isdigit() and int(arguments.gpus) > 0):
            parser.error(f"--gpus {arguments.gpus}: with --cluster, all or a count of 1 or more (Ray places the "
                         "workers)")


def gpu_list(text, count):
    """--gpus: "all", a count ("2": GPUs 0 and 1) or indices ("0,2"), as indices among the `count`
    GPUs this process sees (None: not checked, for a fake backend)."""
    if text == "all":
        if count == 0:
            raise TaotError("--gpus all: the CUDA driver sees no GPU"
                            + (f" (CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']!r})"
                               if "CUDA_VISIBLE_DEVICES" in os.environ else ""))
        return list(range(count))
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items or not all(item.isdigit() for item in items):
        raise TaotError(f"--gpus {text}: expected all, a count, or GPU indices, comma-separated")
    if len(items) == 1 and "," not in text:
        gpus = list(range(int(items[0])))
        if not gpus:
            raise TaotError(f"--gpus {text}: a count of GPUs must be 1 or more (GPU 0 alone: --gpus 0,)")
    else:
        gpus = [int(item) for item in dict.fromkeys(items)]
    if count is not None and max(gpus) >= count:
        asked = f"GPU {max(gpus)}" if "," in text else f"{len(gpus)} GPU{'s' if len(gpus) > 1 else ''}"
        sees = f"{count} (indices 0 to {count - 1})" if count else "none"
        raise TaotError(f"--gpus {text}: {asked} asked, but the CUDA driver sees {sees}")
    return gpus


def run(arguments):
    say = (lambda line: None) if arguments.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    library_path = Path(arguments.library)
    library_name, kernels = manifest_kernels(library_path)
    bench_file = load_bench_file(arguments.bench)
    bench_file.check_library(library_name, list(kernels))
    kernel_name = arguments.kernel
    if kernel_name is None:
        if len(bench_file.kernels) != 1:
            raise TaotError(f"{bench_file.label} describes several kernels ({', '.join(bench_file.names)}): "
                            f"give --kernel")
        kernel_name = bench_file.kernels[0].name
    kernel_bench = bench_file.kernel(kernel_name)
    info = kernels[kernel_name]
    if not info.tuning_key:
        raise TaotError(f"kernel {kernel_name} has no tuning key: give it one in the spec (tuning_key = [...], or "
                        f"@triton.autotune's key) and rebuild")
    field_keys = [name for name in info.tuning_key if name in info.config_fields]
    if field_keys:
        raise TaotError(f"kernel {kernel_name}'s tuning key names config field(s) {', '.join(field_keys)}: taot tune "
                        f"keys tables on call arguments only; write such tables by hand (docs/tuning.md) or give the "
                        f"spec a tuning_key of call arguments")
    cluster = None
    options = dict(device=arguments.device)
    if arguments.cluster:  # one Ray actor per GPU of the cluster
        from ..measure.cluster_workers import RayWorker, connect
        cluster, count = connect(arguments.cluster, say)
        gpus = list(range(count if arguments.gpus == "all" else min(count, int(arguments.gpus))))
        say(f"--cluster {arguments.cluster}: {count} GPU(s); {len(gpus)} worker(s)")
        options.update(worker_factory=lambda gpu, settings, messages: RayWorker(gpu, settings, messages, cluster.ray),
                       other_devices="skip")
    elif arguments.backend:  # a fake timer: no driver, and "all" is one worker
        gpus = [0] if arguments.gpus == "all" else gpu_list(arguments.gpus, None)
    else:
        gpus = gpu_list(arguments.gpus, tuner.visible_gpu_count())
    output = Path(arguments.output) if arguments.output else library_path / "tuning"
    try:
        with OutputLock(output, wait=not arguments.no_wait, notice=say):  # two tunes into one folder take turns
            return _tune(arguments, say, library_path, library_name, bench_file, kernel_name, kernel_bench, info,
                         gpus, output, options)
    finally:
        if cluster is not None:
            cluster.close()


def _tune(arguments, say, library_path, library_name, bench_file, kernel_name, kernel_bench, info, gpus, output,
          options):
    """The tuning run itself, `output` locked."""
    full = dict(warmup_ms=arguments.warmup_ms, rep_ms=arguments.rep_ms, reps=0, flush_l2=not arguments.no_flush,
                graph=arguments.graph, launches_per_rep=arguments.launches_per_rep)
    quick = dict(full, warmup_ms=arguments.quick_ms, rep_ms=arguments.quick_ms)
    settings = {"library": str(library_path.resolve()), "module_dir": arguments.module_dir, "kernel": kernel_name,
                "bench": str(Path(arguments.bench).resolve()), "key": list(info.tuning_key), "full": full,
                "quick": quick, "prune_ratio": arguments.prune_ratio,
                "check": not arguments.no_check, "backend": arguments.backend and str(Path(arguments.backend).resolve())}
    keep = shape_filter(arguments.filters, bench_file)
    shapes = [shape for shape in kernel_bench.tune_shapes if keep is None or keep(shape)]
    if not shapes:
        raise TaotError(f"no tune shape of {bench_file.label} matches --where")
    settings["shapes"] = [dict(shape) for shape in shapes]
    journal_path = output / f"{kernel_name}.journal.jsonl"
    if arguments.restart and journal_path.exists():
        journal_path.unlink()
    header = {"schema": tuner.JOURNAL_SCHEMA, "schema_version": tuner.JOURNAL_VERSION, "library": library_name,
              "kernel": kernel_name, "key": list(info.tuning_key), "bench": settings["bench"],
              "shapes": [dict(shape) for shape in shapes], "full": full, "quick": quick,
              "prune_ratio": arguments.prune_ratio}
    journal = tuner.Journal(journal_path, header, arguments.resume)
    coordinator = tuner.Coordinator(settings, shapes, journal,
                                    tuner.TuneOptions(gpus, arguments.candidate_timeout, **options), say)
    done_before = len(shapes) - len(coordinator.pending)
    say(f"tuning {library_name}.{kernel_name} over {len(shapes)} shapes (key {', '.join(info.tuning_key)}) on "
        f"GPU{'s' if len(gpus) > 1 else ''} {', '.join(map(str, gpus))}"
        + (f"; {done_before} done in the journal" if done_before else ""))
    started = time.monotonic()
    try:
        if coordinator.pending:
            coordinator.run()
        journal.close()
        say(f"measured {len(shapes) - done_before} keys in {time.monotonic() - started:.1f} s")
        device = coordinator.device or journal.device or ""
        paths, entries, unresolved = tuner.write_tables(output, kernel_name, library_name, device, info.tuning_key,
                                                        journal, settings, arguments.vllm_json)
        print_summary(entries, journal)
        for path in paths:
            say(f"wrote {path}")
        for task, key in unresolved:
            print(f"key {key} ({dict(shapes[task])}): no candidate passed the gate; not in the table", file=sys.stderr)
        expectations = [(task, tuner.best_result(journal.tasks[task])["result"])
                        for task in sorted(journal.tasks) if tuner.best_result(journal.tasks[task])]
        differences = coordinator.verify(paths[0], expectations)
    except KeyboardInterrupt:
        coordinator.close(interrupted=True)
        raise KeyboardInterrupt(f"the journal {journal_path} keeps what was measured; --resume goes on") from None
    finally:
        journal.close()
        coordinator.close()
    for task, wanted, chosen in differences:
        print(f"check: with the table loaded, shape {dict(shapes[task])} chooses {chosen}, not the tuned {wanted} "
              f"(another shape with the same key, or a rule the table cannot express)", file=sys.stderr)
    say(f"check: the automatic choice with the table loaded picks the tuned variant for "
        f"{len(expectations) - len(differences)} of {len(expectations)} shapes; {time.monotonic() - started:.1f} s "
        f"in all")
    return 1 if unresolved else 0


def print_summary(entries, journal):
    print(f"{'key':>16}  {'best us':>10}  {'ok':>4} {'pruned':>6} {'wrong':>5} {'failed':>6}  config")
    for entry in entries:
        measured = entry["measured"]
        failed = sum(measured.get(s, 0) for s in ("error", "crashed", "hung", "filtered"))
        config = ", ".join(f"{name}={value}" for name, value in entry["config"].items())
        print(f"{str(entry['key']):>16}  {measured['median_ms'] * 1e3:10.2f}  {measured.get('ok', 0):4} "
              f"{measured.get('pruned', 0):6} {measured.get('wrong', 0):5} {failed:6}  {config}")
