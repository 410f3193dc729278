"""The same kernel call timed three ways, side by side: vector add (n = 2^16 ..
2^26), softmax (4096 rows of 1024 .. 16384 columns) and matmul (M = 16, 512, 4096 at N = K = 4096,
bf16), each call made by the example's bench file (examples/<library>/bench_<library>.py: make_args,
the shapes' dimensions, the reference) and launched through the library's generated module with the
config the runtime chooses, as `taot bench` launches `auto`.

  taot      module.kernel.time(*args, flush_l2=True): the C++ timing loop on the production launch
            path (runtime/include/taot/timing.h), the path `taot bench` uses. Per rep: a memset of
            twice the L2 (outside the events), a start event, one launch made from C++, a stop
            event; warm-up by GPU time, then as many reps as fit in --rep-ms; the median rep. The
            events also hold the GPU's launch latency (the front end fetching the launch, the
            blocks' start), and the host's launch cost when the host is slower than the flush.
  do_bench  triton.testing.do_bench(lambda: module.kernel(*args), return_mode="median"): the same
            shape of loop written in Python: before each rep a 256 MB zeroing (torch) flushes the
            L2, then a start event, the launch from Python (argument parsing and dispatch in the
            module, cuLaunchKernel), a stop event. The zeroing usually hides the host's cost of the
            launch (the host enqueues while the GPU zeroes); a launch whose host cost is longer
            than the zeroing counts it. Like taot's, the events hold the GPU's launch latency.
  ncu       Nsight Compute's gpu__time_duration.sum: the kernel's duration on the GPU alone, from
            its start to its end, no launch latency, no host. This script runs itself again under
            ncu (--ncu-child) and launches each case --ncu-launches times; ncu serializes the
            launches, flushes every cache before each (--cache-control all) and, with
            --clock-control none, leaves the clocks alone: by default ncu locks them to the base
            clock, which would make compute-bound kernels read slower than the two event timers
            see them. The median over a case's launches.

Event timers read the kernel plus a few microseconds of launch latency, so taot/ncu and
do_bench/ncu are above 1 for short kernels and tend to 1 for long ones; the two event timers
should agree with each other (their ratio is the figure's point) and, for long kernels, with ncu.

One table (kernel, shape, the three medians in us, taot/ncu, do_bench/ncu), and with --json PATH
the same rows with their details. Needs the generated modules vector_add, softmax and matmul
(`taot build examples/X/X.toml -o build-gpu/X --python --build-library`), found on PYTHONPATH or
given with --module-dir (the folder of the built module, or the library folder holding
manifest.json and build/); a library whose module is missing is left out with a line saying why.
ncu is found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin (or --ncu PATH); when it is missing
or fails, the script says why and prints the other two columns. Without torch or a GPU it says so
and exits 0.

  PYTHONPATH=build-gpu/vector_add/build:build-gpu/softmax/build:build-gpu/matmul/build \\
      python3 bench/bench_vs_do_bench_ncu.py --json build-gpu/bench_vs_do_bench_ncu.json
"""
import argparse
import csv
import dataclasses
import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "python"))  # taot's front end: bench files and statistics
from taot.measure.benchfile import load_bench_file  # noqa: E402
from taot.measure.stats import median  # noqa: E402

# Per library: the kernel timed, its @triton.jit function's name (ncu's kernel name) and the shapes,
# in the order of the bench file's DIMS.
LIBRARIES = {
    "vector_add": ("add_kernel", "add_kernel", [(2 ** k, "fp32") for k in (16, 20, 24, 26)]),
    "softmax": ("softmax", "softmax_kernel",
                [(4096, 1024, "fp16"), (4096, 4096, "bf16"), (4096, 16384, "bf16"), (4096, 4096, "fp32")]),
    "matmul": ("matmul", "matmul_kernel", [(m, 4096, 4096, "bf16") for m in (16, 512, 4096)]),
}
NCU_METRIC = "gpu__time_duration.sum"
# ncu's time units, in microseconds (--print-units base writes nsecond; auto scales per value).
TIME_UNITS_US = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3,
                 "second": 1e6, "s": 1e6}
