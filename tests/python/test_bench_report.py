# Bench reports from recorded timings (python/taot/measure/report.py): the text table, CSV, JSON (round
# trip and errors) and the PNG plot of the sweep.
import csv
import json
import math

import pytest

from taot.measure import report as bench_report, stats
from taot.measure.report import BenchReport, Record
from taot.errors import BenchFileError

H100 = "NVIDIA H100 80GB HBM3"


def vector_add_report(peak=True):
    """add_kernel over n = 2^12 .. 2^20 (fp32): auto at 2x torch's speed, torch, and a variant."""
    records = []
    for k in range(12, 21, 2):
        n = 2 ** k
        shape = {"n": n, "dtype": "fp32"}
        base = 1e-3 * k  # ms
        for implementation, kind, factor in (("auto", "auto", 1.0), ("torch", "baseline", 2.0),
                                             ("BLOCK_SIZE=256,num_warps=4", "variant", 1.5)):
            samples = [base * factor * (1 + 0.01 * i) for i in (3, 0, 1, 4, 2)]
            records.append(Record("add_kernel", implementation, kind, shape, samples, n, 12 * n))
    return BenchReport(H100, records, stats.device_peak(H100) if peak else None, {"add_kernel": "n"},
                       {"add_kernel": "gbps"}, {"l2_flush": True, "mode": "plain"})


def matmul_records():
    records = []
    for dtype in ("bf16", "fp16"):
        for m in (1, 16, 256, 4096):
            shape = {"M": m, "N": 4096, "K": 4096, "dtype": dtype}
            for index in range(8):
                ms = (0.01 + m * 1e-4) * (1 + 0.1 * index)
                records.append(Record("matmul", f"v{index}", "variant", shape, [ms], 2 * m * 4096 * 4096,
                                      2 * (2 * m * 4096 + 4096 * 4096), dtype))
            records.append(Record("matmul", "torch", "baseline", shape, [0.01 + m * 1e-4], 2 * m * 4096 * 4096,
                                  None, dtype))
    return records


# ---- records ----

def test_record_summary_and_rates():
    record = vector_add_report().records[0]
    assert record.summary.count == 5 and record.median_ms == pytest.approx(0.012 * 1.02)
    assert record.summary.p20 == pytest.approx(stats.quantile(record.samples_ms, 0.2))
    assert record.gbps == pytest.approx(12 * 4096 / (0.012 * 1.02e-3) / 1e9)
    assert record.tflops == pytest.approx(4096 / (0.012 * 1.02e-3) / 1e12)


@pytest.mark.parametrize("kind, samples, message", [("jit", [1.0], "kind is one of variant, auto, baseline"),
                                                    ("auto", [], "samples must be finite"),
                                                    ("auto", [1.0, math.nan], "samples must be finite")])
def test_bad_records_are_refused(kind, samples, message):
    with pytest.raises(ValueError, match=message):
        Record("k", "x", kind, {"n": 1}, samples)


def test_metric_and_axis_defaults():
    records = matmul_records()
    report = BenchReport(H100, records)
    assert report.x_axis("matmul") == "M"  # M and dtype vary: the first dimension
    assert report.metric("matmul") == "tflops"
    only_bytes = [Record("softmax", "auto", "auto", {"cols": c}, [1.0], None, 10.0) for c in (1, 2)]
    neither = [Record("sort", "auto", "auto", {"n": c, "dtype": "i32"}, [1.0]) for c in (1, 2)]
    report = BenchReport(H100, only_bytes + neither)
    assert (report.metric("softmax"), report.metric("sort")) == ("gbps", "ms")
    assert report.x_axis("sort") == "n"


# ---- table ----

def test_table():
    table = bench_report.format_table(vector_add_report())
    lines = table.splitlines()
    assert lines[0] == f"add_kernel on {H100}"
    assert lines[1].startswith("peak 3350 GB/s (NVIDIA H100 Tensor Core GPU datasheet")
    header = lines[2].split()
    assert header[:3] == ["n", "dtype", "implementation"]
    assert "vs torch" in lines[2] and "% peak GB/s" in lines[2] and "GB/s" in lines[2]
    assert "% peak FLOP/s" not in lines[2]  # no flops_dtype: no compute peak
    rows = lines[3:]
    assert len(rows) == 15
    auto = rows[0].split()
    assert auto[:3] == ["4096", "fp32", "auto"]
    assert auto[3] == "0.01224"  # the median of 12 us x (1.00 .. 1.04)
    assert auto[-1] == "2.00x" and rows[1].split()[-1] == "1.00x" and rows[2].split()[-1] == "1.33x"
    gbps = 12 * 4096 / (0.01224e-3) / 1e9
    assert auto[-3] == f"{gbps:.4g}" and auto[-2] == f"{100 * gbps / 3350:.1f}"


