# Import a kernel's Python file (by path) or installed module (by name) and find its @triton.jit
# function, possibly wrapped in @triton.autotune / @triton.heuristics (main process and pool
# workers). With a target's device facts, the import sees that device (device_facts.py); a module
# whose import asked the device is imported once per target, one that did not once for all.
import dataclasses
import hashlib
import importlib
import importlib.util
import sys
from pathlib import Path

from ..errors import Problem
from . import device_facts as device
from .decorators import unwrap
from .pyfile import PythonFileError, exception_summary, forget_neighbours, import_file, module_name_for


@dataclasses.dataclass(frozen=True)
class KernelSource:
    """Where a kernel's function is defined: a Python file, or an installed module (`module`, its
    dotted name, with `path` its file once imported; `search` the folder put first on sys.path
    while it imports, the spec's)."""
    path: Path = None
    module: str = None
    search: str = None

    def label(self):
        return f"module {self.module}" if self.module else Path(self.path).name


def split_reference(text):
    """("pkg.ops.norm", "_norm_fwd_kernel") for "pkg.ops.norm:_norm_fwd_kernel"; (None, text) for a
    plain function name; Problem for a reference that is neither."""
    if ":" not in text:
        return None, text
    module, _, function = text.partition(":")
    if not all(part.isidentifier() for part in module.split(".")) or not function.isidentifier():
        raise Problem(expected='a function name, or an installed module and a function such as '
                               '"some_package.ops.norm:_norm_fwd_kernel"', got=f'"{text}"')
    return module, function


@dataclasses.dataclass
class _Imported:
    """One source's imports: `shared`, the module when its import asked the device nothing (it
    serves every target), else `per_target` (facts -> module) and the names of the modules to drop
    from sys.modules before importing for other facts (those whose import asked the device).
    `file` and `digest`: the file imported and its SHA-256 then (an edited file is imported afresh)."""
    file: Path
    digest: str
    shared: object = None
    per_target: dict = dataclasses.field(default_factory=dict)
    dependent: set = dataclasses.field(default_factory=set)
    notes: dict = dataclasses.field(default_factory=dict)  # facts -> notes for queries taot cannot answer


_imports = {}  # (resolved path or module name) -> _Imported
_current = {"facts": None}  # the facts the device-dependent modules now in sys.modules were imported with


def import_source(path, facts=None):
    """The module defined by the Python file at `path`; its folder is on sys.path while it imports.
    With `facts` (device_facts.DeviceFacts), the device queries it makes answer with them."""
    return import_kernel_module(KernelSource(path=Path(path)), facts)


def import_kernel_module(source, facts=None):
    """The module of a KernelSource, imported with `facts` answering device queries (None: no
    answers, as before a build). Problem (expected, got) when it cannot be imported."""
    key = _key(source)
    imported = _imports.get(key)
    if imported is not None and _file_digest(imported.file) != imported.digest:  # edited since: afresh
        _drop(imported)
        del _imports[key]
        imported = None
    if imported is not None:
        if imported.shared is not None:
            return imported.shared
        if facts in imported.per_target:
            return imported.per_target[facts]
    if facts is not None and _current["facts"] not in (None, facts):
        for other in _imports.values():  # another target's package modules must not serve this one
            _drop(other)
    if source.module is not None and source.module in sys.modules and imported is None:
        del sys.modules[source.module]  # imported before without these facts: run it with them
    digest = None
    if source.module is None:
        digest = _file_digest(key)
        if digest is None:
            raise Problem(expected="a readable Python file", got=f"{key} (it cannot be read)")
    before = set(sys.modules)
    with (device.answering(facts) if facts is not None else _no_answers()) as probes:
        if source.module is None:
            suffix = f"_{facts.target}" if imported is not None and facts is not None else ""
            module = _import_file(key, digest, suffix)
        else:
            module = _import_module(source)
    if imported is None:
        file = key if source.module is None else Path(getattr(module, "__file__", "") or ".").resolve()
        imported = _imports[key] = _Imported(file, digest or _file_digest(file))
    if facts is not None:
        _current["facts"] = facts
    if probes is not None and probes.unanswered:
        imported.notes[facts] = tuple(probes.unanswered)
    if probes is None or not (probes.answered or probes.unanswered):
        imported.shared = module
    else:
        imported.per_target[facts] = module
        new = set(sys.modules) - before
        tops = {name.partition(".")[0] for name in (probes.modules & new) | {module.__name__}}
        imported.dependent |= {name for name in new if name.partition(".")[0] in tops}
        imported.dependent |= _neighbours_of(source, new)
    return module


def module_file(source):
    """The file a module reference was imported from (after import_kernel_module)."""
    return _imports[_key(source)].file


def probe_notes(source, facts):
    """The notes for device queries taot could not answer while importing `source` with `facts`."""
    imported = _imports.get(_key(source))
    return imported.notes.get(facts, ()) if imported is not None else ()


def _key(source):
    return source.module or Path(source.path).resolve()


class _no_answers:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _file_digest(path):
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def _import_file(path, digest, suffix):
    try:
        return import_file(path, module_name_for("kernel", path, digest[:12]) + suffix)
    except PythonFileError as error:
        raise Problem(expected="a Python file that imports cleanly", got=str(error)) from None


def _import_module(source):
    """importlib.import_module(source.module) with the spec's folder first on sys.path."""
    search = [source.search] if source.search else []
    sys.path[:0] = search
    try:
        return importlib.import_module(source.module)
    except ModuleNotFoundError as error:
        parents = [".".join(source.module.split(".")[:count]) for count in range(1, source.module.count(".") + 2)]
        if error.name in parents:
            where = f" or {source.search}" if source.search else ""
            raise Problem(expected=f"an installed module (found on the sys.path of {sys.executable}{where}; "
                                   "set TAOT_PYTHON to use another Python)",
                          got=f'"{source.module}": no module named {error.name}') from None
        raise Problem(expected=f"module {source.module} to import cleanly",
                      got=exception_summary(error, _file_of(source.module))) from None
    except Exception as error:  # the user's code failed: summarise it instead of crashing
        raise Problem(expected=f"module {source.module} to import cleanly",
                      got=exception_summary(error, _file_of(source.module))) from None
    finally:
        for entry in search:
            if entry in sys.path:
                sys.path.remove(entry)


def _file_of(module_name):
    """The file of a module that failed to import (for the line in its summary), or None."""
    try:
        spec = importlib.util.find_spec(module_name)
    except Exception:
        return None
    return spec.origin if spec is not None else None


def _neighbours_of(source, names):
    """Of the modules `names`, those whose file lies in the kernel file's folder (its neighbours)."""
    if source.module is not None:
        return set()
    folder = Path(source.path).resolve().parent
    found = set()
    for name in names:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file and Path(file).resolve().is_relative_to(folder):
            found.add(name)
    return found


def _drop(imported):
    """Remove from sys.modules what importing for other facts must execute again."""
    for name in imported.dependent:
        sys.modules.pop(name, None)
    forget_neighbours(imported.dependent)


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


def load_function(path, name, module=None, facts=None, search=None):
    """Import the kernel's file at `path` (or installed `module`, by name) as for the target of
    `facts` and return the @triton.jit function of kernel `name` (used by pool workers)."""
    source = KernelSource(path=Path(path) if path else None, module=module, search=search)
    return find_kernel(import_kernel_module(source, facts), name, source.label()).jit
