# The statistics of timing samples and the rates and peaks derived from them (python/taot/measure/stats.py),
# against brute-force references.
import math
import random
import statistics
from fractions import Fraction

import pytest

from taot.measure import stats
from taot.errors import TaotError


def brute_force_quantile(samples, q):
    """The piecewise-linear curve through the points (k / (n - 1), k-th smallest sample), read at q,
    found by scanning the segments in exact arithmetic."""
    xs = sorted(Fraction(value) for value in samples)
    q = Fraction(q)
    if len(xs) == 1:
        return float(xs[0])
    step = Fraction(1, len(xs) - 1)
    for k in range(len(xs) - 1):
        left, right = k * step, (k + 1) * step
        if left <= q <= right:
            return float(xs[k] + (q - left) / step * (xs[k + 1] - xs[k]))
    raise AssertionError("q outside [0, 1]")


SAMPLE_SETS = [[5.0], [3.0, 1.0], [1.0, 2.0, 3.0, 4.0], [0.5, 0.25, 0.125, 8.0, 0.0625],
               [2.0, 2.0, 2.0, 7.0]] + \
              [[random.Random(seed).uniform(0.001, 10.0) for _ in range(count)]
               for seed, count in ((1, 7), (2, 100), (3, 1001))]
QS = [0.0, 0.05, 0.2, 0.25, 0.5, 0.8, 0.9, 0.99, 1.0, 1 / 3]


@pytest.mark.parametrize("samples", SAMPLE_SETS, ids=lambda s: f"n{len(s)}")
def test_quantile_is_linear_interpolation_between_order_statistics(samples):
    for q in QS:
        assert stats.quantile(samples, q) == pytest.approx(brute_force_quantile(samples, q), rel=1e-12, abs=0)
    assert stats.quantiles(samples, QS) == [stats.quantile(samples, q) for q in QS]


@pytest.mark.parametrize("samples", SAMPLE_SETS, ids=lambda s: f"n{len(s)}")
def test_quantile_agrees_with_numpy_default(samples):
    numpy = pytest.importorskip("numpy", reason="numpy is not installed: the cross-check with numpy.quantile")
    for q in QS:
        assert stats.quantile(samples, q) == pytest.approx(float(numpy.quantile(samples, q)), rel=1e-12, abs=0)


def test_median_min_max_and_order_independence():
    samples = [9.0, 1.0, 4.0, 7.0, 3.0, 3.0]
    assert stats.median(samples) == statistics.median(samples) == 3.5
    assert stats.median(samples[:5]) == statistics.median(samples[:5]) == 4.0
    assert stats.quantile(samples, 0) == 1.0 and stats.quantile(samples, 1) == 9.0
    shuffled = list(samples)
    random.Random(5).shuffle(shuffled)
    assert stats.quantiles(shuffled, QS) == stats.quantiles(samples, QS)
    assert stats.quantile(iter(samples), 0.5) == 3.5  # any iterable


def test_mean_is_summed_exactly():
    assert stats.mean([1e16, 1.0, -1e16]) == pytest.approx(1 / 3)  # a left-to-right float sum gives 0


@pytest.mark.parametrize("samples", SAMPLE_SETS, ids=lambda s: f"n{len(s)}")
def test_summary_fields(samples):
    summary = stats.Summary.of(samples)
    assert summary.count == len(samples)
    assert summary.min == min(samples) and summary.max == max(samples)
    assert summary.p20 == pytest.approx(brute_force_quantile(samples, 0.2), rel=1e-12)
    assert summary.median == pytest.approx(brute_force_quantile(samples, 0.5), rel=1e-12)
    assert summary.p80 == pytest.approx(brute_force_quantile(samples, 0.8), rel=1e-12)
    assert summary.mean == pytest.approx(float(sum(Fraction(s) for s in samples) / len(samples)), rel=1e-15)


def test_summary_band_ignores_a_few_outliers():
    steady = [1.0 + 0.001 * i for i in range(100)]
    spiky = steady[:97] + [50.0, 80.0, 120.0]  # three preempted reps
    assert stats.Summary.of(spiky).median == stats.Summary.of(steady).median
    assert stats.Summary.of(spiky).p80 == stats.Summary.of(steady).p80
    assert stats.Summary.of(spiky).mean > 3 * stats.Summary.of(steady).mean


