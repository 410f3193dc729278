# Fixtures for the interpreter-reference tests: taot's Python front end on sys.path, torch (missing
# torch fails these tests, it does not skip them), and example libraries built by the real taot
# binary for sm_90 (manifests and cubins only: nothing here needs a GPU).
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))


@pytest.fixture(scope="session")
def torch():
    try:
        import torch
    except ImportError:
        pytest.fail(f"tests/interpreter needs torch, which {sys.executable} lacks: run them under the torch "
                    f"environment (scripts/torch_env.sh, then build/torch-env/bin/python -m pytest tests/interpreter)",
                    pytrace=False)
    return torch


@pytest.fixture(scope="session")
def taot_bin():
    path = Path(os.environ.get("TAOT_BIN", REPO / "build" / "tools" / "taot" / "taot"))
    if not path.exists():
        pytest.fail(f"the taot binary is not built at {path} (set TAOT_BIN or build first)", pytrace=False)
    return path


class Library:
    """A built library's folder and manifest."""

    def __init__(self, folder):
        self.folder = folder
        self.manifest = json.loads((folder / "manifest.json").read_text())

    def kernel(self, name):
        return next(k for k in self.manifest["kernels"] if k["name"] == name)


@pytest.fixture(scope="session")
def example_library(taot_bin, tmp_path_factory):
    """example_library("matmul"): examples/matmul/matmul.toml built once per session into a temporary folder."""
    built = {}

    def build(example):
        if example not in built:
            folder = tmp_path_factory.mktemp(example)
            spec = REPO / "examples" / example / f"{example}.toml"
            result = subprocess.run([str(taot_bin), "build", str(spec), "-o", str(folder), "--target", "sm_90",
                                     "-j", "2", "--quiet"], capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                pytest.fail(f"taot build {spec} failed ({result.returncode}): {result.stderr[-2000:]}", pytrace=False)
            built[example] = Library(folder)
        return built[example]

    return build