NCU_PERMISSION_HELP = ("ERR_NVGPUCTRPERM: this machine restricts the GPU's performance counters to admin users "
                       "(NVreg_RestrictProfilingToAdminUsers=1); ncu needs them even for gpu__time_duration")


class NcuError(Exception):
    """ncu's output could not be read or does not match the launches the child made."""


@dataclasses.dataclass(frozen=True)
class Case:
    """One kernel call: `shape` in the bench file's dimension order."""
    library: str
    kernel: str
    function: str
    shape: dict

    @property
    def label(self):
        return ", ".join(f"{name}={value}" for name, value in self.shape.items())

    @property
    def id(self):
        return f"{self.library}.{self.kernel}({self.label})"


@dataclasses.dataclass(frozen=True)
class NcuRow:
    """One profiled launch in ncu's CSV: its ID, the kernel's name as ncu writes it, the duration."""
    launch: int
    kernel: str
    us: float


# ---- arguments ----

def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Time the same kernel call with taot's timing loop, triton.testing.do_bench and Nsight "
                    "Compute, side by side.")
    parser.add_argument("--module-dir", action="append", default=[], metavar="DIR",
                        help="a folder holding a built generated module (or a library folder with manifest.json "
                             "and build/); repeatable; searched before PYTHONPATH")
    parser.add_argument("--only", action="append", choices=list(LIBRARIES), metavar="LIBRARY",
                        help=f"time only this library ({', '.join(LIBRARIES)}); repeatable")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON here")
    parser.add_argument("--warmup-ms", type=float, default=25.0, help="warm-up of taot and do_bench (default 25)")
    parser.add_argument("--rep-ms", type=float, default=100.0,
                        help="timed reps' GPU time, taot and do_bench (default 100)")
    parser.add_argument("--ncu", metavar="PATH",
                        help="the ncu binary (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    parser.add_argument("--no-ncu", action="store_true", help="leave out the Nsight Compute column")
    parser.add_argument("--ncu-launches", type=int, default=5, metavar="N",
                        help="launches per case under ncu, each after a cache flush (default 5)")
    parser.add_argument("--ncu-timeout", type=float, default=150.0, metavar="SECONDS",
                        help="give up on ncu after this long (default 150)")
    parser.add_argument("--ncu-child", metavar="PLAN", help=argparse.SUPPRESS)  # the run under ncu
    args = parser.parse_args(argv)
    if args.ncu_launches < 1:
        parser.error(f"--ncu-launches must be 1 or more, got {args.ncu_launches}")
    if args.warmup_ms < 0 or args.rep_ms <= 0:
        parser.error("--warmup-ms must be 0 or more and --rep-ms above 0")
    return args


def module_search_path(module_dirs):
    """The folders to import the generated modules from, for --module-dir values: a library folder
    (manifest.json and build/) stands for its build/ folder, where `--build-library` puts the module."""
    folders = []
    for given in module_dirs:
        folder = Path(given).resolve()
        if (folder / "manifest.json").is_file() and (folder / "build").is_dir():
            folders.append(folder / "build")
        folders.append(folder)
    return [str(folder) for folder in folders]


def plan_cases(libraries, bench_files):
    """The cases of `libraries` (in LIBRARIES' order), shapes named by each bench file's DIMS."""
    cases = []
    for library in libraries:
        kernel, function, shapes = LIBRARIES[library]
        dims = bench_files[library].kernel(kernel).dims
        cases += [Case(library, kernel, function, dict(zip(dims, shape))) for shape in shapes]
    return cases


def load_libraries(libraries):
    """({library: module}, {library: why it is left out}) for the generated modules on sys.path."""
    modules, missing = {}, {}
    for library in libraries:
        kernel = LIBRARIES[library][0]
        try:
            module = importlib.import_module(library)
        except ImportError as error:
            missing[library] = (f"no generated module {library} ({error}); build it with `taot build "
                                f"examples/{library}/{library}.toml -o build-gpu/{library} --python --build-library` "
                                f"and add build-gpu/{library}/build to PYTHONPATH or --module-dir")
            continue
        if not callable(getattr(getattr(module, kernel, None), "time", None)):
            missing[library] = (f"{getattr(module, '__file__', library)} is not a generated taot module with a "
                                f"kernel {kernel} that has time()")
            continue
        modules[library] = module
    return modules, missing


def load_bench_files(libraries):
    return {library: load_bench_file(REPO / "examples" / library / f"bench_{library}.py") for library in libraries}


# ---- taot and do_bench ----

def output_positions(module, kernel_bench, kernel_name):
    """Positions of the bench file's OUTPUTS among the kernel's runtime arguments, from the manifest
    beside the module (the module's folder or its parent); None without one."""
    module_folder = Path(getattr(module, "__file__", "") or ".").resolve().parent
    for folder in (module_folder, module_folder.parent):
        path = folder / "manifest.json"
        if path.is_file():
            manifest = json.loads(path.read_text())
            for kernel in manifest.get("kernels", []):
                if kernel["name"] == kernel_name:
                    parameters = [arg["name"] for arg in kernel["args"] if arg["kind"] != "constexpr"]
                    return kernel_bench.output_positions(parameters)
    return None


def check_outputs(torch, kernel, call, kernel_bench, positions):
    """'ok', 'MISMATCH (...)' or 'not checked': one launch against the bench file's reference."""
    if positions is None or kernel_bench.reference is None:
        return "not checked"
    expected = kernel_bench.expected(call)
    call.apply(kernel)
    torch.cuda.synchronize()
    for position, want in zip(positions, expected):
        got = call.args[position].double()
        want = want.double()
        tolerance = kernel_bench.tolerance_for(call.args[position].dtype)
        bad = int(((got - want).abs() > tolerance.atol + tolerance.rtol * want.abs()).sum())
        if bad:
            return f"MISMATCH ({bad} of {want.numel()} elements of argument {position} out of tolerance)"
    return "ok"


def measure(torch, triton, case, module, kernel_bench, options):
    """The taot and do_bench medians (us) of one case, the variant taot's runtime chose, the check."""
    kernel = getattr(module, case.kernel)
    call = kernel_bench.call(case.shape, "cuda")
    check = check_outputs(torch, kernel, call, kernel_bench, output_positions(module, kernel_bench, case.kernel))
    timing = kernel.time(*call.args, **call.kwargs, flush_l2=True, warmup_ms=options.warmup_ms,
                         rep_ms=options.rep_ms)
    args, kwargs = call.args, call.kwargs
    do_bench_ms = triton.testing.do_bench(lambda: kernel(*args, **kwargs), warmup=options.warmup_ms,
                                          rep=options.rep_ms, return_mode="median")
    variant = kernel.variants()[timing["variant"]]
    return {"taot_us": timing["median"] * 1e3, "taot_reps": timing["reps"], "flush_bytes": timing["flush_bytes"],
            "variant": timing["variant"], "config": dict(variant["config"]), "step": timing["step"],
            "do_bench_us": do_bench_ms * 1e3, "check": check}


# ---- Nsight Compute ----

def find_ncu(given=None):
    """The ncu binary: `given`, else ncu on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin; None."""
    if given:
        return given if Path(given).is_file() else None
    found = shutil.which("ncu")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "ncu").is_file():
            return str(Path(home) / "bin" / "ncu")
    return None


