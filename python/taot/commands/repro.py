# `taot repro DIR -o OUT --library LIBDIR`: turn one launch that $TAOT_RECORD=DIR recorded
# (docs/debug.md) into a standalone CMake project: OUT/CMakeLists.txt and OUT/replay.cpp, rendered
# from the templates in taot/templates/repro, and OUT/data, the recorded buffers. The program
# replays the launch through the library generated in LIBDIR and compares the buffers bitwise.
# Everything the program would index by (buffer files and sizes, buffer numbers and offsets, the
# variant index) is checked against the recording and the library's manifest before anything is written.
import json
import shutil
import string
import sys
from pathlib import Path

from ..cli import add_no_wait_flag
from ..compile.output_lock import OutputLock
from ..spec.dtypes import DTYPES
from ..errors import TaotError
from ..fsutil import write_if_changed
from ..library.built import MANIFEST, read_manifest

SCHEMA, VERSION = "taot.repro", 1
TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "repro"


def add_arguments(parser):
    parser.add_argument("recording", metavar="DIR", help="the folder $TAOT_RECORD named: launch.json and its buffers")
    parser.add_argument("-o", "--output", metavar="OUT", required=True,
                        help="folder for CMakeLists.txt, replay.cpp and the data (made if missing)")
    parser.add_argument("--library", metavar="LIBDIR", required=True,
                        help="the folder taot build wrote for the recorded library (its CMakeLists.txt)")
    add_no_wait_flag(parser, "OUT")
    parser.add_argument("-q", "--quiet", action="store_true", help="no notes on stderr (waiting for OUT's lock)")
    parser.add_argument("--taot-source", metavar="DIR",
                        help="taot source checkout whose runtime the program links (default: the one this taot "
                             "runs from, if it is a checkout; else an installed taot)")


def run(arguments):
    recording = Path(arguments.recording)
    launch = load_recording(recording / "launch.json")
    check_buffer_files(recording, launch)
    library_dir = Path(arguments.library).resolve()
    if not (library_dir / "CMakeLists.txt").is_file() or not (library_dir / f"{launch['library']}_c.h").is_file():
        raise TaotError(f"{library_dir} is not a folder taot build wrote for library '{launch['library']}' "
                        f"(no CMakeLists.txt and {launch['library']}_c.h)")
    check_variant(launch, library_dir)
    source_dir = Path(arguments.taot_source).resolve() if arguments.taot_source else default_source_dir()
    out = Path(arguments.output)
    def notice(line):
        if not arguments.quiet:
            print(line, file=sys.stderr, flush=True)

    with OutputLock(out, wait=not arguments.no_wait, notice=notice):
        return _write_program(recording, launch, library_dir, source_dir, out)


def _write_program(recording, launch, library_dir, source_dir, out):
    """The replay program's folder `out` (locked): the data, launch.json, CMakeLists.txt, replay.cpp."""
    (out / "data").mkdir(parents=True, exist_ok=True)
    for buffer in launch["buffers"]:
        for key in ("file", "after"):
            if buffer.get(key):
                copy_if_changed(recording / buffer[key], out / "data" / buffer[key])
    write_if_changed(out / "data" / "launch.json", (recording / "launch.json").read_text())
    values = template_values(launch, recording / "launch.json", library_dir, source_dir)
    for name in ("CMakeLists.txt", "replay.cpp"):
        template = string.Template((TEMPLATES / f"{name}.in").read_text())
        write_if_changed(out / name, template.substitute(values))
    print(f"wrote {out}: cmake -S {out} -B {out}/build && cmake --build {out}/build && {out}/build/replay")
    return 0


def load_recording(path):
    try:
        launch = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise TaotError(f"{path} does not exist: record a launch first (TAOT_RECORD=DIR; see docs/debug.md)") from None
    except json.JSONDecodeError as error:
        raise TaotError(f"{path}: not JSON ({error})") from None
    if not isinstance(launch, dict) or launch.get("schema") != SCHEMA or launch.get("version") != VERSION:
        raise TaotError(f"{path}: not a recorded launch (schema '{SCHEMA}', version {VERSION})")
    if launch.get("status") is None:
        raise TaotError(f"{path}: the recorded launch never ended (the process stopped during it); its inputs are "
                        "there but not what it wrote")
    buffers = launch.get("buffers")
    if not isinstance(buffers, list):
        raise TaotError(f"{path}: expected a list of buffers, got {buffers!r}")
    for number, buffer in enumerate(buffers):
        if not (isinstance(buffer, dict) and isinstance(buffer.get("file"), str) and is_count(buffer.get("bytes"))):
            raise TaotError(f"{path}: buffers[{number}]: expected a file name and a byte count, got {buffer!r}")
    for arg in launch["args"]:
        if arg["kind"] == "tensordesc":
            raise TaotError(f"{path}: argument {arg['name']} is a tensor descriptor; repro cannot replay those yet")
        if arg["kind"] == "pointer" and arg.get("buffer") is None and "address" in arg:
            raise TaotError(f"{path}: argument {arg['name']} points outside every allocation the recorder could "
                            f"find ({arg['address']}); see the file's errors")
        if arg["kind"] == "pointer" and arg.get("buffer") is not None:
            check_pointer(path, arg, buffers)
    if not is_count(launch.get("variant_index")):
        raise TaotError(f"{path}: variant_index: expected a variant's index (0 or more), got "
                        f"{launch.get('variant_index')!r}")
    return launch


