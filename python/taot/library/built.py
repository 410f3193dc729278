# A built taot library as the measuring commands (bench, tune, profile) use it: its manifest (the
# kernels' arguments, config fields and tuning keys) and its generated Python module.
import dataclasses
import importlib
import importlib.machinery
import importlib.util
import json
import sys
from pathlib import Path

from ..errors import TaotError
from ..spec.arg_kinds import MANIFEST_KINDS, manifest_kind

MANIFEST = "manifest.json"
SCHEMA = "taot.manifest"  # the manifest's "schema", and its "schema_version" (docs/manifest.md)
SCHEMA_VERSION = 2


@dataclasses.dataclass(frozen=True)
class KernelInfo:
    """One kernel of the manifest: its call arguments (runtime arguments, launch-only ones included,
    in call order), output arguments, config fields (name -> values compiled) and tuning key."""
    name: str
    parameters: tuple
    outputs: tuple
    config_fields: dict
    tuning_key: tuple


@dataclasses.dataclass(frozen=True)
class Library:
    """A library folder (`taot build --python --build-library` output) or an importable module."""
    name: str
    folder: Path  # None for a module found on sys.path without a manifest beside it
    kernels: dict  # name -> KernelInfo (empty without a manifest)
    module: object

    def kernel(self, name):
        """The module's kernel object `name`; TaotError naming the kernels there are."""
        found = getattr(self.module, name, None)
        if found is None or not callable(getattr(found, "variants", None)):
            names = ", ".join(self.kernel_names()) or "none"
            raise TaotError(f"library {self.name} has no kernel '{name}'; its kernels: {names}")
        return found

    def kernel_names(self):
        if self.kernels:
            return list(self.kernels)
        return sorted(name for name in dir(self.module)
                      if callable(getattr(getattr(self.module, name), "variants", None)))

    def info(self, name):
        """The manifest's KernelInfo for `name`, or None without a manifest."""
        return self.kernels.get(name)


def kernel_infos(manifest):
    infos = {}
    for kernel in manifest.get("kernels", []):
        runtime_args = [arg for arg in kernel["args"] if manifest_kind(arg["kind"]).runtime]
        infos[kernel["name"]] = KernelInfo(
            name=kernel["name"],
            parameters=tuple(arg["name"] for arg in runtime_args),
            outputs=tuple(arg["name"] for arg in runtime_args if arg.get("output")),
            config_fields={field["name"]: tuple(field["values"]) for field in kernel.get("config", [])},
            tuning_key=tuple(kernel.get("tuning_key", ())),
        )
    return infos


def read_manifest(folder, advice="give the output folder of `taot build SPEC --python --build-library`"):
    """FOLDER/manifest.json as a build wrote it (docs/manifest.md), its schema checked: schema
    taot.manifest of SCHEMA_VERSION, a library name, kernels each with a name, args of known kinds
    and variants. TaotError naming the file otherwise (`advice` says what to give when
    there is no file)."""
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise TaotError(f"{folder}: no {MANIFEST} here; {advice}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise TaotError(f"{path}: cannot be read ({error})") from None
    except json.JSONDecodeError as error:
        raise TaotError(f"{path}: not valid JSON: {error}") from None

    def expect(ok, expected, got):
        if not ok:
            raise TaotError(f"{path}: expected {expected}, got {got}")

    expect(isinstance(manifest, dict), f"a taot manifest (schema {SCHEMA})", type(manifest).__name__)
    expect(manifest.get("schema") == SCHEMA, f"a taot manifest (schema {SCHEMA})", manifest.get("schema"))
    expect(manifest.get("schema_version") == SCHEMA_VERSION,
           f"schema_version {SCHEMA_VERSION} (the version this taot reads)", manifest.get("schema_version"))
    name = manifest.get("library")
    expect(isinstance(name, str) and name.isidentifier(), "a library name", repr(name))
    kernels = manifest.get("kernels")
    expect(isinstance(kernels, list), "a list of kernels", type(kernels).__name__)
    for index, kernel in enumerate(kernels):
        where = f"kernels[{index}]"
        expect(isinstance(kernel, dict) and isinstance(kernel.get("name"), str), f"{where} with a name",
               repr(kernel)[:80])
        expect(isinstance(kernel.get("args"), list) and isinstance(kernel.get("variants"), list),
               f"{where} ({kernel['name']}) with lists of args and variants", sorted(kernel))
        for arg in kernel["args"]:
            expect(isinstance(arg, dict) and isinstance(arg.get("name"), str) and arg.get("kind") in MANIFEST_KINDS,
                   f"args of {kernel['name']} each with a name and a kind ({', '.join(MANIFEST_KINDS)})", repr(arg)[:80])
    return manifest


def manifest_kernels(folder):
    """(library name, {kernel: KernelInfo}) from FOLDER/manifest.json, without loading the module."""
    manifest = read_manifest(folder)
    return manifest["library"], kernel_infos(manifest)


def load_library(where, module_dir=None):
    """The library at `where`: a folder holding manifest.json whose module was built into
    `module_dir`, else folder/build, else the folder itself; or the name of an importable generated
    module. TaotError says what is missing and how to build it."""
    path = Path(where)
    if not path.exists():
        if str(where).isidentifier() and module_dir is None:
            return _importable(str(where))
        raise TaotError(f"{where}: no such library folder (give the output folder of "
                        f"`taot build SPEC --python --build-library`, or an importable module's name)")
    folder = path if path.is_dir() else path.parent
    name, infos = manifest_kernels(folder)
    searched = [Path(module_dir)] if module_dir is not None else [folder / "build", folder]
    for directory in searched:
        module_file = _module_file(directory, name)
        if module_file is not None:
            return Library(name, folder, infos, _import_file(name, module_file))
    raise TaotError(f"{folder}: the Python module {name} is not built (looked in "
                    f"{', '.join(str(d) for d in searched)}); build it with `taot build SPEC -o {folder} --python "
                    f"--build-library`, or give --module-dir")


def _module_file(directory, name):
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = directory / f"{name}{suffix}"
        if candidate.is_file():
            return candidate
    return None


def _import_file(name, module_file):
    if name in sys.modules:
        loaded = sys.modules[name]
        if Path(getattr(loaded, "__file__", "")).resolve() == module_file.resolve():
            return loaded
        raise TaotError(f"{module_file}: another module named {name} is already loaded, from "
                        f"{getattr(loaded, '__file__', '?')}")
    spec = importlib.util.spec_from_file_location(name, module_file)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as error:
        raise TaotError(f"{module_file}: cannot load the module: {error}") from None
    sys.modules[name] = module
    return module


def _importable(name):
    try:
        module = importlib.import_module(name)
    except ImportError as error:
        raise TaotError(f"{name}: not a library folder, and no module of that name can be imported ({error})") from None
    folder = None
    infos = {}
    module_path = Path(getattr(module, "__file__", "") or ".")
    for candidate in (module_path.parent, module_path.parent.parent):
        if (candidate / MANIFEST).is_file():
            manifest = read_manifest(candidate)
            if manifest.get("library") == name:
                folder, infos = candidate, kernel_infos(manifest)
                break
    return Library(name, folder, infos, module)
