# Read a spec file (TOML, or Python defining taot_spec()) into the plain dict that spec.py validates.
import re
import tomllib
from pathlib import Path

from .keypath import describe
from ..errors import SpecError
from .pyfile import PythonFileError, exception_summary, import_file, module_name_for


def read_spec_file(path, label):
    """The raw spec dict of the file at `path`; `label` names the file in messages."""
    path = Path(path)
    if not path.is_file():
        raise SpecError(label, "", "an existing spec file (.toml or .py)",
                        "a folder" if path.is_dir() else "no such file")
    if path.suffix == ".toml":
        return _read_toml(path, label)
    if path.suffix == ".py":
        return _read_python(path, label)
    raise SpecError(label, "", "a spec file ending in .toml or .py", f'a file ending in "{path.suffix}"')


def _read_toml(path, label):
    try:
        with open(path, "rb") as stream:
            return tomllib.load(stream)
    except tomllib.TOMLDecodeError as error:
        text = str(error)
        match = re.search(r"\(at line (\d+), column (\d+)\)", text)
        where = f"line {match.group(1)}, column {match.group(2)}" if match else ""
        reason = text[:match.start()].strip() if match else text
        raise SpecError(label, where, "valid TOML", f"a syntax error: {reason}") from None
    except UnicodeDecodeError:
        raise SpecError(label, "", "a UTF-8 text file", "bytes that are not UTF-8") from None


def _read_python(path, label):
    module = _import_spec_module(path, label)
    make_spec = getattr(module, "taot_spec", None)
    if not callable(make_spec):
        raise SpecError(label, "taot_spec", "a function taot_spec() that returns the spec as a dict",
                        "nothing (the file defines no taot_spec)" if make_spec is None else describe(make_spec))
    try:
        spec = make_spec()
    except Exception as error:  # the user's code failed: report it as a spec problem
        raise SpecError(label, "taot_spec()", "a call that returns the spec", exception_summary(error, path)) from None
    if not isinstance(spec, dict):
        raise SpecError(label, "taot_spec()", "a dict with [library] and [[kernel]] entries", describe(spec))
    return spec


def _import_spec_module(path, label):
    try:
        return import_file(path, module_name_for("spec", path))
    except PythonFileError as error:
        raise SpecError(label, "", "a Python spec file that imports cleanly", str(error)) from None
