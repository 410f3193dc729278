# `taot bench`'s engine: a bench file's sweep over a built library's kernels. Per kernel and shape,
# the arguments come from the file, each implementation (the automatic choice, chosen variants, the
# file's baselines) is checked against the reference once and then timed: kernels by their module's
# time() (the C++ loop on the production launch path), baselines by measure.time_callable().
import dataclasses
import importlib.util
import os
import sys

from . import report as bench_report, stats
from .benchfile import AUTOMATIC, Call
from ..errors import BenchFileError, Problem, TaotError
from .calls import OutputGuard, TimingSettings, compare_outputs, output_positions, positional, time_callable

ALL_VARIANTS = "all"


@dataclasses.dataclass(frozen=True)
class Implementation:
    """What is timed: the automatic choice, one variant (by index into variants()), or a baseline."""
    name: str
    kind: str  # bench_report.KINDS
    variant: int = None
    function: object = None
    optional: bool = False  # from `all`: a variant that does not take a shape's arguments is left out quietly


@dataclasses.dataclass
class BenchRun:
    """A sweep's outcome: the report of what was timed, and one line per implementation and shape
    that could not be (a wrong result, a launch that failed), which the command reports and counts."""
    report: bench_report.BenchReport
    problems: list


def parse_variant_selection(text):
    """`--variants`: "auto", "all", or a comma-separated list of "auto", variant indices and ids."""
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise TaotError(f'--variants "{text}": expected auto, all, or variant indices or ids, comma-separated')
    return [int(item) if item.isdigit() else item for item in items]


def implementations(kernel_name, kernel, kernel_bench, selection, baselines):
    """The implementations of one kernel to time, in order: those `selection` names (auto, all, indices,
    ids), then the file's baselines that `baselines` keeps (None: all of them)."""
    variants = kernel.variants()
    by_id = {variant["id"]: variant["index"] for variant in variants}
    chosen = []
    for item in selection:
        if item == AUTOMATIC:
            chosen.append(Implementation(AUTOMATIC, "auto"))
        elif item == ALL_VARIANTS:
            chosen += [Implementation(v["id"], "variant", v["index"], optional=True) for v in variants]
        elif isinstance(item, int):
            if item >= len(variants):
                raise TaotError(f"--variants {item}: kernel {kernel_name} has {len(variants)} variants "
                                f"(indices 0 to {len(variants) - 1})")
            chosen.append(Implementation(variants[item]["id"], "variant", item))
        elif item in by_id:
            chosen.append(Implementation(item, "variant", by_id[item]))
        else:
            raise TaotError(f"--variants {item}: not a variant of kernel {kernel_name} (give an index, an id as "
                            f"`taot inspect` lists them, auto or all)")
    # A baseline asked for that this kernel lacks may be another kernel's (the command checks that
    # each exists somewhere in the file).
    names = kernel_bench.baselines if baselines is None else [n for n in baselines if n in kernel_bench.baselines]
    chosen += [Implementation(name, "baseline", function=kernel_bench.baselines[name]) for name in names]
    return list(dict.fromkeys(chosen))


class ArgumentCache:
    """make_args per shape, and per value of the fields the arguments depend on (ARGS_DEPEND_ON);
    the reference's outputs per set of arguments, computed before any implementation runs."""

    def __init__(self, kernel_bench, info, device):
        self.kernel_bench = kernel_bench
        self.info = info
        self.device = device
        self.positions = output_positions(kernel_bench, info)
        self.output_names = [info.parameters[p] for p in self.positions]
        self._entries = {}

    def dependent_values(self, config):
        return {name: config[name] for name in self.kernel_bench.args_depend_on if name in config}

    def entry(self, shape, config=None):
        """(args, guard, expected) for `shape` and the dependent fields of `config`."""
        values = self.dependent_values(config or {})
        key = tuple(sorted(values.items()))
        if key not in self._entries:
            args = self.arguments(shape, config)
            guard = OutputGuard(args, self.positions)
            expected = self.kernel_bench.expected(Call(*args), self.output_names)
            if len(self._entries) >= 8:  # a few sets at a time: arguments can be large
                self._entries.clear()
            self._entries[key] = (args, guard, expected)
        return self._entries[key]

    def arguments(self, shape, config=None):
        """make_args' arguments for `shape` and the dependent fields of `config`, in the kernel's order,
        made anew and not kept, with no reference computed (entry() adds one and keeps them)."""
        values = self.dependent_values(config or {})
        call = self.kernel_bench.call(shape, self.device, values if self.kernel_bench.args_depend_on else None)
        return positional(call, self.info.parameters, f"{self.kernel_bench.file}: make_args({shape.label})")

    def default_config(self, kernel):
        """The spec's default of every field the arguments depend on, as the variants' configs write
        values (the first variant's where the manifest gives none)."""
        config = {}
        variants = kernel.variants()
        for name in self.kernel_bench.args_depend_on:
            if name not in self.info.config_fields:
                raise BenchFileError(self.kernel_bench.file, self.kernel_bench.wheres["args_depend_on"],
                                     f"config fields of kernel {self.info.name}: "
                                     f"{', '.join(self.info.config_fields)}", repr(name))
            config[name] = variants[0]["config"][name]
        return config


