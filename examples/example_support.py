"""What the example folders' tests share: the pytest hooks their conftest.py files install, and
the check that decides whether their GPU tests can run here. Put on sys.path by each conftest.py."""
import sys
from pathlib import Path

import pytest


def example_hooks(folder):
    """pytest_configure and pytest_pycollect_makemodule for the example in `folder`: register the
    `gpu` marker, and before pytest imports one of the folder's test files, put the folder first on
    sys.path and forget same-named modules (jit, aot, reference, configs) that another example's
    tests imported, so that one pytest session can collect several examples."""
    folder = Path(folder).resolve()

    def pytest_configure(config):
        config.addinivalue_line("markers", "gpu: needs torch and a CUDA GPU (skipped otherwise)")

    def pytest_pycollect_makemodule():
        for path in folder.glob("*.py"):
            module = sys.modules.get(path.stem)
            origin = getattr(module, "__file__", None)
            if origin is not None and Path(origin).resolve().parent != folder:
                del sys.modules[path.stem]
        if sys.path[0] != str(folder):
            sys.path.insert(0, str(folder))

    sys.path.insert(0, str(folder))
    return pytest_configure, pytest_pycollect_makemodule


def torch_and_skip_reason(capability_ok=None, why=""):
    """(torch or None, why the GPU tests cannot run here or None). `capability_ok`, when given, is a
    predicate on torch.cuda.get_device_capability(); `why` is the reason when it fails."""
    try:
        import torch
    except ImportError:
        return None, "needs PyTorch with CUDA: torch is not installed"
    if not torch.cuda.is_available():
        return torch, "needs a CUDA GPU: torch.cuda.is_available() is False"
    if capability_ok is not None and not capability_ok(torch.cuda.get_device_capability()):
        return torch, why
    return torch, None


def gpu_marks(skip_reason):
    """The `pytestmark` of a GPU test file: marked `gpu`, skipped for `skip_reason` when there is one."""
    return [pytest.mark.gpu, pytest.mark.skipif(skip_reason is not None, reason=skip_reason or "")]
