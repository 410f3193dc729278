# `taot import-cache`: make a library from the kernels a JIT program left in a Triton cache folder,
# with a spec beside it that compiles the same variants (taot/cache_import.py), then generate the
# library's sources (the C++ `taot gen`), holding the output folder's lock throughout.
import json
import re
import sys
from pathlib import Path

from ..cli import add_json_flag, add_no_wait_flag, json_document
from ..errors import TaotError
from ..compile.ir_files import DEFAULT_MODE, MODES
from ..compile.output_lock import OutputLock

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def add_arguments(parser):
    parser.add_argument("cache", metavar="DIR", help="the Triton cache folder (TRITON_CACHE_DIR, ~/.triton/cache)")
    parser.add_argument("-o", "--output", metavar="OUTDIR", required=True,
                        help="output folder: manifest.json, artifacts/, LIBRARY.toml and the library's sources")
    parser.add_argument("--name", metavar="LIBRARY",
                        help="the library's name (an identifier; default: the output folder's name)")
    parser.add_argument("--kernel", action="append", default=[], metavar="NAME",
                        help="import only this function's entries (repeatable, or comma-separated)")
    parser.add_argument("--grid", action="append", default=[], metavar="[KERNEL=]X,Y,Z",
                        help="the grid, as a spec's grid entries over the kernel's int arguments and config "
                             "fields, e.g. 'cdiv(n, BLOCK),1,1'; KERNEL= gives one kernel's (repeatable); a kernel "
                             "given none has no grid of its own: every launch gives it")
    parser.add_argument("--no-source", action="store_true",
                        help="do not read the kernels' Python files: import every entry from its IR alone (no "
                             "constexpr values; keeps entries that do not match the source as it is now)")
    parser.add_argument("--ir", choices=MODES, default=DEFAULT_MODE,
                        help="keep the IR stages compressed, plain or not at all (default: %(default)s)")
    parser.add_argument("--python", action="store_true", help="also generate the Python module (it loads through taot's binding, taot._native)")
    add_no_wait_flag(parser)
    add_json_flag(parser, "the result")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")


def check(parser, arguments):
    """Usage errors the parser cannot see alone (exit 2)."""
    from ..workbench.cache_import import parse_grid_option
    if arguments.name is None:
        arguments.name = _library_name(Path(arguments.output).resolve().name)
    elif not IDENTIFIER.fullmatch(arguments.name):
        parser.error(f"--name: expected an identifier ([A-Za-z_][A-Za-z0-9_]*), got {arguments.name!r}")
    arguments.kernel = [name for value in arguments.kernel for name in value.split(",") if name]
    grids = {}
    for text in arguments.grid:
        try:
            kernel, entries = parse_grid_option(text)
        except ValueError as problem:
            parser.error(f"--grid: {problem}")
        if kernel in grids:
            parser.error(f"--grid: {'kernel ' + kernel if kernel else 'the grid for every kernel'} is given twice")
        grids[kernel] = entries
    arguments.grids = grids


def _library_name(folder_name):
    name = re.sub(r"[^A-Za-z0-9_]", "_", folder_name)
    return name if IDENTIFIER.fullmatch(name) else f"lib_{name}"


def run(arguments):
    from ..workbench.cache_import import import_cache, select_entries
    from ..workbench.triton_cache import CacheProblem, read_cache
    from .build import run_gen, taot_binary
    taot_binary()  # before any work: a missing `taot` for the gen step is said first

    say = (lambda line: None) if arguments.quiet or arguments.json else \
        (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        contents = read_cache(arguments.cache)
    except CacheProblem as problem:
        raise TaotError(str(problem)) from None
    entries = select_entries(contents, arguments.kernel)
    output = Path(arguments.output)
    with OutputLock(output, wait=not arguments.no_wait, notice=say):
        say(f"[1/2] import {len(entries)} entries of {arguments.cache} -> {output}")
        result = import_cache(entries, output, arguments.name, arguments.grids, ir=arguments.ir,
                              cache_label=arguments.cache, notice=say, use_source=not arguments.no_source)
        for key, reason in contents.skipped:
            say(f"note: skipped {key}: {reason}")
        for note in result.notes:
            say(f"note: {note}")
        say(f"[2/2] taot gen {result.manifest_path} -> {output}")
        code = run_gen(result.manifest_path, output, python=arguments.python,
                       quiet=arguments.quiet or arguments.json)
    if code != 0:
        return code
    if arguments.json:
        print(json.dumps(json_document("import-cache", _as_json(result, contents)), indent=2))
    else:
        say(f"library {result.library}: {result.manifest_path}; spec: {result.spec_path}")
    return 0


def _as_json(result, contents):
    return {
        "library": result.library,
        "manifest": str(result.manifest_path),
        "spec": str(result.spec_path),
        "kernels": {kernel.name: {"exact": kernel.exact, "reason": kernel.reason,
                                  "targets": [target.name for target in kernel.kernel.targets],
                                  "variants": [variant.id for variant in kernel.variants],
                                  "entries": sorted(placement.entry.key for placement in kernel.placements)}
                    for kernel in result.kernels},
        "notes": list(result.notes),
        "skipped": [{"entry": key, "reason": reason} for key, reason in contents.skipped],
        "removed": [str(path) for path in result.removed_dirs],
    }