def chosen_kernels(bench_file, kernels):
    """The file's kernels that --kernel names (all of them when it names none); TaotError for a
    name the file lacks."""
    missing = sorted(set(kernels or ()) - set(bench_file.names))
    if missing:
        raise TaotError(f"--kernel {', '.join(missing)}: not in {bench_file.label} (its kernels: "
                        f"{', '.join(bench_file.names)})")
    return [kb for kb in bench_file.kernels if not kernels or kb.name in kernels]


def argument_config(kernel, implementation, cache):
    """The config whose fields the arguments of `implementation` are made for: a variant's own, else
    the spec's defaults of the fields the arguments depend on (None when they depend on none)."""
    if implementation.kind == "variant":
        return kernel.variants()[implementation.variant]["config"]
    return cache.default_config(kernel) if cache.kernel_bench.args_depend_on else None


def torch_missing(command):
    """The one-line error of a measuring command run by a Python without torch."""
    return TaotError(f"taot {command} needs torch (the bench file's arguments are torch tensors, timed and compared "
                     f"on the GPU), and {sys.executable}, the Python taot runs, has none: pip install torch there, or "
                     f"set TAOT_PYTHON to a Python that has it")


def open_device(command, device):
    """torch, with `device` current. TaotError in one line when this Python has no torch, when torch
    sees no GPU, or when `device` is not one of them."""
    try:
        import torch
    except ModuleNotFoundError as error:
        if error.name != "torch":
            raise
        raise torch_missing(command) from None
    if str(device).startswith("cuda") and not torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        raise TaotError(f"taot {command} needs a CUDA GPU, and torch {torch.__version__} in {sys.executable} sees none"
                        + (f" (CUDA_VISIBLE_DEVICES={visible!r})" if visible is not None else ""))
    try:
        torch.cuda.set_device(device)
    except (RuntimeError, ValueError, AssertionError) as error:
        raise TaotError(f"--device {device}: {str(error).strip().splitlines()[0]}") from None
    return torch


def first_arguments(command, device, make):
    """make(): the run's first arguments (make_args, the reference), before taot itself imports torch
    or touches the GPU, so that a make_args that fails on its own says so first. One that fails for
    want of torch, or of a GPU (torch's RuntimeError), is reported as that, in one line."""
    try:
        return make()
    except BenchFileError as error:
        cause = error.__cause__
        if isinstance(cause, ModuleNotFoundError) and cause.name == "torch":
            raise torch_missing(command) from None
        if isinstance(cause, (RuntimeError, AssertionError)) and importlib.util.find_spec("torch") is not None:
            open_device(command, device)  # no GPU, or not this one: that is the error to report
        raise


def _synchronize(device):
    import torch
    torch.cuda.synchronize(device)


