# pytest setup for the Gluon example: this folder first on sys.path (the tests
# import gluon_kernels, aot and jit from here); see ../example_support.py.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from example_support import example_hooks  # noqa: E402 (after the path it is found on)

pytest_pycollect_makemodule = example_hooks(Path(__file__).parent)
