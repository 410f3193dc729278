# `taot bench LIBRARY --bench FILE`: time the automatic choice, chosen variants and the bench file's
# baselines over its sweep on the production launch path; print a table, write CSV, JSON and a plot.
import json
import sys

from ..measure import bench, report as bench_report, stats
from ..measure.benchfile import load_bench_file
from ..cli import add_json_flag
from ..errors import TaotError
from ..library.built import load_library
from ..measure.calls import TimingSettings
from .compile import positive_int


def add_arguments(parser):
    parser.add_argument("library", metavar="LIBRARY",
                        help="the library: the output folder of `taot build SPEC --python --build-library` "
                             "(manifest.json, module in build/), or an importable generated module's name")
    parser.add_argument("--bench", required=True, metavar="FILE", help="the bench file (docs/bench-file.md)")
    parser.add_argument("--kernel", action="append", metavar="NAME", help="only this kernel of the file (repeatable)")
    parser.add_argument("--variants", default="auto", metavar="LIST",
                        help="what of the library to time: auto (the automatic choice; default), all (every "
                             "variant), or variant indices and ids, comma-separated (auto,3,7)")
    parser.add_argument("--baselines", metavar="LIST",
                        help="the file's baselines to time, comma-separated (default: all; none: no baseline)")
    add_where_argument(parser)
    parser.add_argument("--graph", action="store_true", help="time CUDA-graph replays (the L2 is still flushed)")
    parser.add_argument("--no-flush", action="store_true", help="do not flush the L2 between reps")
    parser.add_argument("--warmup-ms", type=float, default=25.0, metavar="MS", help="warm-up GPU time (default 25)")
    parser.add_argument("--rep-ms", type=float, default=100.0, metavar="MS",
                        help="GPU time of the timed reps (default 100)")
    parser.add_argument("--reps", type=positive_int, metavar="N", help="timed reps (default: as many as fit --rep-ms)")
    parser.add_argument("--launches-per-rep", type=positive_int, default=1, metavar="N",
                        help="launches between a rep's two events (default 1)")
    parser.add_argument("--no-check", action="store_true", help="do not compare outputs with the reference first")
    parser.add_argument("--device", default="cuda:0", metavar="DEVICE", help="the torch device (default cuda:0)")
    parser.add_argument("--peak", metavar="OVERRIDE", help='peak figures, e.g. "gbps=3350,bf16=989.5" (docs/bench-file.md)')
    parser.add_argument("--module-dir", metavar="DIR", help="where the library's built module is (default LIBRARY/build)")
    parser.add_argument("-o", "--output", metavar="PREFIX", help="write PREFIX.csv, PREFIX.json and PREFIX.png")
    parser.add_argument("--csv", metavar="PATH", help="write the records as CSV")
    add_json_flag(parser, "the report (taot.bench v1; -o PREFIX writes PREFIX.json)")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG plot of the sweep (needs matplotlib)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def check(parser, arguments):
    for option in ("warmup_ms", "rep_ms"):
        value = getattr(arguments, option)
        if not value > 0:
            parser.error(f"--{option.replace('_', '-')} {value}: expected a positive number of ms")
    try:
        arguments.selection = bench.parse_variant_selection(arguments.variants)
        arguments.peak_override = stats.parse_peak_override(arguments.peak) if arguments.peak else None
    except TaotError as error:
        parser.error(str(error))
    arguments.filters = parse_where(parser, arguments.where)
    if arguments.baselines is not None:
        arguments.baselines = [] if arguments.baselines == "none" else \
            [name.strip() for name in arguments.baselines.split(",") if name.strip()]


def add_where_argument(parser):
    parser.add_argument("--where", action="append", default=[], metavar="DIM=VALUE[,VALUE...]",
                        help="only shapes whose dimension DIM has one of these values (repeatable: all must hold; "
                             "values as the file writes them)")


def parse_where(parser, items):
    """--where's DIM=VALUE[,VALUE...] items as (DIM, {VALUE, ...}); a malformed one is a usage error."""
    filters = []
    for item in items:
        name, equals, values = item.partition("=")
        values = {value.strip() for value in values.split(",") if value.strip()}
        if not equals or not name.strip() or not values:
            parser.error(f"--where {item}: expected DIM=VALUE[,VALUE...]")
        filters.append((name.strip(), values))
    return filters


def shape_filter(filters, bench_file):
    """A predicate keeping the shapes whose dimensions match every (DIM, values) filter (compared as
    text, so that 4096 and "bf16" both match what the file writes); unknown dimensions are an error."""
    if not filters:
        return None
    dims = {name for kernel in bench_file.kernels for name in kernel.dims}
    for name, _ in filters:
        if name not in dims:
            raise TaotError(f"--where {name}=...: {bench_file.label} has no dimension {name}; its dimensions: "
                            f"{', '.join(sorted(dims))}")
    return lambda shape: all(name in shape and str(shape[name]) in values for name, values in filters)


def run(arguments):
    say = (lambda line: None) if arguments.quiet else bench.stderr_line
    bench_file = load_bench_file(arguments.bench)
    if arguments.baselines:
        known = {name for kernel in bench_file.kernels for name in kernel.baselines}
        unknown = [name for name in arguments.baselines if name not in known]
        if unknown:
            raise TaotError(f"--baselines {', '.join(unknown)}: not in {bench_file.label} (its baselines: "
                            f"{', '.join(sorted(known)) or 'none'})")
    library = load_library(arguments.library, arguments.module_dir)
    settings = TimingSettings(warmup_ms=arguments.warmup_ms, rep_ms=arguments.rep_ms, reps=arguments.reps or 0,
                              flush_l2=not arguments.no_flush, graph=arguments.graph,
                              launches_per_rep=arguments.launches_per_rep)
    outcome = bench.run_bench(library, bench_file, kernels=arguments.kernel, selection=arguments.selection,
                              baselines=arguments.baselines, settings=settings, device=arguments.device,
                              check=not arguments.no_check, shapes_filter=shape_filter(arguments.filters, bench_file),
                              peak_override=arguments.peak_override, say=say)
    if arguments.json:
        print(json.dumps(bench_report.to_json(outcome.report), indent=1))
    elif outcome.report.records:
        print(bench_report.format_table(outcome.report))
    for path in bench.write_outputs(outcome.report, arguments.output, arguments.csv, None, arguments.plot, say=say):
        say(f"wrote {path}")
    if outcome.problems:
        print(f"{len(outcome.problems)} not timed:", file=sys.stderr)
        for problem in outcome.problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    if not outcome.report.records:
        raise TaotError("nothing was timed: no variant chosen takes the arguments of the shapes kept")
    return 0
