# Profiles of taot launches (`taot profile`, docs/profile.md): the traces the runtime writes under
# $TAOT_PROFILE read back, the tree of library -> kernel -> variant with counts, GPU times, the
# steps that chose the variants and, from bench files' call_shape and formulas, FLOPs and bytes;
# printed as an indented text tree, as JSON, and written as hatchet JSON in Proton's layout, which
# proton-viewer reads. No GPU; pure Python.
import collections
import dataclasses
import json
import math
import os
import shlex
import tempfile
from pathlib import Path

from ..measure import stats
from ..errors import BenchFileError, TaotError
from ..fsutil import write_atomically

TRACE_SCHEMA = "taot.profile.trace"
TRACE_VERSION = 1
REPORT_SCHEMA = "taot.profile"
REPORT_VERSION = 1
# Proton's names (triton/profiler: KernelMetric's value names, LaunchHook's flexible metrics): a
# kernel frame's time and count, its device, and the FLOPs per precision width and bytes that
# proton-viewer derives rates from (tflop16/s, gbyte/s, util).
TIME_METRIC = "time (ns)"
COUNT_METRIC = "count"
# The FLOP metric of each bench-file precision (stats.PEAK_KINDS): Proton names FLOPs by the width
# of their operands; FLOPs of no stated precision are plain "flops".
FLOPS_METRICS = {"fp64": "flops64", "fp32": "flops32", "tf32": "flops32", "fp16": "flops16", "bf16": "flops16",
                 "fp8": "flops8", "int8": "flops8"}
PLAIN_FLOPS = "flops"
BYTES_METRIC = "bytes"
DEVICE_TYPE = "CUDA"
KINDS = ("root", "library", "kernel", "variant")


@dataclasses.dataclass(frozen=True)
class Launch:
    """One launch of a trace: the kernel, the variant and the step that chose it, the grid, stream
    and device, its scalar arguments by name (`args`) and its pointers' dtypes by name (`dtypes`,
    spec names; None for a None pointer), its GPU time (None when not measured: a failed launch,
    one captured into a CUDA graph, a driver without event timing) and its status."""
    library: str
    kernel: str
    variant: str
    variant_index: int
    step: str
    grid: tuple
    stream: str
    device: int
    args: dict
    dtypes: dict
    ms: float
    status: str
    captured: bool = False

    @property
    def ok(self):
        return self.status == "TAOT_OK"

    def call_arguments(self):
        """What a bench file's call_shape(args) gets: scalar values and pointer dtypes, by name."""
        return {**self.args, **self.dtypes}


@dataclasses.dataclass
class Trace:
    """What one or more processes recorded: their launches in the order they began, the devices
    (ordinal as a string -> name, arch, num_sms, clock rates, bus width), the problems the runtime
    reported while profiling, and how many processes wrote traces."""
    launches: list = dataclasses.field(default_factory=list)
    devices: dict = dataclasses.field(default_factory=dict)
    errors: list = dataclasses.field(default_factory=list)
    processes: int = 0

    @property
    def device_name(self):
        """The device of the first launch (or the first device), None when none is known."""
        if self.launches and str(self.launches[0].device) in self.devices:
            return self.devices[str(self.launches[0].device)].get("name")
        return next((device.get("name") for device in self.devices.values()), None)