@pytest.mark.parametrize("bad, message", [([], "no samples"), ([1.0, math.nan], "finite"), ([math.inf], "finite")])
def test_bad_samples_are_refused(bad, message):
    with pytest.raises(ValueError, match=message):
        stats.quantile(bad, 0.5)


@pytest.mark.parametrize("q", [-0.01, 1.01])
def test_quantile_outside_0_1_is_refused(q):
    with pytest.raises(ValueError, match="between 0 and 1"):
        stats.quantile([1.0, 2.0], q)


def test_rates():
    # bf16 8192^3 matmul in 1.39 ms: about 791 TFLOP/s (TRITON-FACTS: about 790 through torch)
    assert stats.tflops(2 * 8192 ** 3, 1.39) == pytest.approx(791.0, rel=1e-3)
    # fp32 vector add of 2^28 elements, 3 x 4 bytes each, in 1.0737 ms: 3.0 TB/s
    assert stats.gbps(3 * 4 * 2 ** 28, 1.0737418) == pytest.approx(3000.0, rel=1e-6)
    assert stats.tflops(None, 1.0) is None and stats.gbps(100, None) is None
    assert stats.tflops(100, 0.0) is None
    assert stats.percent_of(2979.0, 3350.0) == pytest.approx(88.925, rel=1e-4)
    assert stats.percent_of(1.0, None) is None and stats.percent_of(None, 3.0) is None


def test_peaks_of_h100_and_h200():
    h100 = stats.device_peak("NVIDIA H100 80GB HBM3")
    assert h100.memory_gbps == 3350.0 and h100.compute_tflops("bf16") == 989.5
    assert h100.compute_tflops("fp8e4nv") == h100.compute_tflops("fp8") == 1979.0
    assert "datasheet" in h100.source
    h200 = stats.device_peak("NVIDIA_H200")  # vLLM's spelling of the same name
    assert h200.memory_gbps == 4800.0 and h200.compute_tflops("fp16") == 989.5
    assert stats.device_peak("NVIDIA H100 PCIe").memory_gbps == 2000.0
    assert stats.device_peak("NVIDIA GeForce RTX 4090") is None
    for peak in stats.PEAKS.values():
        assert set(peak.tflops) <= set(stats.PEAK_KINDS)
        assert peak.compute_tflops("fp8") == 2 * peak.compute_tflops("bf16")  # the datasheets' ratio


def test_peak_override():
    override = stats.parse_peak_override("gbps=3000, bf16=900")
    assert override == {"memory_gbps": 3000.0, "tflops": {"bf16": 900.0}}
    peak = stats.device_peak("NVIDIA H100 80GB HBM3", override)
    assert (peak.memory_gbps, peak.compute_tflops("bf16"), peak.compute_tflops("fp8")) == (3000.0, 900.0, 1979.0)
    assert peak.source.endswith("overridden: gbps=3000,bf16=900")
    unknown = stats.device_peak("Some GPU", {"memory_gbps": 1000.0})
    assert (unknown.memory_gbps, unknown.tflops, unknown.source) == (1000.0, {}, "given: gbps=1000")
    assert stats.parse_peak_override(stats.format_peak_override(override)) == override


@pytest.mark.parametrize("text, part", [("gbps", "gbps"), ("gbps=-1", "gbps=-1"), ("bf16=fast", "bf16=fast"),
                                        ("fp4=10", "fp4=10"), ("gbps=3000,,", "")])
def test_bad_peak_override_names_the_part(text, part):
    with pytest.raises(TaotError) as caught:
        stats.parse_peak_override(text)
    assert str(caught.value).startswith(f'peak override "{text}": "{part}": expected NAME=VALUE')


def test_peak_kind_names():
    assert [stats.peak_kind(name) for name in ("bf16", "fp8e5", "i8", "fp32", "i32", "nope")] == \
        ["bf16", "fp8", "int8", "fp32", None, None]
