# `taot sanitize [--tool T] -- COMMAND ...`: run a taot command (check, bench, ...) or any program under
# compute-sanitizer with torch's caching allocator off, and summarise what it reports per kernel and
# source line (the cubins carry Triton's line info); with --per-variant, a `check` is run once per
# variant so that every report is a variant's.
import json
import subprocess
import sys
from pathlib import Path

from ..debug import sanitizer
from ..cli import COMMANDS, add_json_flag, json_document
from .. import IMPORT_ROOT
from ..errors import TaotError
from ..library.built import MANIFEST, read_manifest


def add_arguments(parser):
    parser.add_argument("--tool", choices=sanitizer.TOOLS, default="memcheck", help="the sanitizer's tool (default memcheck)")
    parser.add_argument("--per-variant", action="store_true",
                        help="for `check`: one sanitized run per variant of the library, each report a variant's")
    add_json_flag(parser, "the findings (the summary and the program's output go to stderr)")
    parser.add_argument("-o", "--output", metavar="PATH", help="write the findings as JSON to PATH")
    parser.add_argument("-q", "--quiet", action="store_true", help="do not echo the program's output")
    parser.add_argument("program", nargs="+", metavar="-- COMMAND",
                        help="a taot command (check, bench, profile, ...) with its arguments, or a program")


def check(parser, arguments):
    if arguments.per_variant and arguments.program[0] != "check":
        parser.error("--per-variant: the command must be `check` (it runs once per variant)")


def program_command(program):
    """The command line of `program`: a taot front-end command through this Python, a .py file with it,
    or any program as given."""
    first = program[0]
    if first in COMMANDS:
        return [sys.executable, "-m", "taot", *program]
    if first.endswith(".py"):
        return [sys.executable, *program]
    return list(program)


def run_sanitized(tool, program, quiet):
    """(exit code, findings, summary count) of `program` under the sanitizer."""
    import os

    command = sanitizer.sanitizer_command(sanitizer.find_sanitizer(), tool, program_command(program))
    environment = dict(os.environ, **sanitizer.ENVIRONMENT)
    environment["PYTHONPATH"] = str(IMPORT_ROOT) + os.pathsep + environment.get("PYTHONPATH", "")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment)
    lines = []
    for line in process.stdout:
        lines.append(line)
        if not quiet:
            sys.stderr.write(line)
    code = process.wait()
    findings, summary = sanitizer.parse_report("".join(lines))
    return code, findings, summary, "".join(lines)


def library_functions(program):
    """For `check LIBRARY ...`: the library's kernel function names (findings elsewhere, such as an
    initcheck report on torch copying an uninitialised output to restore it later, are the harness's
    and do not fail the run); None for any other command, whose every finding counts."""
    if len(program) < 2 or program[0] != "check" or not (Path(program[1]) / MANIFEST).is_file():
        return None
    manifest = read_manifest(program[1])
    return {kernel["function"] for kernel in manifest["kernels"]}


def variant_runs(program):
    """For --per-variant: one `check` argument list per variant id of the library's manifest (the
    kernels named by --kernel, else all)."""
    arguments = program[1:]
    library = arguments[0] if arguments else None
    if library is None or library.startswith("-") or not (Path(library) / MANIFEST).is_file():
        raise TaotError(f"--per-variant: give the library folder first, `taot sanitize --per-variant -- check LIBRARY "
                        f"--bench FILE ...` (got: {' '.join(arguments)})")
    kernels = [arguments[i + 1] for i, a in enumerate(arguments[:-1]) if a == "--kernel"]
    manifest = read_manifest(library)
    kept, skip = [], False
    for argument in arguments:  # drop any --variants the user gave
        if skip:
            skip = False
            continue
        if argument == "--variants":
            skip = True
            continue
        if argument.startswith("--variants="):
            continue
        kept.append(argument)
    runs = []
    for kernel in manifest["kernels"]:
        if kernels and kernel["name"] not in kernels:
            continue
        for variant in kernel["variants"]:
            runs.append((variant["id"], ["check", *kept, "--kernel", kernel["name"], "--variants", variant["id"]]))
    return runs


def run(arguments):
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    runs = variant_runs(arguments.program) if arguments.per_variant else [(None, arguments.program)]
    report, failed = [], False
    ours = library_functions(arguments.program)
    for label, program in runs:
        if label:
            say(f"[{len(report) + 1}/{len(runs)}] {arguments.tool}: variant {label}")
        code, findings, summary, output = run_sanitized(arguments.tool, program, arguments.quiet or bool(label))
        not_run = label is not None and "does not accept" in output and not findings
        counted = findings if ours is None else [f for f in findings if f.function in ours]
        entry = {"variant": label, "exit_code": code, "not_run": not_run,
                 "errors": (summary if summary is not None else len(findings)) if ours is None else len(counted),
                 "elsewhere": 0 if ours is None else len(findings) - len(counted),
                 "findings": [dict(kind=f.kind, function=f.function, file=f.file, line=f.line, count=count)
                              for f, count in sanitizer.summarize(findings)]}
        report.append(entry)
        failed |= bool(entry["errors"]) or (code != 0 and not not_run)
    out = sys.stderr if arguments.json else sys.stdout  # --json: stdout holds the document alone
    print(f"compute-sanitizer --tool {arguments.tool}: {' '.join(arguments.program)}", file=out)
    for entry in report:
        head = f"  {entry['variant']}: " if entry["variant"] else "  "
        if entry["not_run"]:
            print(f"{head}not run (the variant takes none of the shapes' arguments)", file=out)
            continue
        scope = " in the library's kernels" if ours is not None else ""
        elsewhere = f"; {entry['elsewhere']} outside them (the harness: torch, the host)" if entry["elsewhere"] else ""
        print(f"{head}{entry['errors']} error(s){scope}{elsewhere}, exit code {entry['exit_code']}", file=out)
        for finding in entry["findings"]:
            if finding["function"] is None:  # the program's side: a failed API call after the fault, its exit
                print(f"    {finding['count']} x {finding['kind']}", file=out)
                continue
            location = f"{finding['file']}:{finding['line']}" if finding["file"] else "no line info"
            print(f"    {finding['count']} x {finding['kind']} in {finding['function']} at {location}", file=out)
    document = json_document("sanitize", {"tool": arguments.tool, "runs": report})
    if arguments.json:
        print(json.dumps(document, indent=1))
    if arguments.output:
        Path(arguments.output).write_text(json.dumps(document, indent=1) + "\n")
    return 1 if failed else 0