def test_table_without_peak_or_reference():
    table = bench_report.format_table(vector_add_report(peak=False), speedup_against="cuBLAS")
    header = table.splitlines()[1]
    assert table.splitlines()[0] == f"add_kernel on {H100}"
    assert "% peak" not in header and "vs " not in header and "GB/s" in header


def test_table_per_kernel_with_compute_peak():
    report = BenchReport(H100, vector_add_report().records + matmul_records(), stats.device_peak(H100))
    blocks = bench_report.format_table(report).split("\n\n")
    assert len(blocks) == 2 and blocks[1].startswith("matmul on")
    assert "989.5 TFLOP/s bf16, 989.5 TFLOP/s fp16" in blocks[1].splitlines()[1]
    header = blocks[1].splitlines()[2]
    assert header.split()[:5] == ["M", "N", "K", "dtype", "implementation"] and "% peak FLOP/s" in header
    row = next(line for line in blocks[1].splitlines() if line.split()[:5] == ["4096", "4096", "4096", "bf16", "torch"])
    tflops = 2 * 4096 ** 3 / ((0.01 + 0.4096) * 1e-3) / 1e12
    assert f"{tflops:.4g}" in row.split() and f"{100 * tflops / 989.5:.1f}" in row.split()


# ---- CSV ----

def test_csv(tmp_path):
    report = vector_add_report()
    path = tmp_path / "bench.csv"
    bench_report.write_csv(report, path)
    with open(path, newline="") as stream:
        rows = list(csv.DictReader(stream))
    assert len(rows) == 15
    assert list(rows[0])[:5] == ["kernel", "implementation", "kind", "n", "dtype"]
    assert list(rows[0])[5:] == list(bench_report.CSV_MEASURES)
    for row, record in zip(rows, report.records):
        assert (row["kernel"], row["implementation"], row["kind"]) == (record.kernel, record.implementation, record.kind)
        assert int(row["n"]) == record.shape["n"] and row["dtype"] == "fp32"
        assert float(row["median_ms"]) == record.median_ms and float(row["p80_ms"]) == record.summary.p80
        assert int(row["samples"]) == 5 and float(row["gbps"]) == record.gbps
        assert float(row["percent_of_peak_bandwidth"]) == report.percent_of_peak_bandwidth(record)
        assert row["percent_of_peak_flops"] == "" and row["flops_dtype"] == ""


def test_csv_dimension_named_like_a_column(tmp_path):
    report = BenchReport("gpu", [Record("k", "auto", "auto", {"kind": "a", "n": 1}, [1.0])])
    path = tmp_path / "bench.csv"
    bench_report.write_csv(report, path)
    with open(path, newline="") as stream:
        (row,) = list(csv.DictReader(stream))
    assert row["kind"] == "auto" and row["shape.kind"] == "a"


# ---- JSON ----

def test_json_round_trip(tmp_path):
    report = BenchReport(H100, vector_add_report().records + matmul_records(),
                         stats.device_peak(H100, {"memory_gbps": 3000.0}), {"add_kernel": "n"},
                         {"add_kernel": "gbps"}, {"l2_flush": True, "warmup_ms": 25})
    path = tmp_path / "bench.json"
    bench_report.write_json(report, path)
    data = json.loads(path.read_text())
    assert (data["schema"], data["schema_version"]) == ("taot.bench", 1)
    assert data["kernels"] == {"add_kernel": {"x_axis": "n", "metric": "gbps"},
                               "matmul": {"x_axis": report.x_axis("matmul"), "metric": "tflops"}}
    first = data["records"][0]
    assert first["summary"]["median_ms"] == report.records[0].median_ms
    assert first["percent_of_peak_bandwidth"] == pytest.approx(100 * report.records[0].gbps / 3000.0)
    assert data == bench_report.to_json(report)
    back = bench_report.read_json(path)
    assert back.records == report.records
    assert (back.device, back.peak, back.settings) == (report.device, report.peak, report.settings)
    assert back.axes == {kernel: report.x_axis(kernel) for kernel in report.kernels()}
    assert back.metrics == {"add_kernel": "gbps", "matmul": "tflops"}
    assert bench_report.to_json(back) == data


def test_json_of_an_empty_report(tmp_path):
    path = tmp_path / "empty.json"
    bench_report.write_json(BenchReport("gpu", []), path)
    assert bench_report.read_json(path).records == []