def ncu_command(ncu, functions, log_file, plan_file, python=None, script=None):
    """ncu running this script's child mode: only the launches of `functions` (the Triton kernels'
    names) profiled, each after a flush of every cache, clocks left as they are, the duration metric
    alone, CSV into `log_file`."""
    pattern = "regex:^(" + "|".join(re.escape(name) for name in sorted(set(functions))) + ")$"
    return [ncu, "--target-processes", "all", "--metrics", NCU_METRIC, "--cache-control", "all",
            "--clock-control", "none", "--kernel-name-base", "function", "--kernel-name", pattern,
            "--csv", "--print-units", "base", "--log-file", str(log_file),
            python or sys.executable, script or str(Path(__file__).resolve()), "--ncu-child", str(plan_file)]


def parse_ncu_csv(text, metric=NCU_METRIC):
    """The rows of `metric` in the CSV that `ncu --csv` writes (its details page: one row per
    profiled launch and metric; the columns "ID", "Kernel Name", "Metric Name", "Metric Unit",
    "Metric Value" among others), in the file's order, which is launch order: [NcuRow]. Lines that
    are not CSV (ncu's "==PROF==" and "==WARNING==" lines, blank lines) and repeated header lines
    are skipped; values may carry thousands separators ("1,234.5"); times are converted to us.
    No header at all (ncu profiled nothing): []. Raises NcuError for a header without those
    columns, a row that is cut short, or a value or unit that is not a time."""
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("==")]
    header_at = next((index for index, line in enumerate(lines) if line.startswith('"ID"')), None)
    if header_at is None:
        return []
    reader = csv.reader(lines[header_at:])
    header = next(reader)
    columns = {}
    for name in ("ID", "Kernel Name", "Metric Name", "Metric Unit", "Metric Value"):
        if name not in header:
            raise NcuError(f"ncu's CSV has no column {name!r} (columns: {', '.join(header)})")
        columns[name] = header.index(name)
    rows = []
    for row_number, row in enumerate(reader, start=1):
        if row == header:
            continue
        if len(row) < len(header):
            raise NcuError(f"ncu's CSV row {row_number}: {len(row)} values, the header has {len(header)}")
        if row[columns["Metric Name"]] != metric:
            continue
        unit = row[columns["Metric Unit"]].strip()
        if unit not in TIME_UNITS_US:
            raise NcuError(f"ncu's CSV row {row_number}: {metric} in {unit!r}, not a time unit")
        text_value = row[columns["Metric Value"]].replace(",", "").strip()
        try:
            value = float(text_value) * TIME_UNITS_US[unit]
            launch = int(row[columns["ID"]])
        except ValueError:
            raise NcuError(f"ncu's CSV row {row_number}: launch {row[columns['ID']]!r} of "
                           f"{row[columns['Kernel Name']]} has {metric} {row[columns['Metric Value']]!r}, "
                           f"not a number") from None
        rows.append(NcuRow(launch, row[columns["Kernel Name"]], value))
    return rows


