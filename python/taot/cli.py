# `python -m taot COMMAND ...`: the commands the Python front end implements, one table. The C++
# `taot` command forwards these commands' arguments here verbatim; each command declares its options
# once, in its module under taot/commands/.
#
# Each command's one-line summary lives in the C++ command table (tools/taot/commands.cpp), which
# lists every command in `taot --help`; the options live here, in the command's module.
# A command module defines add_arguments(parser), optionally check(parser, arguments)
# for usage errors the parser cannot see, and run(arguments) -> exit code.
# run() raises TaotError (or OSError) for errors the user can fix; main() prints them. Exit codes:
# 0 success, 1 an error, 2 a usage error (argparse), 130 interrupted.
#
# The convention every command keeps (docs/workbench.md, "Every command"), written here once for
# this side and once for the C++ side (tools/taot/commands.h): errors are one "error: ..." line (a
# usage error is argparse's, exit 2); `--json` is a flag that prints one JSON document on stdout in
# place of the text, made by json_document (a file is written with -o); `-q` silences the progress
# that goes to stderr; a command that writes an output folder holds its lock (fsutil.OutputLock).
import argparse
import errno
import importlib
import os
import signal
import sys

from .errors import TaotError

# name -> module (imported only when its command runs, so that one command's imports, e.g. Triton,
# never slow another's start).
COMMANDS = {
    "compile": "taot.commands.compile",
    "build": "taot.commands.build",
    "passes": "taot.commands.passes",
    "from-ir": "taot.commands.from_ir",
    "import-cache": "taot.commands.import_cache",
    "bench": "taot.commands.bench",
    "tune": "taot.commands.tune",
    "profile": "taot.commands.profile",
    "check": "taot.commands.check",
    "repro": "taot.commands.repro",
    "sanitize": "taot.commands.sanitize",
}


# The commands that call Triton: before one starts, the installed Triton is checked against the
# releases taot supports (taot.triton_api). The others run built libraries and need none.
TRITON_COMMANDS = {"compile", "build", "passes", "from-ir", "import-cache", "check"}


def command_module(name):
    """The command's module; raises UnsupportedTriton (a TaotError) for a command in TRITON_COMMANDS
    when the Python taot runs has no Triton it supports."""
    if name in TRITON_COMMANDS:
        importlib.import_module("taot.triton_api")
    return importlib.import_module(COMMANDS[name])


JSON_SCHEMA_VERSION = 1


def add_json_flag(parser, what):
    """The command's --json: print `what` as one JSON document on stdout, in place of the text."""
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout instead of text")


def add_no_wait_flag(parser, folder="OUTDIR"):
    """The command's --no-wait: a command writing `folder` holds its lock (compile.output_lock);
    another command holding it is waited for, or with --no-wait named and the command stops."""
    parser.add_argument("--no-wait", action="store_true",
                        help=f"fail, naming the holder, when another command holds {folder} (default: wait for it)")


def json_document(command, payload):
    """`payload` (a dict) as the JSON document of `taot COMMAND --json`: its schema ("taot.COMMAND",
    a version) first. Formats of their own (taot.bench, taot.tuning, taot.profile) keep theirs."""
    return {"schema": f"taot.{command}", "schema_version": JSON_SCHEMA_VERSION, **payload}


# What an OSError's path was expected to be, by its kind; the rest say the system's words.
_EXPECTED = {
    FileExistsError: "expected nothing there, or a folder, and found a file",
    NotADirectoryError: "expected a folder, and a part of the path is a file",
    IsADirectoryError: "expected a file, and found a folder",
    FileNotFoundError: "no such file or folder",
    PermissionError: "permission denied",
}


def describe_os_error(error, output=None):
    """An OSError as one line naming the path(s) and what was wrong, without errno numbers. A write
    that failed without naming its file (a full disk while writing an open file) names the command's
    output folder `output` when it has one."""
    paths = " -> ".join(str(name) for name in (error.filename, error.filename2) if name)
    what = next((text for kind, text in _EXPECTED.items() if isinstance(error, kind)), None)
    what = what or error.strerror or str(error)
    if not paths and output is not None and error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG):
        return f"{output}: {what} (while writing there; free space and run the command again: what is done is kept)"
    return f"{paths}: {what}" if paths else what


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: taot COMMAND [options]; the Python front end's commands: {', '.join(COMMANDS)}",
              file=sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"taot: unknown command '{name}' (the front end's commands: {', '.join(COMMANDS)})", file=sys.stderr)
        return 2
    try:
        module = command_module(name)  # an unsupported Triton stops here (taot.triton_api)
    except TaotError as error:
        print(error.report(), file=sys.stderr)
        return 1
    parser = argparse.ArgumentParser(prog=f"taot {name}")
    module.add_arguments(parser)
    arguments = parser.parse_args(rest)
    if hasattr(module, "check"):
        module.check(parser, arguments)
    try:
        # The C++ `taot` starts Python with Ctrl-C blocked, so that one arriving during the
        # interpreter's start-up waits until here, where the command can stop cleanly.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        return module.run(arguments)
    except TaotError as error:
        print(error.report(), file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader went away (`taot passes x | head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing left to flush at exit
        return 0
    except OSError as error:  # a path that cannot be read or written: name it
        print(f"error: {describe_os_error(error, getattr(arguments, 'output', None))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as interrupt:  # the command says how far it got, when it can
        print(f"interrupted: {interrupt}" if str(interrupt) else "interrupted", file=sys.stderr)
        return 130
