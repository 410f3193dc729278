# Reports of a bench run from its recorded timings: a readable text table, CSV, JSON (schema
# "taot.bench", version 1; docs/bench-file.md, "Results") and a PNG plot of the sweep. No GPU;
# matplotlib is imported only when a plot is drawn.
import csv
import dataclasses
import functools
import json
import math
from pathlib import Path

from . import stats
from .benchfile import METRICS
from ..spec.keypath import describe
from ..errors import BenchFileError

SCHEMA = "taot.bench"
SCHEMA_VERSION = 1
# What an implementation is: a compiled variant of the kernel, the library's automatic choice
# (benchfile.AUTOMATIC), or one of the bench file's baselines.
KINDS = ("variant", "auto", "baseline")
METRIC_LABELS = {"tflops": "TFLOP/s", "gbps": "GB/s", "ms": "median time (ms)"}
DEFAULT_TOP_VARIANTS = 5


@dataclasses.dataclass(frozen=True)
class Record:
    """The timings of one implementation of one kernel at one shape: GPU time per call in ms, one
    sample per timed call, with the shape's FLOP and byte counts (None: not given) and the
    precision whose peak the FLOP rate is compared with (a stats.PEAK_KINDS name, or None)."""
    kernel: str
    implementation: str
    kind: str
    shape: dict
    samples_ms: tuple
    flops: float = None
    bytes: float = None
    flops_dtype: str = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"a record's kind is one of {', '.join(KINDS)}, got {self.kind!r}")
        object.__setattr__(self, "samples_ms", tuple(float(sample) for sample in self.samples_ms))
        object.__setattr__(self, "shape", dict(self.shape))
        if not self.samples_ms or not all(math.isfinite(s) and s >= 0 for s in self.samples_ms):
            raise ValueError(f"{self.kernel} {self.implementation}: samples must be finite times, 0 or more, got "
                             f"{list(self.samples_ms)}")

    @functools.cached_property
    def summary(self):
        return stats.Summary.of(self.samples_ms)

    @property
    def median_ms(self):
        return self.summary.median

    @property
    def tflops(self):
        return stats.tflops(self.flops, self.median_ms)

    @property
    def gbps(self):
        return stats.gbps(self.bytes, self.median_ms)

    def rate(self, metric, ms):
        """`metric` ("tflops", "gbps" or "ms") of a call taking `ms`."""
        if metric == "ms":
            return ms
        return stats.tflops(self.flops, ms) if metric == "tflops" else stats.gbps(self.bytes, ms)


@dataclasses.dataclass
class BenchReport:
    """The records of one bench run on one device. `axes` maps a kernel to the shape dimension its
    sweep is plotted along (benchfile.BenchFile.axes(); a kernel left out gets the one dimension that
    varies, else its first), `metrics` to what its plot shows (BenchFile.metrics(); a kernel left out:
    see metric()); `peak` gives the percentages of peak (None: not reported); `settings` says how the
    times were taken (JSON values; written to JSON as they are)."""
    device: str
    records: list
    peak: stats.DevicePeak = None
    axes: dict = dataclasses.field(default_factory=dict)
    metrics: dict = dataclasses.field(default_factory=dict)
    settings: dict = dataclasses.field(default_factory=dict)

    def kernels(self):
        """The kernels recorded, in the order of their first record."""
        return list(dict.fromkeys(record.kernel for record in self.records))

    def records_of(self, kernel):
        return [record for record in self.records if record.kernel == kernel]

    def dims(self, kernel):
        """The shape dimensions of `kernel`'s records, in the order they first appear."""
        return list(dict.fromkeys(name for record in self.records_of(kernel) for name in record.shape))

    def x_axis(self, kernel):
        if kernel in self.axes:
            return self.axes[kernel]
        dims, records = self.dims(kernel), self.records_of(kernel)
        varying = [name for name in dims if len({_key(r.shape.get(name)) for r in records}) > 1]
        return varying[0] if len(varying) == 1 else dims[0]

    def metric(self, kernel):
        """What `kernel`'s plot shows: its entry in `metrics`, else TFLOP/s when every record has a
        FLOP count, GB/s when every record has a byte count, else the time."""
        if kernel in self.metrics:
            return self.metrics[kernel]
        records = self.records_of(kernel)
        if all(r.flops is not None for r in records):
            return "tflops"
        return "gbps" if all(r.bytes is not None for r in records) else "ms"

    def percent_of_peak_flops(self, record):
        peak = self.peak.compute_tflops(record.flops_dtype) if self.peak else None
        return stats.percent_of(record.tflops, peak)

    def percent_of_peak_bandwidth(self, record):
        return stats.percent_of(record.gbps, self.peak.memory_gbps if self.peak else None)


