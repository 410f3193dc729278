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


class _Mounted:
    """A tmpfs mounted at `path` for one test (unmounted after it): a full disk or a read-only folder
    as the kernel reports them (ENOSPC, EROFS), which mode bits cannot give a root user."""

    def __init__(self, path, options):
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True,
                                 text=True)
        if mounted.returncode != 0:
            pytest.skip(f"needs a tmpfs of its own (mount -t tmpfs as root): {mounted.stderr.strip()}")

    def remount(self, options):
        subprocess.run(["mount", "-o", f"remount,{options}", str(self.path)], check=True)

    def unmount(self):
        subprocess.run(["umount", "-l", str(self.path)], check=False)


@pytest.fixture
def small_filesystem(tmp_path):
    """A folder on a filesystem of 64 KiB: what is written there past that fails with ENOSPC."""
    mounted = _Mounted(tmp_path / "small", "size=64k")
    yield mounted
    mounted.unmount()


@pytest.fixture
def read_only_filesystem(tmp_path):
    """An empty folder on a read-only filesystem: every write there fails with EROFS, also for root."""
    mounted = _Mounted(tmp_path / "rofs", "ro,size=64k")
    yield mounted
    mounted.unmount()
