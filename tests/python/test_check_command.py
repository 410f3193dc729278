"""`taot check` without a GPU: usage errors and what is reported before any GPU work."""
import os
import subprocess
import sys
from pathlib import Path

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