# ---- the table ----

def format_table(report, speedup_against="torch"):
    """A readable text table per kernel: one row per (shape, implementation) in recorded order, with
    the median and p20/p80 times, the rates and percentages of peak the records allow, and the time
    of `speedup_against` (an implementation name) divided by the row's time (above 1: the row is
    faster), when that implementation was recorded at the row's shape."""
    blocks = []
    for kernel in report.kernels():
        records = report.records_of(kernel)
        dims = report.dims(kernel)
        reference = {_shape_key(r.shape): r for r in records if r.implementation == speedup_against}
        columns = [(name, "<", lambda r, name=name: _text(r.shape.get(name))) for name in dims]
        columns += [("implementation", "<", lambda r: r.implementation),
                    ("median ms", ">", lambda r: _number(r.summary.median)),
                    ("p20 ms", ">", lambda r: _number(r.summary.p20)),
                    ("p80 ms", ">", lambda r: _number(r.summary.p80))]
        optional = [("TFLOP/s", lambda r: r.tflops, _number),
                    ("% peak FLOP/s", report.percent_of_peak_flops, _percent),
                    ("GB/s", lambda r: r.gbps, _number),
                    ("% peak GB/s", report.percent_of_peak_bandwidth, _percent)]
        for title, value, form in optional:
            if any(value(r) is not None for r in records):
                columns.append((title, ">", lambda r, value=value, form=form: form(value(r))))
        if reference:
            def speedup(r):
                base = reference.get(_shape_key(r.shape))
                return "" if base is None or r.median_ms <= 0 else f"{base.median_ms / r.median_ms:.2f}x"
            columns.append((f"vs {speedup_against}", ">", speedup))
        rows = [[cell(record) for _, _, cell in columns] for record in records]
        widths = [max([len(title)] + [len(row[index]) for row in rows]) for index, (title, _, _) in enumerate(columns)]

        def line(cells):
            padded = (f"{cell:{align}{width}}" for cell, (_, align, _), width in zip(cells, columns, widths))
            return "  ".join(padded).rstrip()
        blocks.append("\n".join([_title(report, kernel, records), line([title for title, _, _ in columns])]
                                + [line(row) for row in rows]))
    return "\n\n".join(blocks) + "\n"


def _title(report, kernel, records):
    parts = []
    if report.peak is not None:
        if report.peak.memory_gbps is not None and any(r.bytes is not None for r in records):
            parts.append(f"{report.peak.memory_gbps:g} GB/s")
        for kind in dict.fromkeys(r.flops_dtype for r in records if r.flops_dtype and r.flops is not None):
            if report.peak.compute_tflops(kind) is not None:
                parts.append(f"{report.peak.compute_tflops(kind):g} TFLOP/s {kind}")
    peak = f"\npeak {', '.join(parts)} ({report.peak.source})" if parts else ""
    return f"{kernel} on {report.device}{peak}"


def _number(value):
    """Four significant digits, no exponent for the values a bench shows (1e-4 .. 1e6)."""
    if value is None:
        return ""
    if value == 0:
        return "0"
    if abs(value) >= 1e4:
        return f"{value:.0f}"
    return f"{value:.4g}" if abs(value) >= 1e-4 else f"{value:.3e}"


def _percent(value):
    return "" if value is None else f"{value:.1f}"


def _text(value):
    return "" if value is None else str(value)


def _key(value):
    return (type(value).__name__, value)


def _shape_key(shape):
    return tuple(sorted((name, _key(value)) for name, value in shape.items()))


# ---- CSV ----

CSV_COLUMNS = ("kernel", "implementation", "kind")
CSV_MEASURES = ("samples", "min_ms", "p20_ms", "median_ms", "p80_ms", "max_ms", "mean_ms", "flops", "bytes",
                "flops_dtype", "tflops", "gbps", "percent_of_peak_flops", "percent_of_peak_bandwidth")


def csv_header(report):
    """kernel, implementation, kind, then one column per shape dimension (over every kernel, in
    first-seen order; a dimension named like another column is written "shape.NAME"), then
    CSV_MEASURES."""
    fixed = set(CSV_COLUMNS + CSV_MEASURES)
    dims = list(dict.fromkeys(name for record in report.records for name in record.shape))
    return list(CSV_COLUMNS) + [f"shape.{name}" if name in fixed else name for name in dims] + list(CSV_MEASURES), dims


