# Import a kernel's Python file by path and find its @triton.jit function (main process and pool workers).
import hashlib
from pathlib import Path

from .pyfile import PythonFileError, import_file, module_name_for

# (resolved path, content digest) -> module, so a file edited between builds is imported afresh.
_modules = {}


class SourceProblem(Exception):
    """The source file or function is not usable; `expected` and `got` phrase it for a SpecError."""

    def __init__(self, expected, got):
        super().__init__(f"expected {expected}, got {got}")
        self.expected = expected
        self.got = got


def import_source(path):
    """The module defined by the Python file at `path`; its folder is on sys.path while it imports."""
    path = Path(path).resolve()
    try:
        content = path.read_bytes()
    except OSError as error:
        raise SourceProblem("a readable Python file", f"{path} ({error.strerror})") from None
    digest = hashlib.sha256(content).hexdigest()
    cached = _modules.get((path, digest))
    if cached is not None:
        return cached
    try:
        module = import_file(path, module_name_for("kernel", path, digest[:12]))
    except PythonFileError as error:
        raise SourceProblem("a Python file that imports cleanly", str(error)) from None
    _modules[(path, digest)] = module
    return module


def jit_function_names(module):
    from triton.runtime.jit import JITFunction
    return sorted(name for name, value in vars(module).items() if isinstance(value, JITFunction))


def find_jit_function(module, name, source_label):
    """The @triton.jit function `name` of `module`; SourceProblem when absent or not a JIT function."""
    from triton.runtime.jit import JITFunction
    value = getattr(module, name, None)
    if value is None:
        names = jit_function_names(module)
        has = ", ".join(names) if names else "none"
        raise SourceProblem(f"a @triton.jit function of {source_label} (it has: {has})",
                            f'"{name}", which it does not define')
    if not isinstance(value, JITFunction):
        raise SourceProblem("the name of a @triton.jit function",
                            f'"{name}", which is {_kind_of(value)}')
    return value


def _kind_of(value):
    kind = type(value).__name__
    if kind in ("Autotuner", "Heuristics"):
        decorator = "@triton.autotune" if kind == "Autotuner" else "@triton.heuristics"
        return f"wrapped in {decorator} (taot enumerates configs itself: remove the decorator)"
    if callable(value):
        return "a plain Python function, not @triton.jit" if kind == "function" else f"a {kind}, not @triton.jit"
    return f"a {kind}, not a function"


def load_function(path, name):
    """Import `path` and return its JIT function `name` (used by pool workers)."""
    return find_jit_function(import_source(path), name, Path(path).name)
