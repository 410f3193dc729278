# taot's Python front end: validate a kernel spec, compile its variants with Triton, write the manifest.
from pathlib import Path

from .errors import CompileError, SpecError, TaotError

# The folder that holds this package: what a child Python process needs on PYTHONPATH to import taot.
IMPORT_ROOT = Path(__file__).resolve().parent.parent

__version__ = "0.1.0"
__all__ = ["CompileError", "SpecError", "TaotError", "__version__"]
