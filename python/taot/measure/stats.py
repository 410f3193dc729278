# Statistics of timing samples (quantiles, summaries) and the rates derived from them: TFLOP/s, GB/s,
# percent of a device's peak, with a table of peak figures per device. Pure Python, no GPU, no numpy.
import dataclasses
import math

from ..errors import TaotError

# The quantiles a summary reports besides min, max and mean: Triton's do_bench reports p20, p50, p80
# (`quantiles=[0.5, 0.2, 0.8]`), and Triton's autotuner caches [p50, p20, p80] per config.
SUMMARY_QUANTILES = (0.2, 0.5, 0.8)


def _sorted_samples(samples):
    values = sorted(float(value) for value in samples)
    if not values:
        raise ValueError("no samples")
    if not all(math.isfinite(value) for value in values):
        raise ValueError(f"samples must be finite numbers, got {values}")
    return values


def _quantile_of_sorted(values, q):
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"a quantile is between 0 and 1, got {q}")
    position = (len(values) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(values) - 1)
    fraction = position - below
    return values[below] + fraction * (values[above] - values[below])


def quantile(samples, q):
    """The q-quantile (0 <= q <= 1) of `samples` (any non-empty iterable of finite numbers).

    Definition (the one every taot timing uses; the C++ timing loop computes the same): sort the n
    samples into x[0] <= ... <= x[n-1], let h = (n - 1) * q, and interpolate linearly between the
    order statistics around h: x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]).
    This is numpy's default (`method="linear"`, Hyndman and Fan's type 7), torch.quantile's default,
    and what triton.testing.do_bench computes. q = 0.5 is the median (the mean of the two middle
    samples when n is even); q = 0 and 1 are the minimum and the maximum."""
    return _quantile_of_sorted(_sorted_samples(samples), q)


def quantiles(samples, qs):
    """[quantile(samples, q) for q in qs], sorting the samples once."""
    values = _sorted_samples(samples)
    return [_quantile_of_sorted(values, q) for q in qs]


def median(samples):
    return quantile(samples, 0.5)


def mean(samples):
    """The arithmetic mean, summed exactly (math.fsum)."""
    values = _sorted_samples(samples)
    return math.fsum(values) / len(values)


@dataclasses.dataclass(frozen=True)
class Summary:
    """What a list of timing samples is reported as (all in the samples' unit, ms for timings).
    The median and the p20-p80 band are insensitive to a few outliers (a context switch, a clock
    change); min, max and mean are for reference."""
    count: int
    min: float
    p20: float
    median: float
    p80: float
    max: float
    mean: float

    @classmethod
    def of(cls, samples):
        values = _sorted_samples(samples)
        p20, p50, p80 = (_quantile_of_sorted(values, q) for q in SUMMARY_QUANTILES)
        return cls(len(values), values[0], p20, p50, p80, values[-1], math.fsum(values) / len(values))


# ---- rates ----

def tflops(flops, ms):
    """TFLOP/s (10^12 floating-point operations per second) of `flops` operations in `ms`
    milliseconds; None when either is unknown or the time is not positive."""
    if flops is None or ms is None or ms <= 0:
        return None
    return flops / (ms * 1e-3) / 1e12


def gbps(bytes_moved, ms):
    """GB/s (10^9 bytes per second, as do_bench users and NVIDIA's datasheets count) of `bytes_moved`
    bytes in `ms` milliseconds; None when either is unknown or the time is not positive."""
    if bytes_moved is None or ms is None or ms <= 0:
        return None
    return bytes_moved / (ms * 1e-3) / 1e9


def percent_of(value, peak):
    """100 * value / peak; None when either is unknown or the peak is not positive."""
    if value is None or peak is None or peak <= 0:
        return None
    return 100.0 * value / peak


# ---- device peaks ----

# The precisions a compute peak is given for. "fp64" is the FP64 tensor-core peak, "fp32" the FP32
# peak of the CUDA cores (no tensor core takes fp32; "tf32" is its tensor-core stand-in), the rest
# tensor-core peaks without sparsity; "int8" is in TOP/s.
PEAK_KINDS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8")
# Spec dtype names that name a peak kind other than their own.
_PEAK_KIND_ALIASES = {"fp8e4nv": "fp8", "fp8e5": "fp8", "i8": "int8"}


def peak_kind(name):
    """The peak kind a precision name gives (a PEAK_KINDS name, or a spec dtype name such as
    "fp8e4nv"), None when it names none."""
    name = _PEAK_KIND_ALIASES.get(name, name)
    return name if name in PEAK_KINDS else None


