# Run a user's Python file as a module by path, turning its exceptions into one-line summaries.
import importlib.util
import sys
from pathlib import Path

from ..errors import Problem


class PythonFileError(Problem):
    """The file raised while importing; str() is a one-line summary with the line in that file."""


# folder -> {module name: module} of the modules imported from that folder by the files run from
# it: two folders may each have a `common.py`, and each file must get its own folder's.
_neighbours = {}


def import_file(path, module_name):
    """Execute the file at `path` as module `module_name` (registered in sys.modules) with the
    file's folder first on sys.path while it runs, so it can import its neighbours: modules of that
    folder, never a same-named one another folder's file imported before."""
    path = Path(path).resolve()
    package, package_root = _package_of(path.parent)
    if package:  # a module of the package, so that `from ..utils import act` resolves as in it
        module_name = f"{package}.{module_name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent)
    _use_neighbours_of(folder)
    before = set(sys.modules)
    search = [folder] + ([str(package_root)] if package else [])
    sys.path[:0] = search
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's code failed: summarise it instead of crashing
        sys.modules.pop(module_name, None)
        raise PythonFileError(exception_summary(error, path)) from None
    finally:
        for entry in search:
            if entry in sys.path:
                sys.path.remove(entry)
        _record_neighbours(folder, set(sys.modules) - before - {module_name})
    return module


def _package_of(folder):
    """(dotted name of the package `folder` is, folder holding its top package) when folder has an
    __init__.py (a file of mypkg/kernels/ is in package mypkg.kernels, and mypkg's parent goes on
    sys.path, so that relative and absolute imports of the package work from any current folder);
    ("", None) otherwise."""
    parts = []
    while (folder / "__init__.py").is_file() and folder.name.isidentifier():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts), (folder if parts else None)


def neighbour_modules():
    """Every module a file run by import_file imported from its own folder, including those
    another folder's same-named module has since replaced in sys.modules."""
    return [module for modules in _neighbours.values() for module in modules.values()]


def _use_neighbours_of(folder):
    """sys.modules holds `folder`'s own neighbours, and no other folder's module where `folder` has
    one of the same (top-level) name; other folders' modules stay, shared as Python shares them."""
    here = Path(folder)
    for other, modules in _neighbours.items():
        if other == folder:
            continue
        for name, neighbour in modules.items():
            top = name.partition(".")[0]
            shadowed = (here / f"{top}.py").is_file() or (here / top).is_dir()
            if shadowed and sys.modules.get(name) is neighbour:
                del sys.modules[name]
    sys.modules.update(_neighbours.get(folder, {}))


def _record_neighbours(folder, names):
    inside = Path(folder)
    kept = _neighbours.setdefault(folder, {})
    for name in names:
        neighbour = sys.modules.get(name)
        file = getattr(neighbour, "__file__", None)
        if file is not None and Path(file).resolve().is_relative_to(inside):
            kept[name] = neighbour


def forget_neighbours(names):
    """Stop restoring the modules `names` as neighbours: they are to be imported afresh."""
    for modules in _neighbours.values():
        for name in names:
            modules.pop(name, None)


def exception_summary(error, path):
    """'ValueError at line 12: message', the line being the last frame inside `path` (None: no
    line); a missing module is named with the interpreter that lacks it."""
    if isinstance(error, SyntaxError):
        return f"SyntaxError at line {error.lineno}: {error.msg}"
    line = None
    traceback = error.__traceback__
    while traceback is not None and path is not None:
        if Path(traceback.tb_frame.f_code.co_filename).resolve() == Path(path).resolve():
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    where = f" at line {line}" if line else ""
    if isinstance(error, ModuleNotFoundError) and error.name:
        return f"ModuleNotFoundError{where}: No module named '{error.name}' in {sys.executable}, the Python taot " \
               f"runs (install {error.name.partition('.')[0]} there, or set TAOT_PYTHON to a Python that has it)"
    return f"{type(error).__name__}{where}: {error}"


def module_name_for(prefix, path, digest=""):
    stem = "".join(ch if ch.isalnum() else "_" for ch in Path(path).stem)
    return f"_taot_{prefix}_{stem}_{digest}" if digest else f"_taot_{prefix}_{stem}"
