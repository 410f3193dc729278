# Profiles (python/taot/debug/profiler.py, docs/profile.md) from a recorded trace: the tree of library ->
# kernel -> variant with counts, GPU times, the steps that chose the variants and a bench file's
# FLOPs and bytes; the text tree; hatchet JSON that Triton's proton-viewer reads back, deriving
# time/s, tflop16/s, gbyte/s and util from it.
import json
import shutil
from pathlib import Path

import pytest

from taot.debug import profiler
from taot.measure.benchfile import load_bench_file
from taot.errors import TaotError

FIXTURES = Path(__file__).resolve().parent / "profile_fixtures"
TRACE = FIXTURES / "trace-4242.json"
BENCH = FIXTURES / "bench_fused_moe_gemm.py"
GEMM1 = "fused_moe_kernel_bf16_none_m64_n128_g16_w4"
GEMM2 = "fused_moe_kernel_bf16_w_m64_n128_g16_w4"


def gemm_flops(tokens, n, k):
    return 2 * tokens * n * k


def tree(rates=True):
    trace = profiler.read_trace(TRACE)
    return trace, profiler.build_tree(trace.launches, profiler.Rates([load_bench_file(BENCH)]) if rates else None)


def test_the_trace_reads_back_as_launches_with_arguments_by_name():
    trace = profiler.read_trace(TRACE)
    assert trace.processes == 1 and trace.device_name == "NVIDIA H100 80GB HBM3"
    assert len(trace.launches) == 11
    gemm = trace.launches[1]
    assert (gemm.library, gemm.kernel, gemm.variant, gemm.step, gemm.ms) == ("fused_moe", "fused_moe_kernel", GEMM1,
                                                                            "table", 0.2)
    assert gemm.args["num_valid_tokens"] == 8192 and gemm.args["M"] == 1024
    assert gemm.dtypes["a_ptr"] == "bf16" and gemm.dtypes["topk_weights_ptr"] is None
    assert trace.launches[-1].status == "TAOT_CUDA_ERROR" and trace.launches[-1].ms is None
    assert trace.launches[-3].captured


def test_the_tree_counts_times_and_steps_per_library_kernel_and_variant():
    _, root = tree(rates=False)
    assert (root.count, root.timed) == (11, 9)
    assert root.time_ns == pytest.approx((0.008 + 0.5 + 0.02 + 0.2 + 0.05) * 1e6)
    assert list(root.children) == ["fused_moe", "vector_add"]
    moe = root.children["fused_moe"]
    assert [child.name for child in moe.ordered_children()] == ["fused_moe_kernel", "silu_and_mul", "moe_align_count"]
    gemm = moe.children["fused_moe_kernel"]
    assert (gemm.count, gemm.timed) == (4, 4)
    assert gemm.steps == {"table": 3, "config": 1}
    first = gemm.children[GEMM1]
    assert (first.kind, first.count, first.device) == ("variant", 2, 0)
    assert (first.time_ns, first.min_ns, first.max_ns, first.avg_ns) == pytest.approx((0.5e6, 0.2e6, 0.3e6, 0.25e6))
    silu = moe.children["silu_and_mul"]
    assert (silu.count, silu.timed, silu.captured) == (3, 2, 1)
    add = root.children["vector_add"].children["add_kernel"]
    assert (add.count, add.timed, add.failed) == (2, 1, 1)
    assert profiler.untimed_note(root) == ("2 of 11 launches have no time (1 failed, 1 captured into CUDA graphs): "
                                           "counted, not timed")


def test_a_bench_files_call_shape_gives_flops_and_bytes_of_its_kernels_launches():
    _, root = tree()
    gemm = root.children["fused_moe"].children["fused_moe_kernel"]
    first, second = gemm.children[GEMM1], gemm.children[GEMM2]
    assert first.flops == {"flops16": 2 * gemm_flops(8192, 1536, 2048)}
    assert second.flops == {"flops16": 2 * gemm_flops(8192, 2048, 768)}
    assert first.bytes == 2 * 8192 * (2048 * 2 + 1536 * 2)
    assert gemm.flops["flops16"] == first.flops["flops16"] + second.flops["flops16"]
    assert first.tflops == pytest.approx(first.flops["flops16"] / 0.5e-3 / 1e12)
    assert first.gbps == pytest.approx(first.bytes / 0.5e-3 / 1e9)
    assert root.children["fused_moe"].children["silu_and_mul"].flops == {}  # no file describes it
    assert root.flops == gemm.flops  # inclusive


