# pytest setup for the fused MoE example: register the `gpu` marker and put this folder on sys.path
# (the tests import moe_kernels, jit and reference from here).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs torch and a CUDA GPU (skipped otherwise)")
