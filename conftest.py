# pytest setup shared by every test folder of the repo: the plugin tests/gpu_modules.py (the `gpu`
# marker, the build_module fixture that builds a taot spec into its Python module).
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent / "tests"))
pytest_plugins = ["gpu_modules"]
