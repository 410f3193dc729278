# `taot compile`: load a spec, compile its variants with Triton, print progress and a summary.
import argparse
import json
import os
import sys
import time
from pathlib import Path

from ..cli import add_json_flag, add_no_wait_flag, json_document
from ..errors import TaotError
from ..compile.ir_files import DEFAULT_MODE, MODES


def _whole_number(text, minimum, minimum_text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected {minimum_text} or more, got {value}")
    return value


def positive_int(text):
    return _whole_number(text, 1, "1")


def jobs_count(text):
    """-j N: a whole number, 0 meaning every core (as build() takes it)."""
    return _whole_number(text, 0, "0 (all cores)")


# Where a library goes when no -o is given: DEFAULT_OUTPUT/<library name>, under the current folder.
DEFAULT_OUTPUT = "taot-out"


def output_folder(library, arguments):
    """-o, or DEFAULT_OUTPUT/<library name>; stores the choice in `arguments`."""
    if not arguments.output:
        arguments.output = str(Path(DEFAULT_OUTPUT) / library.name)
    output = Path(arguments.output)
    for folder in (output, *output.parents):
        if folder.exists() and not folder.is_dir():
            raise TaotError(f"-o {arguments.output}: {folder} is a file; the output must be a folder (taot creates it)")
    return output


def add_arguments(parser):
    """The compile options; `taot build` takes them too."""
    parser.add_argument("spec", help="the spec file (.toml, or .py defining taot_spec())")
    parser.add_argument("-o", "--output", metavar="OUTDIR",
                        help=f"output folder for manifest.json and artifacts/ (default: {DEFAULT_OUTPUT}/LIBRARY, "
                             "LIBRARY being the spec's library name)")
    parser.add_argument("-j", "--jobs", type=jobs_count, metavar="N", default=0,
                        help=f"parallel compile workers (default and 0: all cores, {os.cpu_count() or 1} here; "
                             "more than the cores, or than the memory available holds at 0.5 GB each, are capped)")
    parser.add_argument("--cluster", metavar="ADDRESS",
                        help="compile on a Ray cluster (docs/scale.md): its address (ray://HOST:10001, HOST:6379) or "
                             "auto (the cluster this machine belongs to); needs pip install 'taot[ray]'")
    parser.add_argument("--target", action="extend", nargs="+", metavar="TARGET", dest="targets",
                        help="compile for these targets instead of the spec's (e.g. --target sm_90 sm_80)")
    parser.add_argument("--list", action="store_true", help="print the variant ids and exit without compiling")
    parser.add_argument("--max-variants", type=positive_int, metavar="N", default=10000,
                        help="refuse a spec that makes more than N variants in all (default: %(default)s)")
    parser.add_argument("--ir", choices=MODES, default=DEFAULT_MODE,
                        help="keep the IR stages (ttir, ttgir, llir, ptx) gzip-compressed, as plain text, or not at "
                             "all (default: %(default)s); changing it converts kept IR without recompiling")
    parser.add_argument("--debug", action="store_true",
                        help="compile every kernel with Triton's debug option on, as if each spec said debug = true: "
                             "tl.device_assert is kept (variant ids and hashes change, so a debug build never "
                             "reuses release artifacts)")
    add_no_wait_flag(parser)
    add_json_flag(parser, "the result (with --list, the variants)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress or summary on stderr")


def check(parser, arguments):
    """Usage errors the parser cannot see alone (exit 2)."""
    if getattr(arguments, "cluster", None):
        from ..compile.cluster import address_problem
        problem = address_problem(arguments.cluster)
        if problem:
            parser.error(f"--cluster {arguments.cluster}: {problem}")
        if arguments.list:
            parser.error("--cluster and --list: --list compiles nothing")
    if arguments.targets:
        arguments.targets = [name for value in arguments.targets for name in value.split(",") if name]
        from ..spec.targets import accepted_target_names, parse_target
        for name in arguments.targets:
            if parse_target(name) is None:  # a usage error, as in taot passes --target
                parser.error(f"--target {name}: expected one of {', '.join(accepted_target_names())}")


def run(arguments, library=None, lock_held=False):
    """`library`: the spec already loaded (taot build loads it first, to know its output folder);
    `lock_held`: the caller holds the output folder's lock (taot build, for its later steps too)."""
    start = time.perf_counter()
    library = library or load(arguments)
    if arguments.list:
        return _list(library, arguments)
    output_folder(library, arguments)
    result = compile_library(library, arguments, lock_held)
    _summarise(result, time.perf_counter() - start, arguments)
    return 0


def load(arguments):
    """The spec, validated and enumerated; prints each kernel's variant count unless quiet."""
    from ..spec.validate import load_spec
    quiet = arguments.quiet  # (--json changes stdout only: progress and counts still go to stderr)

    def progress(kernel, count, seconds):  # a large spec's enumeration is not silent
        print(f"{kernel}: {count:,} variants so far ({seconds:.0f} s)", file=sys.stderr, flush=True)

    library = load_spec(Path(arguments.spec), label=arguments.spec, target_override=arguments.targets,
                        max_variants=arguments.max_variants, debug=getattr(arguments, "debug", False),
                        progress=None if quiet else progress, keep_variants=not arguments.list)
    binary = os.environ.get("TAOT_BIN")  # the C++ taot sets it to itself when it runs the front end
    if binary and not arguments.list:
        from ..library.plan import check_plan
        check_plan(library, binary)
    if not quiet:
        _print_counts(library, sys.stderr)
    return library


def compile_library(library, arguments, lock_held=False):
    from ..compile.engine import build
    progress = None if arguments.quiet else Progress(sys.stderr)
    cluster = None
    try:
        if getattr(arguments, "cluster", None):
            from ..compile.cluster import connect
            cluster = connect(arguments.cluster, notice=progress.note if progress else None)
        return build(library, arguments.output, workers=arguments.jobs, progress=progress,
                     notice=progress.note if progress else None, ir=arguments.ir, wait=not arguments.no_wait,
                     cluster=cluster, lock_held=lock_held)
    finally:
        if cluster is not None:
            cluster.close()
        if progress is not None:
            progress.finish()


def _print_counts(library, stream):
    """Per kernel, before anything is compiled: its variants, targets, the unfiltered product and
    its largest dimensions."""
    for kernel in library.kernels:
        summary = library.summaries[kernel.name]
        targets = ", ".join(target.name for target in kernel.targets)
        print(f"{kernel.name}: {summary.count} variants for {targets} (of {summary.combinations:,} combinations; "
              f"largest dimensions: {summary.largest()}; enumerated in {summary.seconds:.2f}s)", file=stream)
        for note in kernel.notes:
            print(f"{kernel.name}: note: {note}", file=stream)


def _list(library, arguments):
    """The variant ids, written as they are made (a spec of millions is listed in little memory), then
    a summary line; or the same as one JSON document, printed once every id is made (an error while
    naming them, such as a grid that divides by zero, then leaves no half document)."""
    targets = [target.name for target in library.targets]
    out = sys.stdout
    jobs = 0
    if arguments.json:
        kernels = {}
        for kernel in library.kernels:
            kernels[kernel.name] = []
            for variant in library.variants[kernel.name]:
                jobs += len(variant.targets)
                kernels[kernel.name].append(variant.id)
        print(json.dumps(json_document("compile", {"library": library.name, "targets": targets, "kernels": kernels,
                                                   "compile_jobs": jobs}), indent=2))
        return 0
    for kernel in library.kernels:
        for variant in library.variants[kernel.name]:
            jobs += len(variant.targets)
            out.write(variant.id + "\n")
    counts = {kernel.name: len(library.variants[kernel.name]) for kernel in library.kernels}
    per_kernel = ", ".join(f"{name} {count}" for name, count in counts.items())
    print(f"{sum(counts.values())} variants ({per_kernel}) for {len(targets)} targets ({', '.join(targets)}) = "
          f"{jobs} compile jobs")
    return 0


def _summarise(result, seconds, arguments):
    """The result as JSON on stdout, or a summary line and the manifest's path on stderr."""
    if arguments.json:
        print(json.dumps(json_document("compile", {
            "compiled": result.compiled, "up_to_date": result.up_to_date, "seconds": round(seconds, 3),
            "manifest": str(result.manifest_path), "manifest_changed": result.manifest_changed,
            "removed": [str(path) for path in result.removed_dirs],
            "overrides": [{"variant": variant, "target": target} for variant, target in result.overrides]}), indent=2))
        return
    if arguments.quiet:
        return
    print(f"compiled {result.compiled}, up to date {result.up_to_date}, in {seconds:.1f}s", file=sys.stderr)
    state = "written" if result.manifest_changed else "unchanged"
    print(f"manifest: {result.manifest_path} ({state})", file=sys.stderr)
    if result.removed_dirs:
        print(f"removed {len(result.removed_dirs)} stale artifact folders", file=sys.stderr)


class Progress:
    """One line per finished compile; on a terminal the line is redrawn in place. A variant's
    tl.static_print output follows its first compile's line, once (not per target), each line
    prefixed by the variant id."""

    def __init__(self, stream):
        self.stream = stream
        self.redraw = stream.isatty()
        self.drawn = False
        self.printed = set()  # variant ids whose static_print output was shown

    def __call__(self, done, total, outcome):
        status = "FAILED" if outcome.error is not None else f"{outcome.seconds:.2f}s"
        line = f"[{done}/{total}] {outcome.variant_id} {outcome.target} {status}"
        if self.redraw and outcome.error is None:
            self.stream.write("\r\033[K" + line)
            self.drawn = True
        else:
            self.finish()
            self.stream.write(line + "\n")
        printed = getattr(outcome, "static_print", "")
        if printed and outcome.variant_id not in self.printed:
            self.printed.add(outcome.variant_id)
            self.finish()
            for text in printed.splitlines():
                self.stream.write(f"{outcome.variant_id}: static_print: {text}\n")
        self.stream.flush()

    def note(self, line):
        """A line about the build itself (waiting for another build, an artifact compiled again)."""
        self.finish()
        self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self):
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False

