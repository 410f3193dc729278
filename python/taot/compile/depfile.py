# What a build read, as a Make-style depfile (`taot build --depfile`), so that a build system
# (taot_add_library, Ninja, Make) runs the build again when the spec, a kernel source or a module
# they import changes.
import os
import sys
import sysconfig
from pathlib import Path

from ..spec import pyfile

# The file a build with --depfile touches on success, in the output folder: the depfile's target.
STAMP_NAME = "taot-build.stamp"


def _installed_roots():
    """Folders whose modules are installed software, not the user's sources: the interpreter's
    library and site-packages, and taot's own package."""
    taot_package = Path(__file__).resolve().parents[1]
    roots = {Path(sys.prefix), Path(sys.base_prefix), taot_package}
    for name in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(name)
        if path:
            roots.add(Path(path))
    return [root.resolve() for root in roots]


def imported_sources(packages=()):
    """The Python files imported so far that are not installed software: the kernel files, the
    spec when it is Python, and the modules of the user's they import; and every imported module
    of the top-level `packages` (those of kernels named by module, though installed)."""
    roots = _installed_roots()
    found = set()
    for module in list(sys.modules.values()) + pyfile.neighbour_modules():
        path = getattr(module, "__file__", None)
        if not path or not path.endswith(".py"):
            continue
        path = Path(path).resolve()
        ours = str(getattr(module, "__name__", "")).partition(".")[0] in packages
        if path.is_file() and (ours or not any(path.is_relative_to(root) for root in roots)):
            found.add(path)
    return found


def _escaped(path):
    """A path as a Make/Ninja depfile spells it: spaces and '#' escaped with '\\', '$' doubled."""
    return str(path).replace("\\", "\\\\").replace(" ", "\\ ").replace("#", "\\#").replace("$", "$$")


def write(depfile, output_folder, inputs):
    """Writes `depfile` naming output_folder/STAMP_NAME as depending on `inputs` (paths), then
    touches the stamp; the stamp is written last, so a failed write leaves the build out of date."""
    depfile = Path(depfile)
    stamp = Path(output_folder).resolve() / STAMP_NAME
    lines = [f"{_escaped(stamp)}:"] + [f" {_escaped(Path(path).resolve())}" for path in sorted(set(inputs))]
    depfile.parent.mkdir(parents=True, exist_ok=True)
    temporary = depfile.with_name(depfile.name + ".tmp")
    temporary.write_text(" \\\n".join(lines) + "\n", encoding="utf-8")
    os.replace(temporary, depfile)
    stamp.touch()
    return stamp
