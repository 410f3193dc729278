"""Fixtures for tests that run the real taot binary: its path and a runner."""
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def taot_bin() -> Path:
    path = Path(os.environ.get("TAOT_BIN", REPO / "build" / "tools" / "taot" / "taot"))
    if not path.exists():
        pytest.fail(f"the taot binary is not built at {path} (set TAOT_BIN or build first)")
    return path


@pytest.fixture
def run_taot(taot_bin):
    def run(*args, cwd=None, timeout=900):
        return subprocess.run([str(taot_bin), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                              timeout=timeout)
    return run
