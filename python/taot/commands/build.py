# `taot build`: compile a spec, generate the library sources into the same folder (the C++ `taot gen`),
# and optionally build them with CMake, holding the folder's lock throughout.
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import compile as compile_command
from ..compile import depfile
from .. import IMPORT_ROOT
from ..errors import TaotError
from ..compile.output_lock import HELD_BY_PARENT, LOCK_NAME, OutputLock


# The checkout this front end runs from, when it runs from one: the generated CMakeLists then builds
# the runtime from it rather than finding an installed taot.
SOURCE_DIR = Path(__file__).resolve().parents[3]


def add_arguments(parser):
    compile_command.add_arguments(parser)
    parser.add_argument("--python", action="store_true", help="also generate the Python module (it loads through taot's binding, taot._native)")
    parser.add_argument("--tuning", action="append", default=[], metavar="[KERNEL=]FILE",
                        help="a tuned table to bake in (repeatable), as `taot gen --tuning` takes it")
    parser.add_argument("--build-library", action="store_true",
                        help="also configure and build the library with CMake into OUTDIR/build")
    parser.add_argument("--depfile", metavar="FILE",
                        help=f"write a Make-style depfile naming what the build read (the spec, kernel sources, "
                             f"the modules they import, tuned tables) as the inputs of OUTDIR/{depfile.STAMP_NAME}, "
                             "which a successful build touches: for build systems (taot_add_library uses it)")
    parser.add_argument("--library-name", metavar="NAME",
                        help="fail unless the spec's library is named NAME (taot_add_library passes its NAME)")


check = compile_command.check


def taot_binary():
    """The C++ `taot` (which runs `gen`): $TAOT_BIN, which the C++ command sets to itself, else `taot`
    on PATH."""
    chosen = os.environ.get("TAOT_BIN") or shutil.which("taot")
    if not chosen:
        raise TaotError("cannot find the taot command for `taot gen`: set TAOT_BIN or put taot on PATH")
    return chosen


def run(arguments):
    if arguments.list:
        return compile_command.run(arguments)
    taot_binary()  # before any work: a missing `taot` for the gen step is said first
    if arguments.python and arguments.build_library:
        _check_binding()
    steps = 3 if arguments.build_library else 2
    say = (lambda line: None) if arguments.quiet else (lambda line: print(line, file=sys.stderr, flush=True))
    library = compile_command.load(arguments)
    if arguments.library_name and arguments.library_name != library.name:
        raise TaotError(f"{arguments.spec}: the spec names its library {library.name!r}, but the build asks for "
                        f"{arguments.library_name!r} (--library-name, or taot_add_library's NAME): make them the same")
    output = compile_command.output_folder(library, arguments)
    with OutputLock(output, wait=not arguments.no_wait, notice=say):
        say(f"[1/{steps}] taot compile {arguments.spec} -> {output}")
        code = compile_command.run(arguments, library, lock_held=True)
        if code != 0:
            return code
        say(f"[2/{steps}] taot gen {output / 'manifest.json'} -> {output}")
        code = run_gen(output / "manifest.json", output, python=arguments.python, quiet=arguments.quiet,
                       tuning=arguments.tuning)
        if code != 0:
            return code
        if arguments.depfile:
            depfile.write(arguments.depfile, output, _inputs(library, arguments.tuning))
        if not arguments.build_library:
            return 0
        say(f"[3/3] cmake build {output / 'build'}")
        code = _build_library(output, arguments.quiet)
        if code == 0 and arguments.python:
            say(f"the Python module {library.name} is in {output / 'build'}; it loads through taot's binding, "
                f"so import it with both folders importable: PYTHONPATH={output / 'build'}{os.pathsep}{IMPORT_ROOT}")
        return code


def _check_binding():
    """A generated module loads through taot._native: refuse, before any work, to build one that
    could not be imported because this taot's binding was never built (a checkout built with
    -DTAOT_BUILD_PYTHON=OFF, say)."""
    if importlib.util.find_spec("taot._native") is None:
        raise TaotError(f"--python --build-library: taot's Python binding, taot._native, is not built in "
                        f"{IMPORT_ROOT / 'taot'}, so the module could not be imported: build it with scripts/build.sh "
                        f"(CMake target taot_native), or leave out --build-library")


def _inputs(library, tuning):
    """Every file the build read: the spec, the kernel sources and the modules they import, the
    tuned tables of the spec and of --tuning ([KERNEL=]FILE)."""
    files = {library.path} | depfile.imported_sources(
        {kernel.module.partition(".")[0] for kernel in library.kernels if kernel.module})
    for kernel in library.kernels:
        files.add(kernel.source)
        files.update(kernel.tuning)
    for table in tuning:  # as taot gen reads it: KERNEL=FILE when KERNEL is a name and no file is so called
        kernel, equals, path = table.partition("=")
        files.add(Path(path if equals and kernel.isidentifier() and not Path(table).exists() else table))
    return files


def run_gen(manifest, output, *, python=False, quiet=False, tuning=()):
    """Runs the C++ `taot gen` on `manifest` into `output`, whose lock the caller holds (gen is told so
    and does not wait for it); returns its exit code."""
    command = [taot_binary(), "gen", str(manifest), "-o", str(output)]
    command += ["--python"] * python + ["--quiet"] * quiet
    for table in tuning:
        command += ["--tuning", str(table)]
    return _run_step(command, env=dict(os.environ, **{HELD_BY_PARENT: str(Path(output) / LOCK_NAME)}))


def _run_step(command, env=None):
    try:
        return subprocess.run(command, env=env).returncode
    except OSError as error:
        raise TaotError(f"cannot run {command[0]}: {error.strerror}") from None


def installed_prefix():
    """The prefix taot is installed in (pip or cmake --install), found from the taot binary as
    PREFIX/bin/taot beside PREFIX/lib/cmake/taot; None when there is none."""
    prefix = Path(taot_binary()).resolve().parent.parent
    return prefix if (prefix / "lib" / "cmake" / "taot" / "taotConfig.cmake").exists() else None


def _build_library(folder, quiet):
    """Configures and builds `folder` with CMake into folder/build, the runtime from this checkout
    when there is one, else from the installed taot."""
    build = folder / "build"
    configure = ["cmake", "-S", str(folder), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                 f"-DPython_EXECUTABLE={sys.executable}"]  # the module is built for this Python
    if (SOURCE_DIR / "runtime" / "CMakeLists.txt").exists():
        configure.append(f"-DTAOT_SOURCE_DIR={SOURCE_DIR}")
    elif (prefix := installed_prefix()) is not None:
        configure.append(f"-DCMAKE_PREFIX_PATH={prefix}")
    if quiet:
        configure.append("--log-level=ERROR")
    code = _run_step(configure)
    return code if code != 0 else _run_step(["cmake", "--build", str(build)])
