# bench/bench_vs_do_bench_ncu.py without a GPU: the reader of Nsight Compute's CSV (hand-written
# samples in the shape `ncu --csv` writes its details page), the matching of ncu's launches to the
# cases the child launched, the ncu command line and the script's arguments.
import importlib.util

import pytest

from conftest import REPO

_spec = importlib.util.spec_from_file_location("bench_vs_do_bench_ncu", REPO / "bench" / "bench_vs_do_bench_ncu.py")
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def row(launch, kernel, value, unit="nsecond", metric="gpu__time_duration.sum"):
    return (f'"{launch}","4242","python3","127.0.0.1","{kernel}","1","7","(128, 1, 1)","(64, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def test_reads_durations_in_launch_order_skipping_ncu_lines_and_other_metrics():
    text = "\n".join([
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
        '==PROF== Profiling "add_kernel" - 0: 0%....50%....100% - 1 pass',
        HEADER,
        row(0, "add_kernel", "5,120"),
        row(0, "add_kernel", "1,024", unit="inst", metric="smsp__inst_executed.sum"),
        row(1, "add_kernel", "4.75", unit="usecond"),
        row(2, "softmax_kernel", "1.5", unit="msecond"),
        row(3, "matmul_kernel(float *, int)", "812,345.5"),
        "",
        "==PROF== Disconnected from process 4242",
    ])
    rows = script.parse_ncu_csv(text)
    assert [(r.launch, r.kernel) for r in rows] == [(0, "add_kernel"), (1, "add_kernel"), (2, "softmax_kernel"),
                                                    (3, "matmul_kernel(float *, int)")]
    assert [r.us for r in rows] == pytest.approx([5.12, 4.75, 1500.0, 812.3455])
    assert script.function_name(rows[3].kernel) == "matmul_kernel"


def test_no_header_is_no_launch_and_a_repeated_header_is_skipped():
    assert script.parse_ncu_csv("==PROF== Connected to process 1\n==WARNING== No kernels were profiled.\n") == []
    text = "\n".join([HEADER, row(0, "add_kernel", "2,000"), HEADER, row(0, "add_kernel", "3000")])
    rows = script.parse_ncu_csv(text)
    assert [r.us for r in rows] == [2.0, 3.0]


@pytest.mark.parametrize("text, message", [
    ('"ID","Kernel Name","Metric Value"\n"0","add_kernel","1"', "no column 'Metric Name'"),
    (HEADER + "\n" + row(0, "add_kernel", "n/a"), "launch '0' of add_kernel has gpu__time_duration.sum 'n/a'"),
    (HEADER + "\n" + row(0, "add_kernel", "12", unit="byte"), "row 1: gpu__time_duration.sum in 'byte'"),
    (HEADER + '\n"0","4242","python3"', "row 1: 3 values, the header has 15"),
])
def test_unreadable_csv_is_an_error_that_says_where(text, message):
    with pytest.raises(script.NcuError, match=message.replace("(", r"\(").replace(")", r"\)")):
        script.parse_ncu_csv(text)


def rows_of(*kernels):
    return [script.NcuRow(index, kernel, float(index + 1)) for index, kernel in enumerate(kernels)]


def test_launches_are_matched_to_the_cases_in_order():
    log = [{"id": "vector_add.add_kernel(n=65536, dtype=fp32)", "function": "add_kernel", "launches": 2},
           {"id": "softmax.softmax(rows=4096, cols=1024, dtype=fp16)", "function": "softmax_kernel", "launches": 0,
            "error": "RuntimeError: out of memory"},
           {"id": "matmul.matmul(M=16, N=4096, K=4096, dtype=bf16)", "function": "matmul_kernel", "launches": 3}]
    samples = script.assign_launches(rows_of("add_kernel", "add_kernel", *["matmul_kernel"] * 3), log)
    assert samples == {"vector_add.add_kernel(n=65536, dtype=fp32)": [1.0, 2.0],
                       "matmul.matmul(M=16, N=4096, K=4096, dtype=bf16)": [3.0, 4.0, 5.0]}


def test_launches_that_do_not_match_are_an_error():
    log = [{"id": "a", "function": "add_kernel", "launches": 2},
           {"id": "b", "function": "matmul_kernel", "launches": 1}]
    with pytest.raises(script.NcuError, match="ncu reported 2 launches of the kernels profiled, the child made 3"):
        script.assign_launches(rows_of("add_kernel", "add_kernel"), log)
    with pytest.raises(script.NcuError, match="ncu's launch 1 is softmax_kernel, but the child's launch there was "
                                              "add_kernel for a"):
        script.assign_launches(rows_of("add_kernel", "softmax_kernel", "matmul_kernel"), log)


def test_ncu_command_profiles_only_the_triton_kernels_with_clocks_left_alone():
    command = script.ncu_command("/usr/local/cuda/bin/ncu", ["matmul_kernel", "add_kernel", "add_kernel"],
                                 "/tmp/ncu.csv", "/tmp/plan.json", python="python3", script="bench.py")
    text = " ".join(command)
    for option in ("--target-processes all", "--metrics gpu__time_duration.sum", "--cache-control all",
                   "--clock-control none", "--csv", "--log-file /tmp/ncu.csv"):
        assert option in text
    assert command[command.index("--kernel-name") + 1] == "regex:^(add_kernel|matmul_kernel)$"
    assert command[-4:] == ["python3", "bench.py", "--ncu-child", "/tmp/plan.json"]


def test_ncu_is_found_or_reported_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.delenv("CUDA_PATH", raising=False)
    assert script.find_ncu(str(tmp_path / "nowhere" / "ncu")) is None
    ncu = tmp_path / "cuda" / "bin" / "ncu"
    ncu.parent.mkdir(parents=True)
    ncu.write_text("#!/bin/sh\n")
    ncu.chmod(0o755)
    assert script.find_ncu() == str(ncu)


def test_arguments():
    options = script.parse_args([])
    assert (options.module_dir, options.only, options.json, options.no_ncu) == ([], None, None, False)
    assert (options.warmup_ms, options.rep_ms, options.ncu_launches, options.ncu_child) == (25.0, 100.0, 5, None)
    options = script.parse_args(["--module-dir", "a", "--module-dir", "b", "--only", "softmax", "--only", "matmul",
                                 "--json", "out.json", "--ncu-launches", "3", "--no-ncu"])
    assert options.module_dir == ["a", "b"] and options.only == ["softmax", "matmul"]
    assert (options.json, options.ncu_launches, options.no_ncu) == ("out.json", 3, True)
    assert script.parse_args(["--ncu-child", "plan.json"]).ncu_child == "plan.json"
    for bad in (["--only", "layer_norm"], ["--ncu-launches", "0"], ["--rep-ms", "0"]):
        with pytest.raises(SystemExit):
            script.parse_args(bad)


def test_a_library_folder_stands_for_its_build_folder(tmp_path):
    library = tmp_path / "softmax"
    (library / "build").mkdir(parents=True)
    (library / "manifest.json").write_text("{}")
    assert script.module_search_path([str(library), str(tmp_path)]) == [
        str(library / "build"), str(library), str(tmp_path)]


def test_cases_follow_the_example_bench_files():
    bench_files = script.load_bench_files(list(script.LIBRARIES))
    cases = script.plan_cases(list(script.LIBRARIES), bench_files)
    ids = [case.id for case in cases]
    assert len(set(ids)) == len(ids)
    assert "matmul.matmul(M=4096, N=4096, K=4096, dtype=bf16)" in ids
    assert "vector_add.add_kernel(n=65536, dtype=fp32)" in ids
    assert "vector_add.add_kernel(n=67108864, dtype=fp32)" in ids
    assert {case.function for case in cases} == {"add_kernel", "softmax_kernel", "matmul_kernel"}
    for case in cases:  # every formula evaluates: the shapes have the bench files' dimensions
        assert bench_files[case.library].kernel(case.kernel).bytes_of(case.shape) > 0
