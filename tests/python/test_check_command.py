"""`taot check` without a GPU: usage errors and what is reported before any GPU work."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "examples" / "vector_add" / "bench_vector_add.py"


def taot_check(*arguments):
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "taot", "check", *map(str, arguments)], capture_output=True, text=True,
                          env=environment, timeout=120)


def test_usage_errors(tmp_path):
    result = taot_check(tmp_path, "--bench", BENCH, "--against", "cuda")
    assert result.returncode == 2 and "--against" in result.stderr and "interpreter" in result.stderr
    result = taot_check(tmp_path, "--bench", BENCH, "--where", "n")
    assert result.returncode == 2 and "--where n: expected DIM=VALUE" in result.stderr


def test_a_folder_without_a_library_is_named(tmp_path):
    result = taot_check(tmp_path, "--bench", BENCH)
    assert result.returncode == 1 and "no manifest.json here" in result.stderr


def parsed(*arguments):
    import argparse

    from taot.commands import check as command
    parser = argparse.ArgumentParser(prog="taot check")
    command.add_arguments(parser)
    result = parser.parse_args(list(map(str, arguments)))
    command.check(parser, result)
    return result


@pytest.fixture
def two_results(monkeypatch, tmp_path):
    """check's command with its engine answering one ok and one mismatching comparison."""
    from types import SimpleNamespace

    from taot.commands import check as command
    from taot.debug.check import Comparison
    results = [Comparison("add_kernel", {"n": 4096}, "auto", "jit", "ok"),
               Comparison("add_kernel", {"n": 4096}, "add_kernel_BS512", "jit", "mismatch", 2.0, 1.0, (7,), "out_ptr",
                          "1 of 4096 elements of out_ptr differ (atol=0, rtol=0)")]
    library = SimpleNamespace(folder=tmp_path, name="vector_add", kernel_names=lambda: ["add_kernel"])
    monkeypatch.setattr(command, "load_bench_file", lambda path: SimpleNamespace(check_library=lambda *a: None))
    monkeypatch.setattr(command, "load_library", lambda *a: library)
    monkeypatch.setattr(command, "read_manifest", lambda folder: {})
    monkeypatch.setattr(command.engine, "run_check", lambda *a, **k: results)
    return command


def test_json_prints_every_comparison_alone_on_stdout(two_results, capsys, tmp_path):
    assert two_results.run(parsed(tmp_path, "--bench", BENCH, "--json", "-q")) == 1
    out, err = capsys.readouterr()
    document = json.loads(out)
    assert (document["schema"], document["schema_version"]) == ("taot.check", 1)
    rows = document["comparisons"]
    assert [(row["variant"], row["status"], row["first_index"]) for row in rows] == \
        [("auto", "ok", None), ("add_kernel_BS512", "mismatch", [7])]
    assert "1 of 2 checks passed against jit; 1 failed" in err


def test_output_writes_the_same_json_beside_the_table(two_results, capsys, tmp_path):
    assert two_results.run(parsed(tmp_path, "--bench", BENCH, "-o", tmp_path / "check.json", "-q")) == 1
    out, _ = capsys.readouterr()
    assert "out_ptr[7] add_kernel_BS512" in out and "1 of 2 checks passed" in out
    rows = json.loads((tmp_path / "check.json").read_text())["comparisons"]
    assert [row["status"] for row in rows] == ["ok", "mismatch"] and rows[1]["max_abs"] == 2.0
