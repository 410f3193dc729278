# `taot passes IR_FILE`: run Triton's own pass pipeline for a stage (or chosen passes of it) one pass at
# a time; write the IR after each pass and report which passes changed it and how much.
import json
import re
import sys
import time
from pathlib import Path

from ..compile.output_lock import OutputLock
from ..cli import add_json_flag, add_no_wait_flag, json_document
from ..errors import TaotError
from ..fsutil import write_atomically
from ..spec.targets import accepted_target_names, parse_target
from .compile import positive_int

SUMMARY = "passes.json"  # in OUTDIR: the report, and the files a later run replaces


def add_arguments(parser):
    parser.add_argument("ir_file", metavar="IR_FILE",
                        help="a .ttir or .ttgir file (also .gz/.xz, as taot keeps IR in artifacts/)")
    parser.add_argument("--pipeline", choices=("ttir", "ttgir", "llir"),
                        help="the stage whose pipeline to run (default: ttgir for a .ttir, llir for a .ttgir)")
    parser.add_argument("--list", action="store_true", help="print the pipeline's passes and exit, running none")
    parser.add_argument("--passes", metavar="LIST",
                        help="run only these passes, in this order: names or indices from --list, comma-separated")
    parser.add_argument("-o", "--output", metavar="OUTDIR",
                        help="folder for the IR after each pass (default: IR_FILE's name + .passes/, beside it)")
    parser.add_argument("--target", metavar="TARGET",
                        help="target, e.g. sm_90 (default: the IR's ttg.target, else the compile's metadata "
                             "beside IR_FILE, else sm_90)")
    for option in ("num-warps", "num-ctas", "num-stages", "maxnreg"):
        parser.add_argument(f"--{option}", type=positive_int, metavar="N",
                            help=f"Triton's {option.replace('-', '_')} (default: the IR's, else the compile's "
                                 f"metadata beside IR_FILE, else Triton's default)")
    add_no_wait_flag(parser)
    add_json_flag(parser, "the report (with --list, the passes)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


def check(parser, arguments):
    """Usage errors the parser cannot see alone (exit 2)."""
    if arguments.target is not None:
        target = parse_target(arguments.target)
        if target is None:
            parser.error(f"--target {arguments.target}: expected one of {', '.join(accepted_target_names())}")
        arguments.target = target
    for option in ("num_warps", "num_ctas"):
        value = getattr(arguments, option)
        if value is not None and value & (value - 1):
            parser.error(f"--{option.replace('_', '-')} {value}: expected a power of 2")
    if arguments.passes is not None:
        arguments.passes = [item.strip() for item in arguments.passes.split(",") if item.strip()]
        if not arguments.passes:
            parser.error("--passes: expected pass names or indices, comma-separated")


def run(arguments):
    from ..workbench import passes as pipelines

    path = _existing_file(Path(arguments.ir_file))
    stage = pipelines.input_stage(path)
    if stage is None:
        raise TaotError(f"{path}: expected a .ttir or .ttgir file (optionally .gz or .xz); the pipelines start "
                        f"from one of those")
    pipeline = pipelines.PIPELINES[arguments.pipeline or pipelines.DEFAULT_PIPELINE[stage]]
    if pipeline.source_stage != stage:
        raise TaotError(f"{path}: the {pipeline.name} pipeline starts from a .{pipeline.source_stage} file, "
                        f"got a .{stage} file")
    flags = {name: getattr(arguments, name) for name in pipelines.TUNABLE_OPTIONS}
    run_state = pipelines.PipelineRun(path, pipeline, flags, arguments.target)
    steps = run_state.steps
    if arguments.passes is not None:
        steps = pipelines.select_steps(run_state.steps, arguments.passes, pipeline)
    if arguments.list:
        return _list(run_state, steps, arguments)
    output = Path(arguments.output) if arguments.output else path.with_name(pipelines.plain_name(path) + ".passes")
    if output.exists() and not output.is_dir():
        raise TaotError(f"-o {output}: expected a folder, got a file")
    say = (lambda line: None) if arguments.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    with OutputLock(output, wait=not arguments.no_wait, notice=say):  # two runs into one folder take turns
        report = _run_steps(run_state, steps, output, arguments)
    if arguments.json:
        print(json.dumps(json_document("passes", report), indent=2))
    else:
        _print_table(report, sys.stdout)
    return 0


def _existing_file(path):
    """`path`, or the compressed file beside it that taot keeps in its place (x.ttir -> x.ttir.gz);
    TaotError when neither is a file."""
    if path.is_file():
        return path
    for suffix in (".gz", ".xz"):
        if path.with_name(path.name + suffix).is_file():
            return path.with_name(path.name + suffix)
    raise TaotError(f"{path}: no such file")


def _list(run_state, steps, arguments):
    description = run_state.describe()
    if arguments.json:
        print(json.dumps(json_document("passes", dict(description, passes=[step.as_json() for step in steps])),
                         indent=2))
        return 0
    print(_heading(description, f"{len(steps)} of {len(run_state.steps)} passes" if len(steps) != len(run_state.steps)
                   else f"{len(steps)} passes"))
    width = max(len(step.name) for step in steps)
    for step in steps:
        mlir = f"  [{step.mlir}]" if step.mlir else ""
        print(f"{step.index:>3}  {step.name:<{width}}  {step.call_text()}{mlir}")
    return 0


def _run_steps(run_state, steps, output, arguments):
    """Run `steps`, writing into `output` 00-input (the module as the first step gets it), NN-<pass>
    after each step, final.<ext>, and the report as passes.json after each step (so that a failure
    leaves a report of what was written). Returns the report; PassFailed naming the last file written
    when a step fails."""
    from ..compile.jobs import json_safe
    from ..workbench.passes import PassFailed

    _clear_previous(output, run_state.path)
    width = max(2, len(str(len(steps))))
    report = dict(run_state.describe(), output=str(output), steps=[], files=[], final=None, failed=None)

    def save_report():
        write_atomically(output / SUMMARY, (json.dumps(report, indent=2) + "\n").encode())

    def keep(name, text, step=None):
        """Write file `name`, then the report listing it (and `step`); when the report cannot be
        written (a full disk), the file goes again, so that passes.json lists exactly the files there."""
        if (output / name).resolve() == run_state.path.resolve():
            raise TaotError(f"-o {output}: writing {name} there would replace {run_state.path}, the IR being read; "
                            f"choose another folder")
        write_atomically(output / name, text.encode())
        report["files"].append(name)
        if step:
            report["steps"].append(step)
        try:
            save_report()
        except OSError:
            report["files"].pop()
            if step:
                report["steps"].pop()
            (output / name).unlink(missing_ok=True)
            raise

    keep(f"{0:0{width}d}-input.{run_state.extension}", run_state.text)
    progress = None if arguments.quiet else _Progress(sys.stderr, len(steps))
    try:
        for position, step in enumerate(steps, 1):
            if progress:
                progress.start(position, step)
            try:
                result = run_state.run(step)
            except PassFailed as failure:
                report["failed"] = dict(step.as_json(), step=position, diagnostics=failure.diagnostics)
                save_report()
                raise PassFailed(step, failure.diagnostics, before_file=output / report["files"][-1]) from None
            file_name = f"{position:0{width}d}-{step.name}.{run_state.extension}"
            keep(file_name, result.text, dict(result.as_json(), step=position, file=file_name))
    finally:
        if progress:
            progress.finish()
    report["metadata"] = json_safe(run_state.metadata)
    report["final"] = f"final.{run_state.extension}"
    try:
        keep(report["final"], run_state.text)
    except OSError:
        report["final"] = None
        raise
    return report


def _clear_previous(output, source):
    """Make `output` a folder and remove what an earlier run listed in its passes.json (never the IR
    file being read); other files are left alone."""
    if output.exists() and not output.is_dir():
        raise TaotError(f"-o {output}: expected a folder, got a file")
    output.mkdir(parents=True, exist_ok=True)
    try:
        previous = json.loads((output / SUMMARY).read_text())
    except (OSError, ValueError):
        return
    names = previous.get("files", []) if isinstance(previous, dict) else []
    for name in names:
        if isinstance(name, str) and re.fullmatch(r"\w[\w.\-]*", name):  # a file name, never "..", never a path
            target = output / name
            if target.resolve() != source.resolve():
                target.unlink(missing_ok=True)


def _heading(description, what):
    """Two lines: the pipeline, Triton, the target and the file; the tunable options grouped by where
    they came from, and how many others a metadata file gave (--json lists them)."""
    from ..workbench.passes import TUNABLE_OPTIONS

    groups = {}
    others = {}
    for name, entry in description["options"].items():
        if name in TUNABLE_OPTIONS:
            value = "none" if entry["value"] is None else entry["value"]
            groups.setdefault(entry["from"], []).append(f"{name} {value}")
        else:
            others[entry["from"]] = others.get(entry["from"], 0) + 1
    options = "; ".join(f"{', '.join(values)} ({source})" for source, values in groups.items())
    options += "".join(f"; {count} more from {source} (--json lists them)" for source, count in others.items())
    target = description["target"]
    return (f"{description['pipeline']} pipeline ({what}) of Triton {description['triton_version']} for "
            f"{target['name']} ({target['from']}) on {description['input']}\noptions: {options}")


def _print_table(report, stream):
    rows = report["steps"]
    print(_heading(report, f"{len(rows)} passes"), file=stream)
    width = max([len("pass")] + [len(row["pass"]) for row in rows])
    print(f"{'#':>3}  {'pass':<{width}}  {'changed':<7}  {'+lines':>6}  {'-lines':>6}  {'ops':>13}  {'ms':>8}",
          file=stream)
    for row in rows:
        changed = "loc" if row["locations_only"] else ("yes" if row["changed"] else "no")
        ops = f"{row['ops_before']} -> {row['ops_after']}"
        print(f"{row['step']:>3}  {row['pass']:<{width}}  {changed:<7}  {row['lines_added']:>6}  "
              f"{row['lines_removed']:>6}  {ops:>13}  {row['ms']:>8.2f}", file=stream)
    changed = sum(1 for row in rows if row["changed"])
    ops = f"; {rows[0]['ops_before']} -> {rows[-1]['ops_after']} ops" if rows else ""
    note = " ('loc': only its debug locations)" if any(row["locations_only"] for row in rows) else ""
    print(f"{changed} of {len(rows)} passes changed the IR{note}{ops}; wrote {report['output']}/ ({report['final']})",
          file=stream)
    if report.get("metadata"):
        print("metadata: " + ", ".join(f"{key} {value}" for key, value in report["metadata"].items()), file=stream)


class _Progress:
    """The pass about to run, on stderr: redrawn in place on a terminal; otherwise one line each, once
    the run has taken LONG_RUN seconds (a short run prints nothing, a long one shows where it is)."""

    LONG_RUN = 1.0

    def __init__(self, stream, total):
        self.stream = stream
        self.total = total
        self.redraw = stream.isatty()
        self.drawn = False
        self.started = time.perf_counter()

    def start(self, position, step):
        line = f"[{position}/{self.total}] {step.name}"
        if self.redraw:
            self.stream.write("\r\033[K" + line)
            self.drawn = True
        elif time.perf_counter() - self.started >= self.LONG_RUN:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self):
        if self.drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.drawn = False