def run_bench(library, bench_file, *, kernels=None, selection=(AUTOMATIC,), baselines=None, settings=TimingSettings(),
              device="cuda:0", check=True, shapes_filter=None, peak_override=None, say=None):
    """Times the sweep of every kernel of `bench_file` (or those named in `kernels`). Returns a BenchRun.
    `shapes_filter(shape)` keeps a shape when true. `say(line)` reports progress. What needs no torch
    (the library's name and kernels, --kernel, --variants, the shapes kept) is checked first, then the
    first arguments are made, then torch and the GPU are opened."""
    say = say or (lambda line: None)
    bench_file.check_library(library.name, library.kernel_names())
    chosen = chosen_kernels(bench_file, kernels)
    timed = {}
    for kernel_bench in chosen:
        info = library.info(kernel_bench.name)
        if info is None:
            raise TaotError(f"library {library.name} has no manifest beside its module; give the library folder")
        kernel = library.kernel(kernel_bench.name)
        timed[kernel_bench.name] = (kernel, info,
                                    implementations(kernel_bench.name, kernel, kernel_bench, selection, baselines))
    plan = [(kb, shape) for kb in chosen for shape in kb.shapes if shapes_filter is None or shapes_filter(shape)]
    if not plan:
        raise TaotError(f"nothing to time: no shape of {bench_file.label} matches --where")
    device_name = None
    records, problems = [], []
    for step, (kernel_bench, shape) in enumerate(plan, 1):
        kernel, info, chosen_implementations = timed[kernel_bench.name]
        cache = ArgumentCache(kernel_bench, info, device)
        if device_name is None:
            if chosen_implementations:
                first_arguments("bench", device, lambda: cache.entry(
                    shape, argument_config(kernel, chosen_implementations[0], cache)))
            device_name = open_device("bench", device).cuda.get_device_name(device)
        for implementation in chosen_implementations:
            label = f"[{step}/{len(plan)}] {kernel_bench.name} {shape.label} {implementation.name}"
            try:
                samples = _check_and_time(kernel, implementation, cache, shape, settings, device, check)
            except _NotApplicable:
                continue
            except _Skipped as skipped:
                problems.append(f"{kernel_bench.name} {shape.label} {implementation.name}: {skipped}")
                say(f"{label}: {skipped}")
                continue
            record = bench_report.Record(kernel_bench.name, implementation.name, implementation.kind, dict(shape),
                                         samples, kernel_bench.flops_of(shape), kernel_bench.bytes_of(shape),
                                         kernel_bench.flops_dtype_of(shape))
            records.append(record)
            say(f"{label}: median {record.median_ms * 1e3:.2f} us")
    report = bench_report.BenchReport(device_name, records, stats.device_peak(device_name, peak_override),
                                      bench_file.axes(), bench_file.metrics(),
                                      {**settings.describe(), "check": check, "device": device})
    return BenchRun(report, problems)


class _Skipped(Problem):
    """An implementation that cannot be timed at a shape: a wrong result or a failed launch."""


class _NotApplicable(Problem):
    """A variant that `all` brought in but that does not take this shape's arguments (another dtype)."""


def _check_and_time(kernel, implementation, cache, shape, settings, device, check):
    config = argument_config(kernel, implementation, cache)
    args, guard, expected = cache.entry(shape, config)
    if implementation.kind == "auto" and cache.kernel_bench.args_depend_on:
        # The arguments depend on fields the automatic choice picks: choose with the default's
        # arguments, then make the arguments of the config chosen.
        try:
            index, _ = kernel.choose(*args)
        except (ValueError, TypeError) as error:
            raise _Skipped(f"no variant accepts these arguments: {error}") from None
        chosen = kernel.variants()[index]["config"]
        if cache.dependent_values(chosen) != cache.dependent_values(config):
            args, guard, expected = cache.entry(shape, chosen)
    keywords = {"variant": implementation.variant} if implementation.kind == "variant" else {}
    if implementation.optional:
        try:
            kernel.choose(*args, **keywords)
        except (ValueError, TypeError):
            raise _NotApplicable() from None
    if implementation.kind == "baseline":
        run = lambda: implementation.function(*args)  # noqa: E731
    else:
        run = lambda: kernel(*args, **keywords)  # noqa: E731
    try:
        if check and expected is not None:
            guard.restore()
            run()
            _synchronize(device)
            mismatches = compare_outputs(cache.kernel_bench, cache.output_names, guard.outputs(), expected)
            if mismatches:
                raise _Skipped("wrong result: " + "; ".join(mismatches))
        if implementation.kind == "baseline":
            return time_callable(run, settings, device)
        return kernel.time(*args, **keywords, **settings.keywords())["ms"]
    except _Skipped:
        raise
    except (ValueError, TypeError, RuntimeError, TaotError) as error:
        raise _Skipped(f"{type(error).__name__}: {error}") from None


def write_outputs(report, output_prefix=None, csv_path=None, json_path=None, plot_path=None, say=print):
    """Writes the report where asked: OUTPUT_PREFIX.{csv,json,png} and/or explicit paths."""
    written = []
    if output_prefix is not None:
        csv_path = csv_path or f"{output_prefix}.csv"
        json_path = json_path or f"{output_prefix}.json"
        plot_path = plot_path or f"{output_prefix}.png"
    if csv_path:
        bench_report.write_csv(report, csv_path)
        written.append(csv_path)
    if json_path:
        bench_report.write_json(report, json_path)
        written.append(json_path)
    if plot_path:
        try:
            bench_report.write_plot(report, plot_path)
            written.append(plot_path)
        except ImportError:
            say(f"note: no plot written to {plot_path}: matplotlib is not installed (pip install matplotlib)")
    return written


def stderr_line(line):
    print(line, file=sys.stderr, flush=True)