def function_name(kernel_name):
    """ncu's kernel name without a C++ parameter list: "add_kernel" for "add_kernel" and for
    "add_kernel(float *, ...)"."""
    return kernel_name.split("(", 1)[0].strip()


def assign_launches(rows, launch_log):
    """{case id: [us per launch]}: ncu's rows, in launch order, matched to the launches the child
    logged ([{"id", "function", "launches"}], in the order it made them). NcuError when the counts
    differ or a row's kernel is not the function its case launched."""
    total = sum(entry["launches"] for entry in launch_log)
    if len(rows) != total:
        raise NcuError(f"ncu reported {len(rows)} launches of the kernels profiled, the child made {total}")
    samples, next_row = {}, 0
    for entry in launch_log:
        mine = rows[next_row:next_row + entry["launches"]]
        next_row += entry["launches"]
        for row in mine:
            if function_name(row.kernel) != entry["function"]:
                raise NcuError(f"ncu's launch {row.launch} is {row.kernel}, but the child's launch there was "
                               f"{entry['function']} for {entry['id']}")
        if mine:
            samples[entry["id"]] = [row.us for row in mine]
    return samples


def ncu_problem(log_text, output_tail):
    """Why an ncu run gave nothing: its ==ERROR== lines (with help for the usual one), else the tail."""
    errors = [line for line in log_text.splitlines() + output_tail.splitlines() if line.startswith("==ERROR==")]
    if any("ERR_NVGPUCTRPERM" in line for line in errors):
        return NCU_PERMISSION_HELP
    return "; ".join(dict.fromkeys(errors)) or output_tail.strip()[-2000:] or "no output"


