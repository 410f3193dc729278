"""`taot sanitize` on a GPU: a kernel of ours with an out-of-bounds store (tests/gpu/sanitize) is
built, checked under memcheck, and the report names the kernel and the store's source line, once for
the whole check and per variant; vector_add's check is clean. The build_module fixture
(tests/gpu_modules.py) builds both libraries."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py

ROOT = Path(__file__).resolve().parents[3]
HERE = ROOT / "tests" / "gpu" / "sanitize"
pytestmark = pytest.mark.gpu
STORE_LINE = next(number for number, line in enumerate((HERE / "kernels.py").read_text().splitlines(), 1)
                  if "tl.store" in line)


def taot(*arguments, timeout=400):
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", "taot", *map(str, arguments)], capture_output=True, text=True,
                            env=environment, timeout=timeout)
    print(result.stdout[-3000:])
    print(result.stderr[-3000:], file=sys.stderr)
    return result

oob = module_fixture(HERE / "oob.toml")
vector_add = module_fixture("examples/vector_add/vector_add.toml")


def test_memcheck_names_the_out_of_bounds_store_per_variant(oob):
    library = oob.folder
    report = Path(tempfile.mkdtemp()) / "report.json"
    result = taot("sanitize", "-o", report, "--", "check", library, "--bench", HERE / "bench_oob.py",
                  "--against", "reference")
    assert result.returncode == 1
    document = json.loads(report.read_text())
    assert (document["schema"], document["schema_version"]) == ("taot.sanitize", 1)
    (entry,) = document["runs"]
    assert entry["errors"] >= 1
    kinds = {(f["kind"].split(" of size")[0], f["function"], Path(f["file"] or "").name, f["line"])
             for f in entry["findings"]}
    assert ("Invalid __global__ write", "oob_double_kernel", "kernels.py", STORE_LINE) in kinds, kinds
    per_variant = Path(tempfile.mkdtemp()) / "per_variant.json"
    result = taot("sanitize", "--per-variant", "-o", per_variant, "--", "check", library, "--bench",
                  HERE / "bench_oob.py", "--against", "reference")
    assert result.returncode == 1
    entries = json.loads(per_variant.read_text())["runs"]
    assert len(entries) == 2 and all(e["errors"] >= 1 for e in entries)
    assert all(any(f["line"] == STORE_LINE for f in e["findings"]) for e in entries)


def test_a_clean_check_is_clean(vector_add):
    report = Path(tempfile.mkdtemp()) / "clean.json"
    result = taot("sanitize", "-o", report, "--", "check", vector_add.folder, "--bench",
                  ROOT / "examples/vector_add/bench_vector_add.py", "--where", "n=4096", "--where", "dtype=fp32",
                  "--variants", "auto")
    assert result.returncode == 0, result.stderr
    (entry,) = json.loads(report.read_text())["runs"]
    assert entry["errors"] == 0 and entry["findings"] == []


def test_the_other_tools_run_and_report_clean_on_vector_add(vector_add):
    for tool in ("racecheck", "initcheck", "synccheck"):
        report = Path(tempfile.mkdtemp()) / f"{tool}.json"
        result = taot("sanitize", "--tool", tool, "-o", report, "-q", "--", "check", vector_add.folder, "--bench",
                      ROOT / "examples/vector_add/bench_vector_add.py", "--where", "n=4096", "--where", "dtype=fp32",
                      "--variants", "auto")
        assert result.returncode == 0, (tool, result.stdout[-2000:])
        (entry,) = json.loads(report.read_text())["runs"]
        assert entry["errors"] == 0, (tool, entry)
