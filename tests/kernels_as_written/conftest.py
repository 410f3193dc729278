# pytest setup for the kernels-as-written tests: this folder first on sys.path (kernels, jit), the
# `gpu` marker.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs torch and a CUDA GPU (skipped otherwise)")
