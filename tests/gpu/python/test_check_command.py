"""`taot check` on a GPU through the command line, on the vector_add and matmul libraries (the
build_module fixture of tests/gpu_modules.py builds them): every variant against Triton's JIT (bitwise),
against the bench file's reference, and against Triton's interpreter on the CPU; and a mismatch
found and located (a bench file whose reference is wrong on purpose)."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.gpu
vector_add = module_fixture("examples/vector_add/vector_add.toml")
matmul = module_fixture("examples/matmul/matmul.toml")


def taot_check(*arguments):
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", "taot", "check", *map(str, arguments)], capture_output=True,
                            text=True, env=environment, timeout=500)
    print(result.stdout[-3000:])
    print(result.stderr[-2000:], file=sys.stderr)
    return result


def results_of(*arguments):
    path = Path(tempfile.mkdtemp()) / "check.json"
    result = taot_check(*arguments, "-o", path, "-q")
    if not path.exists():
        return result, []
    document = json.loads(path.read_text())
    assert (document["schema"], document["schema_version"]) == ("taot.check", 1)
    return result, document["comparisons"]


VECTOR_ADD = ("--bench", ROOT / "examples/vector_add/bench_vector_add.py")


def test_every_vector_add_variant_is_bitwise_equal_to_the_jit(vector_add):
    result, rows = results_of(vector_add.folder, *VECTOR_ADD, "--where", "n=4096,1048576")
    assert result.returncode == 0, result.stderr
    assert len(rows) >= 8 and all(row["status"] == "ok" and row["max_abs"] == 0 for row in rows)
    assert "checks passed against jit" in result.stdout


def test_matmul_against_jit_and_reference(matmul):
    where = ("--kernel", "matmul", "--where", "M=64,4096", "--where", "dtype=bf16")
    result, rows = results_of(matmul.folder, "--bench", ROOT / "examples/matmul/bench_matmul.py", *where)
    assert result.returncode == 0, result.stderr
    assert rows and all(row["status"] == "ok" for row in rows)
    result, rows = results_of(matmul.folder, "--bench", ROOT / "examples/matmul/bench_matmul.py", *where,
                              "--against", "reference", "--variants", "auto")
    assert result.returncode == 0, result.stderr
    assert len(rows) == 2 and all(row["status"] == "ok" and row["max_abs"] > 0 for row in rows)  # fp32 accumulation


def test_vector_add_against_the_interpreter_on_the_cpu(vector_add):
    result, rows = results_of(vector_add.folder, *VECTOR_ADD, "--where", "n=4096", "--where", "dtype=fp32",
                              "--against", "interpreter", "--variants", "auto,0")
    assert result.returncode == 0, result.stderr
    assert len(rows) == 2 and all(row["status"] == "ok" for row in rows)


def test_matmul_against_the_interpreter_on_the_cpu(matmul):
    """fp16 (Triton 3.6's interpreter computes bf16 on its bit patterns; docs/debug.md, Limits)."""
    where = ("--kernel", "matmul", "--where", "M=64", "--where", "dtype=fp16")
    result, rows = results_of(matmul.folder, "--bench", ROOT / "examples/matmul/bench_matmul.py", *where,
                              "--against", "interpreter", "--variants", "auto")
    assert result.returncode == 0, result.stderr
    assert len(rows) == 1 and rows[0]["status"] == "ok"


def test_a_mismatch_is_reported_with_its_first_index(vector_add):
    broken = Path(tempfile.mkdtemp()) / "bench_broken_add.py"
    broken.write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('va_bench', {str(ROOT / 'examples/vector_add/bench_vector_add.py')!r})\n"
        "va = importlib.util.module_from_spec(spec); spec.loader.exec_module(va)\n"
        "KERNEL, DIMS, SHAPES, OUTPUTS = va.KERNEL, va.DIMS, [(4096, 'fp32')], va.OUTPUTS\n"
        "make_args = va.make_args\n"
        "def reference(x, y, out, n):\n"
        "    expected = x + y\n"
        "    expected[7] += 1.0\n"
        "    return expected\n")
    result, rows = results_of(vector_add.folder, "--bench", broken, "--against", "reference", "--variants", "auto")
    assert result.returncode == 1
    (row,) = rows
    assert row["status"] == "mismatch" and row["first_index"] == [7] and row["output"] == "output_ptr"
    assert abs(row["max_abs"] - 1.0) < 1e-6