def read_trace(path):
    """The trace the runtime wrote at `path` (schema taot.profile.trace, version 1). TaotError names
    the file and what is wrong with it."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise TaotError(f"{path}: not a taot profile trace: not valid JSON ({error}); the program may have been "
                        f"stopped while the runtime wrote it") from None
    if not isinstance(data, dict) or data.get("schema") != TRACE_SCHEMA:
        raise TaotError(f"{path}: not a taot profile trace (expected schema {TRACE_SCHEMA!r})")
    if data.get("version") != TRACE_VERSION:
        raise TaotError(f"{path}: trace version {data.get('version')!r}; this taot reads version {TRACE_VERSION}")
    launches = []
    for index, entry in enumerate(data.get("launches", [])):
        try:
            launches.append(Launch(
                library=entry["library"], kernel=entry["kernel"], variant=entry["variant"],
                variant_index=int(entry["variant_index"]), step=entry["step"], grid=tuple(entry["grid"]),
                stream=entry["stream"], device=int(entry["device"]), args=dict(entry["args"]),
                dtypes=dict(entry["dtypes"]), ms=entry["ms"], status=entry["status"],
                captured=bool(entry.get("captured", False))))
        except (KeyError, TypeError, ValueError) as error:
            raise TaotError(f"{path}: launch {index}: not a launch record ({type(error).__name__}: {error})") from None
    return Trace(launches, dict(data.get("devices", {})), list(data.get("errors", [])), 1)


def read_traces(paths):
    """The traces at `paths` (one per process) as one Trace: launches of each process in order,
    the processes in the order given."""
    merged = Trace()
    for path in paths:
        trace = read_trace(path)
        merged.launches.extend(trace.launches)
        for ordinal, device in trace.devices.items():
            merged.devices.setdefault(ordinal, device)
        merged.errors.extend(error for error in trace.errors if error not in merged.errors)
        merged.processes += 1
    return merged


class Rates:
    """FLOPs and bytes of launches from bench files (docs/bench-file.md, call_shape): a launch of a
    kernel some file describes (and whose LIBRARY, when given, is the launch's) gets
    call_shape(args), then flops, bytes and flops_dtype of that shape. A file whose function fails
    gives no rates for that kernel, and `notes` says why (once per kernel)."""

    def __init__(self, bench_files=()):
        self._kernels = {}
        for bench in bench_files:
            for kernel in bench.kernels:
                self._kernels.setdefault((bench.library, kernel.name), kernel)
        self._failed = set()
        self.notes = []

    def of(self, launch):
        """(FLOP metric name, FLOPs, bytes) of `launch`; None when no file gives its shape. The FLOPs
        or bytes are None when the file has no such formula."""
        kernel = self._kernels.get((launch.library, launch.kernel)) or self._kernels.get((None, launch.kernel))
        if kernel is None or kernel.call_shape is None or (launch.library, launch.kernel) in self._failed:
            return None
        try:
            shape = kernel.shape_of_call(launch.call_arguments())
            flops, moved, precision = kernel.flops_of(shape), kernel.bytes_of(shape), kernel.flops_dtype_of(shape)
        except BenchFileError as error:
            self._failed.add((launch.library, launch.kernel))
            self.notes.append(f"no rates for {launch.library}.{launch.kernel}: {error}")
            return None
        return FLOPS_METRICS.get(precision, PLAIN_FLOPS), flops, moved


@dataclasses.dataclass
class Node:
    """A scope of the tree: the launches under it, counted (all of them), timed (those with a time:
    `timed`, their total, least and most ns), the steps that chose their variants, and the FLOPs
    (per Proton metric name) and bytes of the timed ones that a bench file describes. A variant's
    `device` is the device its launches ran on."""
    name: str
    kind: str
    children: dict = dataclasses.field(default_factory=dict)
    count: int = 0
    timed: int = 0
    time_ns: float = 0.0
    min_ns: float = None
    max_ns: float = None
    failed: int = 0
    captured: int = 0
    steps: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    flops: dict = dataclasses.field(default_factory=dict)
    bytes: float = None
    device: int = None

    @property
    def avg_ns(self):
        return self.time_ns / self.timed if self.timed else None

    @property
    def total_flops(self):
        return sum(self.flops.values()) if self.flops else None

    @property
    def tflops(self):
        return stats.tflops(self.total_flops, self.time_ns * 1e-6 if self.timed else None)

    @property
    def gbps(self):
        return stats.gbps(self.bytes, self.time_ns * 1e-6 if self.timed else None)

    def ordered_children(self):
        """Children by GPU time, most first (then by count, then by name)."""
        return sorted(self.children.values(), key=lambda child: (-child.time_ns, -child.count, child.name))

    def add(self, launch, rate):
        self.count += 1
        self.steps[launch.step] += 1
        self.failed += not launch.ok
        self.captured += launch.captured
        if launch.ms is None:
            return
        ns = launch.ms * 1e6
        self.timed += 1
        self.time_ns += ns
        self.min_ns = ns if self.min_ns is None else min(self.min_ns, ns)
        self.max_ns = ns if self.max_ns is None else max(self.max_ns, ns)
        if rate is not None:
            metric, flops, moved = rate
            if flops is not None:
                self.flops[metric] = self.flops.get(metric, 0) + flops
            if moved is not None:
                self.bytes = (self.bytes or 0) + moved


def build_tree(launches, rates=None):
    """The root Node of `launches`: root -> library -> kernel -> variant (per device, when the
    launches ran on several). `rates` (a Rates) gives FLOPs and bytes."""
    root = Node("ROOT", "root")
    several_devices = len({launch.device for launch in launches}) > 1
    for launch in launches:
        rate = rates.of(launch) if rates is not None else None
        variant_name = f"{launch.variant} (device {launch.device})" if several_devices else launch.variant
        path = ((launch.library, "library"), (launch.kernel, "kernel"), (variant_name, "variant"))
        node = root
        node.add(launch, rate)
        for name, kind in path:
            node = node.children.setdefault(name, Node(name, kind))
            node.add(launch, rate)
        node.device = launch.device
    return root


# ---- hatchet JSON (Proton's layout) ----

def hatchet(root, devices):
    """The tree as Proton writes its hatchet file: [tree, device info]. Every frame is
    {"frame": {"name", "type": "function"}, "metrics", "children"}; variants (the leaves) carry
    Proton's kernel metrics ("time (ns)", "count", "device_id", "device_type") and the FLOP and
    byte metrics ("flops16", ..., "bytes"); the root has zero placeholders of them all (as Proton
    writes its root), which makes hatchet sum them into every parent ("flops16 (inc)"), so that
    proton-viewer derives rates for libraries and kernels too. Device info is {"CUDA": {ordinal: {"arch",
    "num_sms", "clock_rate", "memory_clock_rate", "bus_width"}}} for the devices used."""

    def frame(node):
        if node.kind == "variant":
            metrics = {COUNT_METRIC: node.count, TIME_METRIC: int(round(node.time_ns)),
                       "device_id": str(node.device), "device_type": DEVICE_TYPE}
            metrics.update(node.flops)
            if node.bytes is not None:
                metrics[BYTES_METRIC] = node.bytes
        elif node.kind == "root":  # hatchet sums into parents the metrics the root has
            metrics = {COUNT_METRIC: 0, TIME_METRIC: 0, **{metric: 0 for metric in sorted(node.flops)}}
            if node.bytes is not None:
                metrics[BYTES_METRIC] = 0
        else:
            metrics = {}
        return {"frame": {"name": node.name, "type": "function"}, "metrics": metrics,
                "children": [frame(child) for child in node.ordered_children()]}

    used = sorted({str(node.device) for node in _variants(root)}, key=int)
    info = {}
    for ordinal in used:
        device = devices.get(ordinal, {})
        info[ordinal] = {key: device.get(key, 0) for key in ("clock_rate", "memory_clock_rate", "bus_width",
                                                             "arch", "num_sms")}
        info[ordinal]["arch"] = str(info[ordinal]["arch"])
    return [frame(root), {DEVICE_TYPE: info} if info else {}]


def check_hatchet_path(path):
    """That write_hatchet(path, ...) can write: `path` is not a folder, and a temporary file can be
    created and removed beside it (as the atomic write does). For before the program runs, which may
    run long; TaotError naming the path otherwise."""
    path = Path(path)
    if path.is_dir():
        raise TaotError(f"{path}: is a folder, not a hatchet file to write")
    folder = path.parent
    if not folder.is_dir():
        raise TaotError(f"{path}: cannot be written: its folder {folder} does not exist")
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=path.name + ".", suffix=".tmp")
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise TaotError(f"{path}: cannot be written in {folder} ({error.strerror or error})") from None


def write_hatchet(path, root, devices):
    """Write hatchet(root, devices) to `path` (atomically), for proton-viewer."""
    write_atomically(path, (json.dumps(hatchet(root, devices), indent=1) + "\n").encode())


def _variants(node):
    if node.kind == "variant":
        yield node
    for child in node.children.values():
        yield from _variants(child)


# ---- reports ----

def node_json(node):
    """A node and its children as the JSON report shows them (times in ns, rates in TFLOP/s and
    GB/s; null where unknown)."""
    return {"name": node.name, "kind": node.kind, "count": node.count, "timed": node.timed,
            "time_ns": node.time_ns, "avg_ns": node.avg_ns, "min_ns": node.min_ns, "max_ns": node.max_ns,
            "failed": node.failed, "captured": node.captured, "steps": dict(node.steps.most_common()),
            "flops": dict(node.flops), "bytes": node.bytes, "tflops": node.tflops, "gbps": node.gbps,
            **({"device": node.device} if node.kind == "variant" else {}),
            "children": [node_json(child) for child in node.ordered_children()]}


def report_json(root, trace, program, outcome, notes):
    """The report of `taot profile --json` (schema taot.profile, version 1)."""
    return {"schema": REPORT_SCHEMA, "version": REPORT_VERSION, "program": list(program), "outcome": outcome,
            "device": trace.device_name, "processes": trace.processes, "launches": root.count,
            "timed": root.timed, "notes": list(notes), "tree": node_json(root)}


COLUMNS = ("time %", "count", "total ms", "avg us", "min us", "max us", "TFLOP/s", "GB/s")


def text_tree(root):
    """The tree as indented text: one line per library, kernel and variant with its share of the
    GPU time, count, total, average, least and most time, rates and the steps that chose it."""
    rows = []

    def walk(node, depth):
        for child in node.ordered_children():
            share = 100.0 * child.time_ns / root.time_ns if root.time_ns > 0 else None
            cells = [_number(share, ".1f"), str(child.count), _number(child.time_ns * 1e-6 if child.timed else None, ".3f"),
                     _number(_us(child.avg_ns), ".2f"), _number(_us(child.min_ns), ".2f"),
                     _number(_us(child.max_ns), ".2f"), _number(child.tflops, ".3g"), _number(child.gbps, ".4g")]
            steps = ", ".join(f"{step} {count}" for step, count in child.steps.most_common())
            rows.append(("  " * depth + child.name, cells, steps))
            walk(child, depth + 1)

    walk(root, 0)
    name_width = max([len("name")] + [len(name) for name, _, _ in rows])
    widths = [max([len(title)] + [len(cells[c]) for _, cells, _ in rows]) for c, title in enumerate(COLUMNS)]
    lines = ["  ".join([f"{'name':<{name_width}}"] + [f"{title:>{width}}" for title, width in zip(COLUMNS, widths)]
                       + ["chosen by"])]
    for name, cells, steps in rows:
        lines.append("  ".join([f"{name:<{name_width}}"] + [f"{cell:>{width}}" for cell, width in zip(cells, widths)]
                               + [steps]).rstrip())
    return "\n".join(lines)


def summary_line(root, trace, program, outcome):
    """'python3 prog.py exited with code 0: 1,204 launches of 3 kernels (5 variants) in 1 library,
    12.345 ms of GPU time on NVIDIA H100 80GB HBM3'."""
    command = shlex.join(program)
    if root.count == 0:
        return f"{command} {outcome}: no taot launches (no kernel of a taot library ran)"
    kernels = sum(len(library.children) for library in root.children.values())
    variants = sum(1 for _ in _variants(root))
    where = f" on {trace.device_name}" if trace.device_name else ""
    text = (f"{command} {outcome}: {root.count:,} launch{'es' if root.count != 1 else ''} of {kernels} "
            f"kernel{'s' if kernels != 1 else ''} ({variants} variant{'s' if variants != 1 else ''}) in "
            f"{len(root.children)} librar{'ies' if len(root.children) != 1 else 'y'}, "
            f"{root.time_ns * 1e-6:.3f} ms of GPU time{where}")
    if trace.processes > 1:
        text += f", from {trace.processes} processes"
    return text


def untimed_note(root):
    """Why some launches have no time, or None when all have one."""
    if root.timed == root.count:
        return None
    parts = []
    if root.failed:
        parts.append(f"{root.failed} failed")
    if root.captured:
        parts.append(f"{root.captured} captured into CUDA graphs")
    reason = f" ({', '.join(parts)})" if parts else ""
    return f"{root.count - root.timed} of {root.count} launches have no time{reason}: counted, not timed"


def _us(ns):
    return None if ns is None else ns * 1e-3


def _number(value, spec):
    return "" if value is None or (isinstance(value, float) and not math.isfinite(value)) else format(value, spec)