def write_csv(report, path):
    """One row per record (floats at full precision, empty cells for unknown values)."""
    header, dims = csv_header(report)
    with open(path, "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(header)
        for record in report.records:
            summary = record.summary
            measures = [summary.count, summary.min, summary.p20, summary.median, summary.p80, summary.max,
                        summary.mean, record.flops, record.bytes, record.flops_dtype, record.tflops, record.gbps,
                        report.percent_of_peak_flops(record), report.percent_of_peak_bandwidth(record)]
            writer.writerow([record.kernel, record.implementation, record.kind]
                            + [_csv_cell(record.shape.get(name)) for name in dims]
                            + [_csv_cell(value) for value in measures])


def _csv_cell(value):
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


# ---- JSON ----

def to_json(report):
    """The report as JSON data (schema "taot.bench", version 1, in docs/bench-file.md): the records
    with their samples and, derived from them for readers, summaries, rates and percentages."""
    records = []
    for record in report.records:
        summary = record.summary
        records.append({
            "kernel": record.kernel, "implementation": record.implementation, "kind": record.kind,
            "shape": record.shape, "flops": record.flops, "bytes": record.bytes, "flops_dtype": record.flops_dtype,
            "samples_ms": list(record.samples_ms),
            "summary": {"count": summary.count, "min_ms": summary.min, "p20_ms": summary.p20,
                        "median_ms": summary.median, "p80_ms": summary.p80, "max_ms": summary.max,
                        "mean_ms": summary.mean},
            "tflops": record.tflops, "gbps": record.gbps,
            "percent_of_peak_flops": report.percent_of_peak_flops(record),
            "percent_of_peak_bandwidth": report.percent_of_peak_bandwidth(record),
        })
    peak = None
    if report.peak is not None:
        peak = {"device": report.peak.device, "memory_gbps": report.peak.memory_gbps,
                "tflops": dict(report.peak.tflops), "source": report.peak.source}
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "device": report.device, "peak": peak,
            "kernels": {kernel: {"x_axis": report.x_axis(kernel), "metric": report.metric(kernel)}
                        for kernel in report.kernels()},
            "settings": report.settings, "records": records}


def write_json(report, path):
    """to_json(report) at `path`: indented, each record on one line."""
    data = to_json(report)
    records = data.pop("records")
    head = json.dumps(data, indent=1)[:-2]  # without the closing "\n}"
    lines = [json.dumps(record, separators=(",", ":")) for record in records]
    body = ",\n  ".join(lines)
    Path(path).write_text(f'{head},\n "records": [\n  {body}\n ]\n}}\n' if lines else f'{head},\n "records": []\n}}\n')


def read_json(path, label=None):
    """The BenchReport a results file holds (what write_json wrote). Derived values (summaries,
    rates, percentages) are recomputed from the samples. Raises BenchFileError naming the file and
    the key that is wrong."""
    label = label or str(path)
    try:
        data = json.loads(Path(path).read_text())
    except json.JSONDecodeError as error:
        raise BenchFileError(label, f"line {error.lineno}, column {error.colno}", "valid JSON", error.msg) from None
    return from_json(data, label)


