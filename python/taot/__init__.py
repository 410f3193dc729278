# taot's Python front end: validate a kernel spec, compile its variants with Triton, write the manifest.
from .errors import CompileError, SpecError, TaotError

__version__ = "0.1.0"
__all__ = ["CompileError", "SpecError", "TaotError", "__version__"]
