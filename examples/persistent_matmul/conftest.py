# pytest setup for the persistent matmul example: register the `gpu` marker and put this folder on
# sys.path (the tests import persistent_matmul_kernels, aot and jit from here).
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs torch and a CUDA GPU (skipped otherwise)")


def pytest_pycollect_makemodule():
    """Example folders share module names (jit, aot, reference, configs). Before pytest imports a
    test file of this folder, forget those that another folder's tests imported, and put this folder
    first on sys.path, so that one pytest session can collect several examples."""
    for path in HERE.glob("*.py"):
        module = sys.modules.get(path.stem)
        origin = getattr(module, "__file__", None)
        if origin is not None and Path(origin).resolve().parent != HERE:
            del sys.modules[path.stem]
    if sys.path[0] != str(HERE):
        sys.path.insert(0, str(HERE))
