# pytest setup for the first-call autotuning tests: this folder first on sys.path (kernels). The
# `gpu` marker and the build_module fixture come from tests/gpu_modules.py (the repo's conftest.py).
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
