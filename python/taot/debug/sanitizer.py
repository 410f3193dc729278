# `taot sanitize`'s engine: running a command under NVIDIA's compute-sanitizer and reading its report.
#
# What a caching allocator hides: torch (and others) carve tensors out of larger cached blocks, so
# an access past a tensor's end usually lands in memory the process owns and memcheck, which knows
# only the driver's allocations, says nothing. The command turns torch's cache off
# (PYTORCH_NO_CUDA_MEMORY_CACHING=1) so that every tensor is its own allocation of its own size.
import dataclasses
import os
import re
import shutil
from pathlib import Path

from ..errors import TaotError

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# Environment for the sanitized program: each tensor its own driver allocation (see above).
ENVIRONMENT = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}

PADDING_BYTES = 512  # memcheck's --padding: bytes of no-allocation after each allocation
_PREFIX = re.compile(r"^========= ?(.*)$")
# "Invalid __global__ write of size 4 bytes", "Race reported between Write access at ...",
# "Host API uninitialized memory access" (initcheck: a copy reading memory nothing wrote),
# "Uninitialized __global__ memory read of size 4 bytes", "Barrier error detected. ..."
_HEADLINE = re.compile(r"^(Invalid .*|Uninitialized .*|Host API .*|.*[Rr]ace reported.*|Barrier error.*|"
                       r"Program hit .*|Malformed .*|Misaligned .*|Out-of-range .*|Error: .*)$")
# "at oob_kernel+0x1d0 in /path/kernels.py:12", "at 0x1d0 in /path/kernels.py:12 in oob_kernel"
_AT = re.compile(r"^\s*at (?:(?P<function>[A-Za-z_][\w]*)\+0x[0-9a-fA-F]+|0x[0-9a-fA-F]+)"
                 r"(?: in (?P<file>[^:\s]+):(?P<line>\d+))?(?: in (?P<function2>[A-Za-z_]\w*))?")
_SUMMARY = re.compile(r"^ERROR SUMMARY: (\d+) errors?")


@dataclasses.dataclass(frozen=True)
class Finding:
    """One report of compute-sanitizer: what (its headline), in which kernel function, where (the
    source file and line from the cubin's line info; None without it)."""
    kind: str
    function: str = None
    file: str = None
    line: int = None

    def where(self):
        location = f"{self.file}:{self.line}" if self.file else "no line info"
        return f"{self.function or '?'} at {location}"


def parse_report(text):
    """(findings in order, the ERROR SUMMARY count or None) from compute-sanitizer's output."""
    findings, summary, pending = [], None, None
    for raw in text.splitlines():
        match = _PREFIX.match(raw)
        if not match:
            continue
        line = match.group(1).rstrip()
        stripped = line.strip()
        summary_match = _SUMMARY.match(stripped)
        if summary_match:
            summary = int(summary_match.group(1))
            continue
        if _HEADLINE.match(stripped) and not raw.startswith("=========     "):
            if pending is not None:
                findings.append(pending)
            pending = Finding(stripped)
            continue
        at = _AT.match(stripped)
        if at and pending is not None and pending.function is None:
            pending = Finding(pending.kind, at.group("function") or at.group("function2"), at.group("file"),
                              int(at.group("line")) if at.group("line") else None)
    if pending is not None:
        findings.append(pending)
    return findings, summary


def summarize(findings):
    """[(Finding, count)] of distinct findings, most frequent first."""
    counts = {}
    for finding in findings:
        counts[finding] = counts.get(finding, 0) + 1
    return sorted(counts.items(), key=lambda item: -item[1])


def find_sanitizer():
    """The compute-sanitizer executable: on PATH, else under $CUDA_HOME or /usr/local/cuda."""
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / "compute-sanitizer").is_file():
            return str(Path(root) / "bin" / "compute-sanitizer")
    raise TaotError("compute-sanitizer not found (it ships with the CUDA toolkit): put it on PATH or set CUDA_HOME")


def sanitizer_command(sanitizer, tool, program):
    """compute-sanitizer's command line around `program` (a list)."""
    command = [sanitizer, "--tool", tool, "--target-processes", "all", "--print-limit", "10000",
               "--show-backtrace", "no"]
    if tool == "memcheck":
        # Allocations can be adjacent, so a store one element past one lands in the next, which memcheck
        # accepts: padding after every allocation makes it an access to no allocation.
        command += ["--leak-check", "no", "--padding", str(PADDING_BYTES)]
    return command + list(program)
