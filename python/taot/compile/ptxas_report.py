# What `ptxas -v` says about a compiled kernel: registers per thread and bytes of spill stores, spill
# loads and stack frame per thread. Triton runs ptxas with -v and keeps the log only when
# knobs.nvidia.dump_ptxas_log is set, then print()s it: `recording` sets the knob around a compile
# and collects what is printed, `parse()` reads the report out of it.
import io
import re
import sys

from ..triton_api.compiler import ptxas_log_printed

# "ptxas info    : ..."; Triton runs ptxas-blackwell for sm_100 and up, which says "ptxas-blackwell info".
_INFO = r"^ptxas(?:-[\w-]+)?\s+info\s*: "
_ENTRY = re.compile(_INFO + r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(_INFO + r"Function properties for (\S+)")
_FRAME = re.compile(r"^\s*(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(_INFO + r"Used (\d+) registers")
_LOG_LINE = re.compile(r"^ptxas(?:-[\w-]+)?\s+(info|warning)\s*:|^\s*\d+ bytes stack frame, ")


class recording:
    """While active, Triton prints ptxas' -v log after each successful ptxas run, and what Python
    prints on sys.stdout is collected; on exit `text` holds it and everything but ptxas' log is passed
    on to sys.stdout. Not thread-safe (it swaps sys.stdout): one compile at a time per process."""

    def __enter__(self):
        self.printed = ptxas_log_printed()
        self.printed.__enter__()
        self.saved = sys.stdout
        self.buffer = io.StringIO()
        sys.stdout = self.buffer
        self.text = ""
        return self

    def __exit__(self, *exc):
        sys.stdout = self.saved
        self.text = self.buffer.getvalue()
        rest = without_log(self.text)
        if rest:
            sys.stdout.write(rest)
        return self.printed.__exit__(*exc)


def parse(text, function):
    """{"registers", "spill_stores", "spill_loads", "stack"} of entry function `function` as ptxas'
    log in `text` reports it, or None when the log does not report both its registers and its frame."""
    registers = frame = None
    entry = properties = None
    for line in text.splitlines():
        if match := _ENTRY.match(line):
            entry = match.group(1)
        elif match := _PROPERTIES.match(line):
            properties = match.group(1)
        elif (match := _FRAME.match(line)) and properties == function:
            frame = [int(value) for value in match.groups()]
        elif (match := _USED.match(line)) and entry == function:
            registers = int(match.group(1))
    if registers is None or frame is None:
        return None
    stack, spill_stores, spill_loads = frame
    return {"registers": registers, "spill_stores": spill_stores, "spill_loads": spill_loads, "stack": stack}


def without_log(text):
    """`text` without ptxas' log lines ("" when nothing else but blank lines remains)."""
    rest = "".join(line for line in text.splitlines(keepends=True) if not _LOG_LINE.match(line))
    return rest if rest.strip() else ""