@dataclasses.dataclass(frozen=True)
class DevicePeak:
    """A device's peak memory bandwidth (GB/s) and compute (TFLOP/s per PEAK_KINDS name; a kind
    left out is unknown), and where the figures come from."""
    device: str
    memory_gbps: float = None
    tflops: dict = dataclasses.field(default_factory=dict)
    source: str = ""

    def compute_tflops(self, kind):
        return self.tflops.get(peak_kind(kind)) if kind is not None else None


_H100_DATASHEET = ("NVIDIA H100 Tensor Core GPU datasheet, {column} column; its tensor-core figures are with "
                   "sparsity and are halved here")
_H200_DATASHEET = ("NVIDIA H200 Tensor Core GPU datasheet, H200 SXM column; its tensor-core figures are with "
                   "sparsity and are halved here")
# The same compute figures for H100 SXM and H200 SXM (one GH100 chip at the same clocks).
_SXM_TFLOPS = {"fp64": 67.0, "fp32": 67.0, "tf32": 494.5, "fp16": 989.5, "bf16": 989.5, "fp8": 1979.0,
               "int8": 1979.0}

# Peaks by the device's name as the driver gives it (cuDeviceGetName, torch.cuda.get_device_name).
PEAKS = {
    "NVIDIA H100 80GB HBM3": DevicePeak("NVIDIA H100 80GB HBM3", 3350.0, dict(_SXM_TFLOPS),
                                        _H100_DATASHEET.format(column="H100 SXM")),
    "NVIDIA H100 PCIe": DevicePeak("NVIDIA H100 PCIe", 2000.0,
                                   {"fp64": 51.0, "fp32": 51.0, "tf32": 378.0, "fp16": 756.5, "bf16": 756.5,
                                    "fp8": 1513.0, "int8": 1513.0},
                                   _H100_DATASHEET.format(column="H100 PCIe")),
    "NVIDIA H200": DevicePeak("NVIDIA H200", 4800.0, dict(_SXM_TFLOPS), _H200_DATASHEET),
}


def _same_device(a, b):
    """Device names compare exactly except that "_" and " " are the same character (as tuned tables'
    device names do: vLLM writes them with underscores)."""
    return a.replace("_", " ") == b.replace("_", " ")


def device_peak(device, override=None):
    """The DevicePeak of `device` (a driver name): PEAKS' entry, with `override` applied. `override`
    is None or a dict {"memory_gbps": GB/s, "tflops": {kind: TFLOP/s}} (either key may be left out,
    as parse_peak_override makes); its figures replace the table's one by one, and a device missing
    from the table gets them alone. None when nothing is known."""
    known = next((peak for name, peak in PEAKS.items() if _same_device(name, device)), None)
    if not override:
        return known
    memory = override.get("memory_gbps", known.memory_gbps if known else None)
    compute = dict(known.tflops if known else {})
    compute.update(override.get("tflops", {}))
    source = f"{known.source}; overridden: {format_peak_override(override)}" if known else \
        f"given: {format_peak_override(override)}"
    return DevicePeak(device, memory, compute, source)


def parse_peak_override(text):
    """The override dict of a text such as "gbps=3350,bf16=989.5,fp8=1979": comma-separated NAME=VALUE,
    NAME being "gbps" (memory bandwidth, GB/s) or a PEAK_KINDS name (TFLOP/s), VALUE a positive number.
    Raises TaotError naming the part that is wrong."""
    override = {}
    for part in (piece.strip() for piece in text.split(",")):
        name, equals, value_text = part.partition("=")
        name = name.strip()
        expected = f"NAME=VALUE with NAME gbps or one of {', '.join(PEAK_KINDS)} and VALUE a positive number"
        try:
            value = float(value_text)
        except ValueError:
            value = None
        if not equals or value is None or not math.isfinite(value) or value <= 0 or \
                (name != "gbps" and name not in PEAK_KINDS):
            raise TaotError(f'peak override "{text}": "{part}": expected {expected}')
        if name == "gbps":
            override["memory_gbps"] = value
        else:
            override.setdefault("tflops", {})[name] = value
    return override


def format_peak_override(override):
    """The text parse_peak_override reads back."""
    parts = [f"gbps={override['memory_gbps']:g}"] if override.get("memory_gbps") is not None else []
    parts += [f"{kind}={value:g}" for kind, value in override.get("tflops", {}).items()]
    return ",".join(parts)