@pytest.mark.parametrize("change, key, expected, got", [
    (lambda d: d.update(schema="taot.tuning"), "schema", '"taot.bench"', '"taot.tuning"'),
    (lambda d: d.update(schema_version=2), "schema_version", "1 (the version this taot reads)", "2"),
    (lambda d: d.update(device=None), "device", "the device's name", "nothing"),
    (lambda d: d.update(records={}), "records", "a list of records", "a table"),
    (lambda d: d["records"][1].update(kind="jit"), "records[1]", "a record with a known kind", None),
    (lambda d: d["records"][0].pop("samples_ms"), "records[0].samples_ms", "a list of times in ms", "nothing"),
    (lambda d: d["records"][0].update(flops="many"), "records[0].flops", "a number or null", '"many"'),
    (lambda d: d["kernels"].update(add_kernel={"x_axis": "n", "metric": "TB/s"}), "kernels.add_kernel",
     '{"x_axis": DIMENSION, "metric": tflops or gbps or ms}', None),
])
def test_json_errors_name_the_key(tmp_path, change, key, expected, got):
    data = bench_report.to_json(vector_add_report())
    change(data)
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    with pytest.raises(BenchFileError) as caught:
        bench_report.read_json(path, label="bench.json")
    message = str(caught.value)
    assert message.startswith(f"bench.json: {key}: expected {expected}"), message
    if got is not None:
        assert message.endswith(f", got {got}"), message


def test_json_syntax_error_names_the_line(tmp_path):
    path = tmp_path / "bench.json"
    path.write_text('{\n "schema": "taot.bench",\n oops\n}\n')
    with pytest.raises(BenchFileError, match=r"^bench.json: line 3, column 2: expected valid JSON, got Expecting"):
        bench_report.read_json(path, label="bench.json")


# ---- the plot ----

def test_geometric_sweeps():
    assert bench_report.is_geometric([2 ** k for k in range(12, 29)])
    assert bench_report.is_geometric([1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096])
    assert not bench_report.is_geometric([1024, 2048, 3072, 4096, 5120])
    assert not bench_report.is_geometric([1, 1000])  # two points: nothing to tell
    assert not bench_report.is_geometric([0, 1, 2, 4])  # a log axis cannot show 0


def test_the_plot_shows_the_fastest_variants():
    names, left_out = bench_report.shown_implementations(matmul_records(), top_variants=3)
    assert names == ["v0", "v1", "v2", "torch"] and left_out == 5
    names, left_out = bench_report.shown_implementations(matmul_records(), top_variants=8)
    assert len(names) == 9 and left_out == 0


def need_matplotlib():
    return pytest.importorskip("matplotlib", reason="matplotlib cannot be imported: the PNG plot is not checked "
                                                   "(pip install matplotlib)")


def test_png_plot(tmp_path):
    need_matplotlib()
    path = tmp_path / "bench.png"
    bench_report.write_plot(vector_add_report(), path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_plot_axes_lines_and_peak():
    need_matplotlib()
    figure = bench_report.plot_figure(BenchReport(H100, vector_add_report().records + matmul_records(),
                                                  stats.device_peak(H100), {"add_kernel": "n", "matmul": "M"},
                                                  {"add_kernel": "gbps"}), top_variants=2)
    add_panel, matmul_panel = figure.axes
    assert add_panel.get_xscale() == "log" and add_panel.get_ylabel() == "GB/s" and add_panel.get_xlabel() == "n"
    labels = [line.get_label() for line in add_panel.get_lines()]
    assert labels == ["auto", "torch", "BLOCK_SIZE=256,num_warps=4", "peak 3350 GB/s"]
    auto = add_panel.get_lines()[0]
    assert list(auto.get_xdata()) == [2 ** k for k in range(12, 21, 2)]
    assert auto.get_ydata()[0] == pytest.approx(vector_add_report().records[0].gbps)
    assert matmul_panel.get_ylabel() == "TFLOP/s" and matmul_panel.get_xscale() == "log"
    labels = [line.get_label() for line in matmul_panel.get_lines()]
    assert labels == ["v0 (dtype=bf16)", "v0 (dtype=fp16)", "v1 (dtype=bf16)", "v1 (dtype=fp16)",
                      "torch (dtype=bf16)", "torch (dtype=fp16)", "peak 989.5 TFLOP/s bf16/fp16"]
    assert matmul_panel.get_title() == f"matmul on {H100} (6 more variants in the table)"


def test_plot_linear_sweep_in_ms(tmp_path):
    need_matplotlib()
    records = [Record("k", "auto", "auto", {"n": n}, [1.0, 2.0]) for n in (1000, 2000, 3000, 4000)]
    figure = bench_report.plot_figure(BenchReport("gpu", records))
    (panel,) = figure.axes
    assert panel.get_xscale() == "linear" and panel.get_ylabel() == "median time (ms)"
    assert list(panel.get_lines()[0].get_ydata()) == [1.5] * 4
    with pytest.raises(ValueError, match="metric is one of tflops, gbps, ms"):
        bench_report.write_plot(BenchReport("gpu", records), tmp_path / "x.png", metric="GB/s")