def from_json(data, label):
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        got = describe(data.get("schema")) if isinstance(data, dict) else describe(data)
        raise BenchFileError(label, "schema", f'"{SCHEMA}"', got)
    if data.get("schema_version") != SCHEMA_VERSION:
        raise BenchFileError(label, "schema_version", f"{SCHEMA_VERSION} (the version this taot reads)",
                             describe(data.get("schema_version")))
    device = _json_field(data, "device", str, label, "the device's name")
    peak_data = data.get("peak")
    peak = None
    if peak_data is not None:
        if not isinstance(peak_data, dict) or not isinstance(peak_data.get("tflops", {}), dict):
            raise BenchFileError(label, "peak", "null or {device, memory_gbps, tflops, source}", describe(peak_data))
        peak = stats.DevicePeak(peak_data.get("device", device), peak_data.get("memory_gbps"),
                                dict(peak_data.get("tflops", {})), peak_data.get("source", ""))
    kernels = data.get("kernels", {})
    settings = data.get("settings", {})
    for key, value in (("kernels", kernels), ("settings", settings)):
        if not isinstance(value, dict):
            raise BenchFileError(label, key, "an object", describe(value))
    axes, metrics = {}, {}
    for kernel, plot in kernels.items():
        if not isinstance(plot, dict) or not isinstance(plot.get("x_axis"), str) or plot.get("metric") not in METRICS:
            expected = f'{{"x_axis": DIMENSION, "metric": {" or ".join(METRICS)}}}'
            raise BenchFileError(label, f"kernels.{kernel}", expected, describe(plot))
        axes[kernel], metrics[kernel] = plot["x_axis"], plot["metric"]
    items = data.get("records")
    if not isinstance(items, list):
        raise BenchFileError(label, "records", "a list of records", describe(items))
    records = []
    for index, item in enumerate(items):
        where = f"records[{index}]"
        if not isinstance(item, dict):
            raise BenchFileError(label, where, "a record object", describe(item))
        fields = {name: _json_field(item, name, kind, label, expected, where)
                  for name, kind, expected in (("kernel", str, "a kernel name"),
                                               ("implementation", str, "an implementation name"),
                                               ("kind", str, " or ".join(KINDS)),
                                               ("shape", dict, "an object of dimension values"),
                                               ("samples_ms", list, "a list of times in ms"))}
        for name in ("flops", "bytes"):
            value = item.get(name)
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)):
                raise BenchFileError(label, f"{where}.{name}", "a number or null", describe(value))
        try:
            records.append(Record(fields["kernel"], fields["implementation"], fields["kind"], fields["shape"],
                                  fields["samples_ms"], item.get("flops"), item.get("bytes"), item.get("flops_dtype")))
        except (ValueError, TypeError) as error:
            raise BenchFileError(label, where, "a record with a known kind and finite samples", str(error)) from None
    return BenchReport(device, records, peak, axes, metrics, dict(settings))


def _json_field(data, name, kind, label, expected, where=""):
    value = data.get(name)
    if not isinstance(value, kind):
        raise BenchFileError(label, f"{where}.{name}" if where else name, expected, describe(value))
    return value


# ---- the plot ----

def plot_figure(report, metric=None, top_variants=DEFAULT_TOP_VARIANTS):
    """A matplotlib Figure with one panel per kernel: x the kernel's sweep axis (logarithmic when
    the sweep is geometric, base 2 when every value is a power of two), y `metric` ("tflops",
    "gbps" or "ms"; None: each kernel's report.metric()) at the median time, a band from the p20 to the p80
    time, one line per implementation and, where other dimensions vary, per value of them.
    Baselines are dashed; of the variants, the `top_variants` fastest over the sweep are drawn (the
    table has them all). A rate's peak, when known, is a dotted line. Needs matplotlib."""
    from matplotlib.figure import Figure  # only here: the other reports need no matplotlib

    kernels = report.kernels()
    figure = Figure(figsize=(9, 5 * max(1, len(kernels))), layout="constrained")
    panels = figure.subplots(max(1, len(kernels)), 1, squeeze=False)[:, 0]
    for panel, kernel in zip(panels, kernels):
        _plot_kernel(panel, report, kernel, metric or report.metric(kernel), top_variants)
    return figure


def write_plot(report, path, metric=None, top_variants=DEFAULT_TOP_VARIANTS):
    """plot_figure(...) saved as a PNG at `path`."""
    if metric is not None and metric not in METRICS:
        raise ValueError(f"a plot's metric is one of {', '.join(METRICS)}, got {metric!r}")
    plot_figure(report, metric, top_variants).savefig(path, format="png", dpi=110, metadata={"Software": None})


def is_geometric(values):
    """Whether a sweep's values are spaced more evenly on a log scale than on a linear one (1, 2, 4,
    ... 4096 or vLLM's 1, 2, 4, 8, 16, 24, 32, 48, ... yes; 1024, 2048, 3072, 4096 no): at least 3
    distinct positive values whose consecutive log-ratios vary less, relative to their mean, than
    their consecutive differences."""
    xs = sorted(set(float(value) for value in values))
    if len(xs) < 3 or xs[0] <= 0:
        return False
    differences = [b - a for a, b in zip(xs, xs[1:])]
    ratios = [math.log(b / a) for a, b in zip(xs, xs[1:])]
    return _relative_spread(ratios) < _relative_spread(differences)


def _relative_spread(values):
    average = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - average) ** 2 for v in values) / len(values)) / average


