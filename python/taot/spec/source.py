# Import a kernel's Python file by path and find its @triton.jit function, possibly wrapped in
# @triton.autotune / @triton.heuristics (main process and pool workers).
import hashlib
from pathlib import Path

from ..errors import Problem
from .decorators import unwrap
from .pyfile import PythonFileError, import_file, module_name_for

# (resolved path, content digest) -> module, so a file edited between builds is imported afresh.
_modules = {}


def import_source(path):
    """The module defined by the Python file at `path`; its folder is on sys.path while it imports."""
    path = Path(path).resolve()
    try:
        content = path.read_bytes()
    except OSError as error:
        raise Problem(expected="a readable Python file", got=f"{path} ({error.strerror})") from None
    digest = hashlib.sha256(content).hexdigest()
    cached = _modules.get((path, digest))
    if cached is not None:
        return cached
    try:
        module = import_file(path, module_name_for("kernel", path, digest[:12]))
    except PythonFileError as error:
        raise Problem(expected="a Python file that imports cleanly", got=str(error)) from None
    _modules[(path, digest)] = module
    return module


def jit_function_names(module):
    return sorted(name for name, value in vars(module).items() if _is_kernel(value))


def _is_kernel(value):
    try:
        return unwrap(value) is not None
    except Exception:  # a decorator taot refuses still names a kernel
        return True


def find_kernel(module, name, source_label):
    """The kernel `name` of `module` as a decorators.Decorated: the @triton.jit function and the
    @triton.autotune / @triton.heuristics around it. errors.Problem (expected, got) when
    absent or not a kernel, or for a decorator taot cannot take."""
    value = getattr(module, name, None)
    if value is None:
        names = jit_function_names(module)
        has = ", ".join(names) if names else "none"
        raise Problem(expected=f"a @triton.jit function of {source_label} (it has: {has})",
                      got=f'"{name}", which it does not define')
    decorated = unwrap(value)
    if decorated is None:
        raise Problem(expected="the name of a @triton.jit function", got=f'"{name}", which is {_kind_of(value)}')
    return decorated


def _kind_of(value):
    kind = type(value).__name__
    if callable(value):
        return "a plain Python function, not @triton.jit" if kind == "function" else f"a {kind}, not @triton.jit"
    return f"a {kind}, not a function"


def load_function(path, name):
    """Import `path` and return the @triton.jit function of kernel `name` (used by pool workers)."""
    return find_kernel(import_source(path), name, Path(path).name).jit