def test_a_failing_call_shape_leaves_that_kernel_without_rates_and_says_why(tmp_path):
    broken = tmp_path / "bench_broken.py"
    broken.write_text(BENCH.read_text().replace('args["num_valid_tokens"]', 'args["tokens"]'))
    trace = profiler.read_trace(TRACE)
    rates = profiler.Rates([load_bench_file(broken, label="bench_broken.py")])
    root = profiler.build_tree(trace.launches, rates)
    assert root.flops == {}
    assert len(rates.notes) == 1
    assert rates.notes[0].startswith("no rates for fused_moe.fused_moe_kernel: bench_broken.py: call_shape(")
    assert "expected a call that returns the launch's shape, got KeyError" in rates.notes[0]


def test_the_text_tree_shows_each_scope_with_its_share_count_times_rates_and_steps():
    trace, root = tree()
    lines = profiler.text_tree(root).splitlines()
    assert lines[0].split() == ["name", "time", "%", "count", "total", "ms", "avg", "us", "min", "us", "max", "us",
                                "TFLOP/s", "GB/s", "chosen", "by"]
    names = [line.split()[0] for line in lines[1:]]
    assert names == ["fused_moe", "fused_moe_kernel", GEMM1, GEMM2, "silu_and_mul", "silu_and_mul_bf16",
                     "moe_align_count", "moe_align_count_i32", "vector_add", "add_kernel",
                     "add_kernel_fp32a16_fp32a16_fp32a16_i32d16_BS1024_w4_s3"]
    gemm = next(line for line in lines if line.strip().startswith("fused_moe_kernel"))
    assert gemm.startswith("  fused_moe_kernel ")
    share = 100 * 0.7 / 0.778
    tflops = 2 * (gemm_flops(8192, 1536, 2048) + gemm_flops(8192, 2048, 768)) / 0.7e-3 / 1e12
    assert gemm.split()[1:6] == [f"{share:.1f}", "4", "0.700", "175.00", "100.00"]
    assert f"{tflops:.3g}" in gemm.split() and gemm.endswith("table 3, config 1")
    summary = profiler.summary_line(root, trace, ["python3", "moe.py"], "exited with code 0")
    assert summary == ("python3 moe.py exited with code 0: 11 launches of 4 kernels (5 variants) in 2 libraries, "
                       "0.778 ms of GPU time on NVIDIA H100 80GB HBM3")


def test_hatchet_has_protons_layout():
    trace, root = tree()
    data = profiler.hatchet(root, trace.devices)
    assert isinstance(data, list) and len(data) == 2
    top = data[0]
    assert top["frame"] == {"name": "ROOT", "type": "function"}
    assert top["metrics"] == {"count": 0, "time (ns)": 0, "flops16": 0, "bytes": 0}  # what hatchet sums into parents
    moe = top["children"][0]
    assert moe["frame"]["name"] == "fused_moe" and moe["metrics"] == {}
    leaf = moe["children"][0]["children"][0]
    assert leaf["frame"]["name"] == GEMM1 and leaf["children"] == []
    assert leaf["metrics"] == {"count": 2, "time (ns)": 500000, "device_id": "0", "device_type": "CUDA",
                               "flops16": 2 * gemm_flops(8192, 1536, 2048), "bytes": 2 * 8192 * (2048 * 2 + 1536 * 2)}
    assert data[1] == {"CUDA": {"0": {"clock_rate": 1980000, "memory_clock_rate": 2619000, "bus_width": 5120,
                                      "arch": "90", "num_sms": 132}}}