def run_ncu(ncu, cases, options, module_dirs):
    """({case id: [us]}, status dict) from one ncu run of the child over `cases`."""
    with tempfile.TemporaryDirectory(prefix="taot_ncu_") as folder:
        folder = Path(folder)
        plan_file, log_file, launch_file = folder / "plan.json", folder / "ncu.csv", folder / "launches.json"
        plan = {"module_dirs": module_dirs, "launches": options.ncu_launches, "launch_log": str(launch_file),
                "cases": [dataclasses.asdict(case) for case in cases]}
        plan_file.write_text(json.dumps(plan))
        command = ncu_command(ncu, [case.function for case in cases], log_file, plan_file)
        status = {"command": command}
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   start_new_session=True)
        try:
            output, _ = process.communicate(timeout=options.ncu_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # ncu and the child it started
            output, _ = process.communicate()
            return {}, {**status, "status": "failed", "why": f"ncu did not finish in {options.ncu_timeout:g} s"}
        log_text = log_file.read_text(errors="replace") if log_file.is_file() else ""
        try:
            launch_log = json.loads(launch_file.read_text()) if launch_file.is_file() else []
        except ValueError:  # the child was stopped while writing it
            launch_log = []
        status["child_errors"] = {entry["id"]: entry["error"] for entry in launch_log if entry.get("error")}
        try:
            samples = assign_launches(parse_ncu_csv(log_text), launch_log)
        except NcuError as error:
            why = str(error) if process.returncode == 0 else ncu_problem(log_text, output)
            return {}, {**status, "status": "failed", "why": f"{why} (ncu exit status {process.returncode})"}
        if not samples:
            why = f"ncu profiled no launch: {ncu_problem(log_text, output)} (exit status {process.returncode})"
            return {}, {**status, "status": "failed", "why": why}
        if process.returncode != 0:
            return samples, {**status, "status": "partial",
                             "why": f"ncu exit status {process.returncode}: {ncu_problem(log_text, output)}"}
        return samples, {**status, "status": "ok"}


def child_main(plan_file):
    """Under ncu: each case's arguments made, then its kernel launched `launches` times; the launches
    made are logged, case by case, for the parent to match with ncu's rows."""
    import torch
    plan = json.loads(Path(plan_file).read_text())
    sys.path[:0] = plan["module_dirs"]
    cases = [Case(**case) for case in plan["cases"]]
    libraries = list(dict.fromkeys(case.library for case in cases))
    modules, missing = load_libraries(libraries)
    bench_files = load_bench_files(libraries)
    log = []
    for case in cases:
        entry = {"id": case.id, "function": case.function, "launches": 0}
        log.append(entry)
        if case.library in missing:
            entry["error"] = missing[case.library]
            continue
        try:
            kernel = getattr(modules[case.library], case.kernel)
            call = bench_files[case.library].kernel(case.kernel).call(case.shape, "cuda")
            torch.cuda.synchronize()
            for _ in range(plan["launches"]):
                call.apply(kernel)
                entry["launches"] += 1
            torch.cuda.synchronize()
            del call
        except Exception as error:  # logged: the parent says which case failed under ncu
            entry["error"] = f"{type(error).__name__}: {error}"
        Path(plan["launch_log"]).write_text(json.dumps(log))
    return 0


# ---- the report ----

def ratio(numerator, denominator):
    return numerator / denominator if numerator is not None and denominator else None


def format_table(rows):
    """The table: kernel, shape, taot / do_bench / ncu medians (us), taot/ncu and do_bench/ncu."""
    def number(value, digits):
        return "-" if value is None else f"{value:.{digits}f}"
    lines = [f"{'kernel':11} {'shape':34} {'taot us':>10} {'do_bench us':>12} {'ncu us':>10} {'taot/ncu':>9} "
             f"{'do_bench/ncu':>13}"]
    for row in rows:
        lines.append(f"{row['kernel']:11} {row['label']:34} {number(row['taot_us'], 2):>10} "
                     f"{number(row['do_bench_us'], 2):>12} {number(row['ncu_us'], 2):>10} "
                     f"{number(row['taot_over_ncu'], 3):>9} {number(row['do_bench_over_ncu'], 3):>13}"
                     + ("" if row["check"] in ("ok", "not checked") else f"   {row['check']}"))
    return "\n".join(lines)


def main(argv=None):
    options = parse_args(argv)
    module_dirs = module_search_path(options.module_dir)
    sys.path[:0] = module_dirs
    if options.ncu_child:
        return child_main(options.ncu_child)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gpu_or_skip import torch_on_gpu
    torch = torch_on_gpu("timing comparison")
    import triton
    import triton.testing  # noqa: F401

    libraries = options.only or list(LIBRARIES)
    modules, missing = load_libraries(libraries)
    for library, why in missing.items():
        print(f"{library}: left out: {why}")
    if not modules:
        raise SystemExit("no generated module to time (see above)")
    bench_files = load_bench_files(list(modules))
    cases = plan_cases(list(modules), bench_files)
    device = torch.cuda.get_device_name()

    torch.manual_seed(0)
    rows = []
    for case in cases:
        kernel_bench = bench_files[case.library].kernel(case.kernel)
        row = {"library": case.library, "kernel": case.kernel, "function": case.function, "shape": case.shape,
               "label": case.label, "id": case.id, "taot_us": None, "do_bench_us": None, "ncu_us": None,
               "ncu_samples_us": [], "check": "not checked"}
        try:
            row.update(measure(torch, triton, case, modules[case.library], kernel_bench, options))
        except Exception as error:  # one case's failure (a launch, the bench file) leaves the others
            row["error"] = f"{type(error).__name__}: {error}"
            print(f"{case.id}: failed: {row['error']}")
        rows.append(row)
        torch.cuda.empty_cache()

    if options.no_ncu:
        ncu_status = {"status": "not run", "why": "--no-ncu"}
    else:
        ncu = find_ncu(options.ncu)
        if ncu is None:
            where = options.ncu or "PATH, $CUDA_HOME/bin, /usr/local/cuda/bin"
            ncu_status = {"status": "not run", "why": f"no ncu binary ({where})"}
        else:
            samples, ncu_status = run_ncu(ncu, cases, options, module_dirs)
            for row in rows:
                row["ncu_samples_us"] = samples.get(row["id"], [])
                row["ncu_us"] = median(row["ncu_samples_us"]) if row["ncu_samples_us"] else None
    for row in rows:
        row["taot_over_ncu"] = ratio(row["taot_us"], row["ncu_us"])
        row["do_bench_over_ncu"] = ratio(row["do_bench_us"], row["ncu_us"])

    print(f"\nthe same launch timed three ways on {device} (medians, us)")
    print(f"taot: kernel.time(flush_l2=True, warmup_ms={options.warmup_ms:g}, rep_ms={options.rep_ms:g}), C++ loop, "
          f"events; do_bench: triton.testing.do_bench(median), launches from Python, events; ncu: "
          f"{NCU_METRIC} over {options.ncu_launches} launches, caches flushed, clocks not locked "
          f"(--clock-control none)")
    print(format_table(rows))
    if ncu_status["status"] != "ok":
        print(f"ncu: {ncu_status['status']}: {ncu_status.get('why', '')}")
    for case_id, error in ncu_status.get("child_errors", {}).items():
        print(f"ncu: {case_id} failed under ncu: {error}")
    if options.json:
        report = {"device": device, "settings": {"warmup_ms": options.warmup_ms, "rep_ms": options.rep_ms,
                                                 "ncu_launches": options.ncu_launches, "ncu_metric": NCU_METRIC,
                                                 "ncu_clock_control": "none", "ncu_cache_control": "all"},
                  "ncu": ncu_status, "left_out": missing, "rows": rows}
        Path(options.json).parent.mkdir(parents=True, exist_ok=True)
        Path(options.json).write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {options.json}")
    mismatches = [row["id"] for row in rows if row["check"].startswith("MISMATCH")]
    if mismatches:
        raise SystemExit(f"outputs differ from the bench files' references: {', '.join(mismatches)}")
    failed = [row["id"] for row in rows if "error" in row]
    if failed:
        raise SystemExit(f"failed to time: {', '.join(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