def is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def check_pointer(path, arg, buffers):
    """A pointer argument names one of the recorded buffers and an offset inside it (replay.cpp
    indexes its allocations by the buffer number)."""
    number, offset = arg["buffer"], arg.get("offset")
    if not is_count(number) or number >= len(buffers):
        raise TaotError(f"{path}: argument {arg['name']} points into buffer {number!r}, but the recording has "
                        f"{counted(len(buffers), 'buffer')}")
    size = buffers[number]["bytes"]
    if not is_count(offset) or offset >= size:
        raise TaotError(f"{path}: argument {arg['name']} points at byte offset {offset!r} of buffer {number} "
                        f"({buffers[number]['file']}), which has {size} bytes")


def counted(count, noun):
    """'2 buffers (0 to 1)', '1 variant (0)', 'no variants'."""
    if count == 0:
        return f"no {noun}s"
    return f"{count} {noun}{'s' if count > 1 else ''} ({'0' if count == 1 else f'0 to {count - 1}'})"


def check_buffer_files(recording, launch):
    """Every buffer file (and after-file) is there with the size launch.json records for it."""
    for buffer in launch["buffers"]:
        for key in ("file", "after"):
            if not buffer.get(key):
                continue
            file = recording / buffer[key]
            try:
                size = file.stat().st_size
            except FileNotFoundError:
                raise TaotError(f"{file}: missing; {recording / 'launch.json'} records it with "
                                f"{buffer['bytes']} bytes") from None
            if size != buffer["bytes"]:
                raise TaotError(f"{file}: {size} bytes, but {recording / 'launch.json'} records {buffer['bytes']} "
                                "(the file is truncated or not from this recording)")


def check_variant(launch, library_dir):
    """The recorded kernel is in the library's manifest and has a variant at the recorded index."""
    manifest = read_manifest(library_dir, advice="give the folder taot build wrote for the recorded library")
    kernels = {kernel["name"]: kernel for kernel in manifest["kernels"]}
    kernel = kernels.get(launch["kernel"])
    if kernel is None:
        raise TaotError(f"{library_dir / MANIFEST}: library {manifest['library']} has no kernel "
                        f"'{launch['kernel']}' (its kernels: {', '.join(kernels) or 'none'}); it is not the one "
                        "recorded")
    count, index = len(kernel["variants"]), launch["variant_index"]
    if index >= count:
        raise TaotError(f"{library_dir / MANIFEST}: the recorded variant index {index} ({launch['variant']}) is "
                        f"not in the library: its {kernel['name']} has {counted(count, 'variant')}; "
                        "it is not the one recorded")


def default_source_dir():
    checkout = Path(__file__).resolve().parents[3]
    return checkout if (checkout / "runtime" / "CMakeLists.txt").is_file() else None


def copy_if_changed(source, target):
    if target.is_file() and target.stat().st_size == source.stat().st_size and target.read_bytes() == source.read_bytes():
        return
    shutil.copyfile(source, target)


def c_string(text):
    return json.dumps(str(text))  # a JSON string of ASCII text is a valid C string literal


def dtype_enumerator(name):
    if name not in DTYPES:
        raise TaotError(f"unknown dtype '{name}' in the recording")
    return f"TAOT_DTYPE_{name.upper()}"


def template_values(launch, source, library_dir, source_dir):
    buffers = "".join(
        f"    {{{c_string(b['file'])}, {b['bytes']}u, {c_string(b['after']) if b.get('after') else 'nullptr'}}},\n"
        for b in launch["buffers"])
    args = []
    for arg in launch["args"]:
        if arg["kind"] == "pointer" and arg.get("buffer") is not None:
            row = f"ArgKind::pointer, {dtype_enumerator(arg['dtype'])}, {arg['buffer']}u, {arg['offset']}u, 0"
        elif arg["kind"] == "pointer":
            row = f"ArgKind::none, {dtype_enumerator(arg['dtype'])}, 0, 0, 0"
        elif arg["kind"] == "scalar":  # a form chosen at launch: its dtype says which (none: None)
            form = "TAOT_DTYPE_UNKNOWN" if arg["dtype"] == "none" else dtype_enumerator(arg["dtype"])
            row = f"ArgKind::scalar, {form}, 0, 0, {arg['bits']}u"
        else:
            row = f"ArgKind::scalar, TAOT_DTYPE_UNKNOWN, 0, 0, {arg['bits']}u"
        args.append(f"    {{{c_string(arg['name'])}, {row}}},\n")
    grid = [int(g) for g in launch["grid"]]
    return {
        "source": str(source),
        "library": launch["library"],
        "kernel": launch["kernel"],
        "variant": launch["variant"],
        "variant_index": launch["variant_index"],
        "launch_index": int(launch.get("launch_index", 0)),
        "grid": ", ".join(str(g) for g in grid),
        "grid_text": "[" + ", ".join(str(g) for g in grid) + "]",
        "buffers": buffers,
        "args": "".join(args),
        "library_dir": library_dir.as_posix(),
        "source_dir": source_dir.as_posix() if source_dir else "",
    }