def test_protons_viewer_reads_the_hatchet_file_and_derives_time_and_tflop16_per_second(tmp_path):
    pytest.importorskip("hatchet", reason="proton-viewer needs llnl-hatchet (pip install llnl-hatchet)")
    from triton.profiler import viewer
    trace, root = tree()
    path = tmp_path / "moe.hatchet"
    profiler.write_hatchet(path, root, trace.devices)
    gf, metrics = viewer.parse(["time/s", "tflop16/s", "gbyte/s", "util"], str(path))
    assert metrics == ["time/s (inc)", "tflop16/s (inc)", "gbyte/s (inc)", "util"]
    frame = gf.dataframe.set_index("name")
    assert frame.loc["ROOT", "time/s (inc)"] == pytest.approx(0.778e-3)
    assert frame.loc["fused_moe", "time/s (inc)"] == pytest.approx(0.728e-3)
    gemm_flops16 = 2 * (gemm_flops(8192, 1536, 2048) + gemm_flops(8192, 2048, 768))
    assert frame.loc["fused_moe_kernel", "tflop16/s (inc)"] == pytest.approx(gemm_flops16 / 0.7e-3 / 1e12)
    assert frame.loc[GEMM1, "gbyte/s (inc)"] == pytest.approx(2 * 8192 * (2048 * 2 + 1536 * 2) / 0.5e-3 / 1e9)
    assert 0 < frame.loc[GEMM1, "util"] < 1  # the device info's layout is what util reads
    assert frame.loc[GEMM1, "count (inc)"] == 2
    text = gf.tree(metric_column=metrics[0], expand_name=True, render_header=False)
    assert "fused_moe_kernel" in text and "add_kernel" in text


def test_protons_viewer_reads_an_empty_profile(tmp_path):
    pytest.importorskip("hatchet", reason="proton-viewer needs llnl-hatchet (pip install llnl-hatchet)")
    from triton.profiler import viewer
    path = tmp_path / "empty.hatchet"
    profiler.write_hatchet(path, profiler.build_tree([]), {})
    gf, metrics = viewer.parse(["time/ms"], str(path))
    assert list(gf.dataframe["name"]) == ["ROOT"] and gf.dataframe[metrics[0]].iloc[0] == 0


def test_traces_of_several_processes_make_one_tree_and_variants_split_by_device(tmp_path):
    second = tmp_path / "trace-4243.json"
    data = json.loads(TRACE.read_text())
    data["pid"] = 4243
    for launch in data["launches"]:
        launch["device"] = 1
    data["devices"] = {"1": dict(data["devices"]["0"])}
    second.write_text(json.dumps(data))
    shutil.copy(TRACE, tmp_path / "trace-4242.json")
    trace = profiler.read_traces(sorted(tmp_path.glob("trace-*.json")))
    assert trace.processes == 2 and len(trace.launches) == 22 and set(trace.devices) == {"0", "1"}
    root = profiler.build_tree(trace.launches)
    gemm = root.children["fused_moe"].children["fused_moe_kernel"]
    assert set(gemm.children) == {f"{GEMM1} (device 0)", f"{GEMM1} (device 1)", f"{GEMM2} (device 0)",
                                  f"{GEMM2} (device 1)"}
    assert set(profiler.hatchet(root, trace.devices)[1]["CUDA"]) == {"0", "1"}


@pytest.mark.parametrize("content, message", [
    ("{", "not a taot profile trace: not valid JSON"),
    ('{"schema": "taot.bench"}', "not a taot profile trace (expected schema 'taot.profile.trace')"),
    ('{"schema": "taot.profile.trace", "version": 2}', "trace version 2; this taot reads version 1"),
    ('{"schema": "taot.profile.trace", "version": 1, "launches": [{"library": "x"}]}',
     "launch 0: not a launch record (KeyError: 'kernel')"),
])
def test_a_bad_trace_is_an_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "trace-1.json"
    path.write_text(content)
    with pytest.raises(TaotError) as caught:
        profiler.read_trace(path)
    assert str(caught.value).startswith(f"{path}: {message}"), str(caught.value)


def test_a_hatchet_path_that_cannot_be_written_is_named_before_anything_runs(tmp_path, monkeypatch):
    profiler.check_hatchet_path(tmp_path / "x.hatchet")
    assert list(tmp_path.iterdir()) == []  # the probe file is removed
    with pytest.raises(TaotError, match=f"^{tmp_path}/no/x.hatchet: cannot be written: its folder {tmp_path}/no "
                                        "does not exist$"):
        profiler.check_hatchet_path(tmp_path / "no" / "x.hatchet")
    with pytest.raises(TaotError, match=f"^{tmp_path}: is a folder, not a hatchet file to write$"):
        profiler.check_hatchet_path(tmp_path)

    def read_only(**where):
        raise OSError(30, "Read-only file system", str(Path(where["dir"]) / "x.hatchet.abc.tmp"))
    monkeypatch.setattr(profiler.tempfile, "mkstemp", read_only)
    with pytest.raises(TaotError, match=f"^{tmp_path}/x.hatchet: cannot be written in {tmp_path} "
                                        r"\(Read-only file system\)$"):
        profiler.check_hatchet_path(tmp_path / "x.hatchet")
