# pytest setup shared by every test folder of the repo: the plugin tests/gpu_modules.py (the `gpu`
# marker, the build_module fixture that builds a taot spec into its Python module), and this
# checkout's taot package (with its binding taot._native, which generated Python modules load)
# importable in the tests and in the processes they start (PYTHONPATH).
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent
sys.path.append(str(REPO / "tests"))
if str(REPO / "python") not in sys.path:
    sys.path.insert(0, str(REPO / "python"))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "python"), os.environ.get("PYTHONPATH")]))
pytest_plugins = ["gpu_modules"]