def _is_power_of_two(value):
    return float(value).is_integer() and value >= 1 and (int(value) & (int(value) - 1)) == 0


def shown_implementations(records, top_variants):
    """The implementations a plot draws, in recorded order: every baseline and automatic choice,
    and the `top_variants` variants whose times are lowest relative to the fastest variant at each
    shape (geometric mean of the ratios); and how many variants are left out."""
    names = list(dict.fromkeys(r.implementation for r in records))
    kinds = {r.implementation: r.kind for r in records}
    variants = [name for name in names if kinds[name] == "variant"]
    if len(variants) <= top_variants:
        return names, 0
    best = {}
    for r in records:
        if r.kind == "variant":
            key = _shape_key(r.shape)
            best[key] = min(best.get(key, math.inf), r.median_ms)
    ratios = {name: [] for name in variants}
    for r in records:
        if r.kind == "variant" and best[_shape_key(r.shape)] > 0:
            ratios[r.implementation].append(math.log(r.median_ms / best[_shape_key(r.shape)]))
    score = {name: math.fsum(values) / len(values) if values else math.inf for name, values in ratios.items()}
    kept = set(sorted(variants, key=lambda name: (score[name], variants.index(name)))[:top_variants])
    return [name for name in names if kinds[name] != "variant" or name in kept], len(variants) - len(kept)


def _plot_kernel(panel, report, kernel, metric, top_variants):
    records = report.records_of(kernel)
    x_axis = report.x_axis(kernel)
    others = [name for name in report.dims(kernel)
              if name != x_axis and len({_key(r.shape.get(name)) for r in records}) > 1]
    names, left_out = shown_implementations(records, top_variants)
    colors = {name: f"C{index % 10}" for index, name in enumerate(names)}
    markers = {}
    lines = {}
    for record in records:
        if record.implementation in names:
            group = tuple((name, record.shape.get(name)) for name in others)
            lines.setdefault((record.implementation, group), []).append(record)
    for (implementation, group), members in sorted(lines.items(), key=lambda item: (names.index(item[0][0]),
                                                                                   _shape_key(dict(item[0][1])))):
        members.sort(key=lambda r: r.shape[x_axis])
        xs = [r.shape[x_axis] for r in members]
        ys = [r.rate(metric, r.median_ms) for r in members]
        low = [r.rate(metric, r.summary.p80 if metric != "ms" else r.summary.p20) for r in members]
        high = [r.rate(metric, r.summary.p20 if metric != "ms" else r.summary.p80) for r in members]
        label = implementation + (" (" + ", ".join(f"{n}={v}" for n, v in group) + ")" if group else "")
        style = {"baseline": dict(linestyle="--", linewidth=1.5), "auto": dict(linestyle="-", linewidth=2.5)}.get(
            members[0].kind, dict(linestyle="-", linewidth=1.2))
        marker = markers.setdefault(group, "osD^v<>ph*"[len(markers) % 10])
        color = colors[implementation]
        panel.plot(xs, ys, marker=marker, markersize=4, color=color, label=label, **style)
        if None not in low and None not in high:
            panel.fill_between(xs, low, high, color=color, alpha=0.15, linewidth=0)
    peak = _peak_line(report, records, metric)
    if peak is not None:
        panel.axhline(peak[0], linestyle=":", color="gray", label=peak[1])
    x_values = [r.shape[x_axis] for r in records]
    if is_geometric(x_values):
        panel.set_xscale("log", base=2 if all(_is_power_of_two(v) for v in x_values) else 10)
    panel.set_xlabel(x_axis)
    panel.set_ylabel(METRIC_LABELS[metric])
    more = f" ({left_out} more variants in the table)" if left_out else ""
    panel.set_title(f"{kernel} on {report.device}{more}")
    panel.grid(True, which="major", alpha=0.3)
    panel.legend(fontsize="small")


def _peak_line(report, records, metric):
    """(value, label) of the peak a rate is drawn against, None when unknown or not one value."""
    if report.peak is None or metric == "ms":
        return None
    if metric == "gbps":
        value = report.peak.memory_gbps
        return (value, f"peak {value:g} GB/s") if value else None
    kinds = list(dict.fromkeys(r.flops_dtype for r in records))
    values = {report.peak.compute_tflops(kind) for kind in kinds}
    if len(values) != 1 or None in values:
        return None
    value = values.pop()
    return value, f"peak {value:g} TFLOP/s {'/'.join(kinds)}"
