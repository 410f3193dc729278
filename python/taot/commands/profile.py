# `taot profile [-o OUT.hatchet] [--bench FILE ...] [--nvtx] [--json] -- PROGRAM [ARGS...]`: run a
# program that uses taot libraries with the runtime's profiler on ($TAOT_PROFILE), then report its
# launches per library, kernel and variant: count, GPU time, the steps that chose the variants, and
# FLOP and byte rates from bench files; optionally as hatchet JSON for proton-viewer (docs/profile.md).
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ..debug import profiler
from ..measure.benchfile import load_bench_file
from ..errors import TaotError

# The runtime writes one trace per process (%p: its id) into the command's temporary folder.
TRACE_NAME = "trace-%p.json"


def add_arguments(parser):
    parser.add_argument("-o", "--output", metavar="OUT.hatchet",
                        help="also write the tree as hatchet JSON in Proton's layout (read it with proton-viewer)")
    parser.add_argument("--bench", metavar="FILE", action="append", default=[],
                        help="a bench file whose call_shape and flops/bytes formulas give its kernels' launches "
                             "FLOPs and bytes (repeatable)")
    parser.add_argument("--nvtx", action="store_true",
                        help="also push an NVTX range <library>.<kernel>[<variant>] around every launch "
                             "($TAOT_PROFILE_NVTX=1), for Nsight Systems")
    parser.add_argument("--json", action="store_true",
                        help="print the report as JSON on stdout (the program's own output then goes to stderr)")
    parser.add_argument("program", nargs="*", metavar="PROGRAM [ARGS...]",
                        help="after --: the program to run and its arguments; a path ending in .py runs with this "
                             "Python")


def check(parser, arguments):
    """Usage errors the parser cannot see alone (exit 2)."""
    if not arguments.program:
        parser.error("expected the program to run: taot profile [options] -- PROGRAM [ARGS...]")


def run(arguments):
    bench_files = [load_bench_file(path) for path in arguments.bench]
    command = _command(arguments.program)
    if arguments.output:  # before the program, which may run long
        profiler.check_hatchet_path(arguments.output)
    with tempfile.TemporaryDirectory(prefix="taot-profile-") as folder:
        environment = dict(os.environ, TAOT_PROFILE=str(Path(folder) / TRACE_NAME))
        if arguments.nvtx:
            environment["TAOT_PROFILE_NVTX"] = "1"
        else:
            environment.pop("TAOT_PROFILE_NVTX", None)
        returncode = _run(command, environment, sys.stderr if arguments.json else None)
        trace = profiler.read_traces(sorted(Path(folder).glob(TRACE_NAME.replace("%p", "*"))))
    outcome = _outcome(returncode)
    rates = profiler.Rates(bench_files)
    root = profiler.build_tree(trace.launches, rates)
    notes = [f"runtime: {error}" for error in trace.errors] + rates.notes
    if returncode < 0 and trace.processes == 0:
        notes.append("no trace was written: the program was killed before it exited (a C or C++ program can call "
                     "taot_profile_flush() to write it earlier)")
    if note := profiler.untimed_note(root):
        notes.append(note)
    if arguments.output:
        profiler.write_hatchet(arguments.output, root, trace.devices)
    if arguments.json:
        print(json.dumps(profiler.report_json(root, trace, arguments.program, outcome, notes), indent=1))
    else:
        print(profiler.summary_line(root, trace, arguments.program, outcome))
        if root.count:
            print(profiler.text_tree(root))
        for note in notes:
            print(f"note: {note}")
        if arguments.output:
            print(f"wrote {arguments.output} (proton-viewer -m time/ms {arguments.output})")
    return 0 if returncode == 0 else 1


def _command(program):
    """The command line that runs `program`: a .py file with this Python, else as given."""
    first = program[0]
    if first.endswith(".py"):
        if not Path(first).is_file():
            raise TaotError(f"{first}: no such Python file")
        return [sys.executable, *program]
    return list(program)


def _run(command, environment, stdout):
    """Runs `command` to its end and returns its exit status (negative: the signal that ended it).
    Ctrl-C reaches the program (it is in the same process group); this process waits for it to
    exit and write its trace, then reports what it recorded."""
    try:
        child = subprocess.Popen(command, env=environment, stdout=stdout)
    except FileNotFoundError:
        raise TaotError(f"{command[0]}: no such program (not a file, and not found on PATH)") from None
    except PermissionError:
        raise TaotError(f"{command[0]}: cannot run it (permission denied)") from None
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # after the start: the program keeps Ctrl-C's default
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def _outcome(returncode):
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return f"was killed by {name}"
