# Read a Triton cache folder (TRITON_CACHE_DIR, ~/.triton/cache): its compiled-kernel entries, each
# one `<key>/` folder holding `__grp__<name>.json`, the metadata `<name>.json`, the cubin and the IR
# stages, and the kernel's parameters as the `tt.func` in `<name>.source` (or `.ttir`) declares them.
# Reading only; nothing here imports Triton.
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Problem
from ..spec import arg_kinds
from ..spec.arg_kinds import IR_SCALAR_TYPES
from ..spec.targets import IMAGE_STAGE

# Triton names a cache entry's folder by the base32 of a SHA-256 (52 characters, no padding).
ENTRY_FOLDER = re.compile(r"[A-Z2-7]{52}")
GROUP_PREFIX = "__grp__"
# The files a kernel's entry holds besides the metadata: "source" (the front end's TTIR, always
# written), the stages and the image; per backend (CUDA: PTX and a cubin; HIP: AMDGCN and a code object).
IR_STAGES = {"cuda": ("ttir", "ttgir", "llir", "ptx"), "hip": ("ttir", "ttgir", "llir", "amdgcn")}
IMAGE = {"cuda": IMAGE_STAGE["nvidia"], "hip": IMAGE_STAGE["amd"]}
REQUIRED = {backend: ("source", *stages, IMAGE[backend]) for backend, stages in IR_STAGES.items()}

# Element types of `!tt.ptr<...>` and scalar types of the tt.func, as a spec names them. TTIR has no
# unsigned types: an `i8` may have been `u8` in the Python signature.
MLIR_DTYPES = {"f32": "fp32", "f16": "fp16", "bf16": "bf16", "f64": "fp64", "f8E4M3FN": "fp8e4nv",
               "f8E5M2": "fp8e5", "i1": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64"}
SCALAR_TYPES = {ir_type: (kind.name, type_name) for ir_type, (kind, type_name) in IR_SCALAR_TYPES.items()}


class CacheProblem(Problem):
    """A cache entry that cannot be read as a compiled kernel; the message says what is wrong."""


@dataclass(frozen=True)
class Parameter:
    """One parameter of a compiled kernel, as its tt.func declares it. kind: "pointer", "int",
    "float" or "bool"; type: the element dtype (pointers) or the scalar type, in spec names;
    divisibility: Triton's tt.divisibility (16, or 0 when absent)."""
    name: str
    kind: str
    type: str
    divisibility: int = 0


@dataclass(frozen=True)
class Entry:
    """One compiled kernel in the cache. `files` maps a file kind ("json", "cubin", "source", "ttir",
    ...) to its path inside `folder` (the group file's paths may point where the cache was written,
    so files are found by name beside it)."""
    folder: Path
    name: str
    metadata: dict
    files: dict
    parameters: tuple = ()        # Parameter, in order: the kernel's runtime parameters
    source_file: str = None       # the Python file the function came from, as the IR locates it
    source_line: int = None
    problem: str = None           # why the entry cannot be imported (then `parameters` may be empty)
    damaged: bool = False         # the problem is a missing or unreadable file, not something taot lacks

    @property
    def key(self):
        return self.folder.name

    @property
    def label(self):
        """How messages name the entry: `<cache key>/<function>`."""
        return f"{self.folder.name}/{self.name}"

    @property
    def triton_hash(self):
        return self.metadata.get("hash", "")

    @property
    def arch(self):
        """What it was compiled for: the compute capability (90) or the gfx name ("gfx942")."""
        return self.metadata["target"]["arch"]

    @property
    def backend(self):
        return self.metadata["target"].get("backend", "cuda")

    @property
    def image(self):
        """The file kind of its image: "cubin" or "hsaco"."""
        return IMAGE.get(self.backend, "cubin")

    @property
    def ir_stages(self):
        return IR_STAGES.get(self.backend, IR_STAGES["cuda"])

    def text(self, kind):
        return self.files[kind].read_text()


@dataclass
class Contents:
    """What a cache folder holds: its kernel entries (sorted by function name, then key) and the
    folders that look like unfinished compiles (key, reason)."""
    entries: list
    skipped: list = field(default_factory=list)


def read_cache(folder):
    """The kernel entries of the Triton cache at `folder`. CacheProblem when the folder is missing,
    is not a Triton cache, or holds no compiled kernel. Entries that cannot be used carry their
    `problem`; folders of compiles that never finished (no group file) are listed as skipped."""
    folder = Path(folder)
    if not folder.exists():
        raise CacheProblem(f"{folder}: no such folder")
    if not folder.is_dir():
        raise CacheProblem(f"{folder}: not a folder (expected a Triton cache folder such as ~/.triton/cache)")
    children = sorted(path for path in folder.iterdir() if path.is_dir())
    keyed = [path for path in children if ENTRY_FOLDER.fullmatch(path.name)]
    if not keyed:
        if not any(folder.iterdir()):
            raise CacheProblem(f"{folder}: the folder is empty (no compiled kernels)")
        hint = f"; did you mean {folder / 'cache'}?" if (folder / "cache").is_dir() else ""
        raise CacheProblem(f"{folder}: not a Triton cache (expected folders named by a 52-character cache key, "
                           f"each with __grp__<kernel>.json){hint}")
    contents = Contents(entries=[])
    for path in keyed:
        groups = sorted(path.glob(GROUP_PREFIX + "*.json"))
        if not groups:
            if any(path.glob("*.source")) or any(path.glob("*.ttir")):
                contents.skipped.append((path.name, "a compile that did not finish (no __grp__ file; Triton "
                                                    "ignores it too)"))
            continue  # launcher modules, autotuning results: not kernels
        for group in groups:
            entry = _read_entry(path, group)
            if entry is not None:
                contents.entries.append(entry)
    if not contents.entries:
        unfinished = f" ({len(contents.skipped)} unfinished compiles)" if contents.skipped else ""
        raise CacheProblem(f"{folder}: the Triton cache holds no compiled kernels{unfinished}")
    contents.entries.sort(key=lambda entry: (entry.name, entry.key))
    return contents


def _read_entry(folder, group):
    """The entry a group file describes; None for groups that are not a kernel's (no metadata)."""
    name = group.name[len(GROUP_PREFIX):-len(".json")]
    try:
        children = json.loads(group.read_text()).get("child_paths")
    except (ValueError, AttributeError, OSError):
        return Entry(folder, name, {}, {}, problem=f"{group.name} is damaged (not Triton's group JSON)", damaged=True)
    if not isinstance(children, dict) or f"{name}.json" not in children:
        return None
    files = {}
    for child in children:
        stem, dot, kind = child.rpartition(".")
        if dot and stem == name:
            files[kind] = folder / child
    try:
        metadata = json.loads(files["json"].read_text())
    except OSError:
        return Entry(folder, name, {}, files, problem=f"{name}.json is missing (the group file names it)",
                     damaged=True)
    except ValueError:
        return Entry(folder, name, {}, files, problem=f"{name}.json is damaged (not JSON)", damaged=True)
    if not isinstance(metadata, dict) or not isinstance(metadata.get("target"), dict):
        return Entry(folder, name, {}, files, problem=f"{name}.json is not Triton's kernel metadata", damaged=True)
    entry = Entry(folder, name, metadata, files)
    backend = metadata["target"].get("backend")
    if backend not in REQUIRED:
        return _with_problem(entry, f"compiled for the {backend} backend; taot builds libraries for cuda and hip")
    for kind in REQUIRED[backend]:
        if kind not in files:
            why = " (a cache written with TRITON_STORE_BINARY_ONLY=1 keeps no IR)" if kind in IR_STAGES[backend] else ""
            return _with_problem(entry, f"the entry has no {name}.{kind}{why}")
        if not files[kind].is_file():
            return _with_problem(entry, f"{name}.{kind} is missing (the group file names it)", damaged=True)
    problem = _cubin_problem(files[IMAGE[backend]], metadata.get("name", name))
    if problem:
        return _with_problem(entry, f"{name}.{IMAGE[backend]} {problem}", damaged=True)
    try:
        source = files["source"].read_text()
        parameters = parse_parameters(source, metadata.get("name", name))
        file_name, line = function_location(source, metadata.get("name", name))
    except CacheProblem as problem:
        return _with_problem(entry, f"{name}.source: {problem}")
    except (OSError, UnicodeDecodeError) as error:
        return _with_problem(entry, f"{name}.source cannot be read ({error})", damaged=True)
    return Entry(folder, name, metadata, files, parameters, file_name, line)


def _cubin_problem(path, kernel_name):
    """Why the image (cubin or AMD code object) at `path` is not the compiled kernel `kernel_name`
    (truncated, not a CUDA or AMDGPU ELF, or without that kernel), or None."""
    from .cubin import CubinError, read
    try:
        kernels = read(path.read_bytes()).kernels
    except CubinError as error:
        return f"is not a valid {'code object' if path.suffix == '.hsaco' else 'cubin'}: {error}"
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if kernel_name not in kernels:
        return f"has no kernel {kernel_name} (it has {', '.join(sorted(kernels)) or 'none'})"
    return None


def _with_problem(entry, problem, damaged=False):
    return Entry(entry.folder, entry.name, entry.metadata, entry.files, problem=problem, damaged=damaged)


# ---- the tt.func signature ----

def _function_header(text, name):
    """(start of the argument list, end) of `tt.func public @name(...)` in MLIR text."""
    match = re.search(r"tt\.func\s+(?:public\s+)?@" + re.escape(name) + r"\s*\(", text)
    if match is None:
        raise CacheProblem(f"no tt.func @{name} in it")
    end = _closing(text, match.end() - 1)
    return match.end(), end


_OPENERS = {"(": ")", "<": ">", "{": "}", "[": "]"}


def _closing(text, start):
    """Index of the bracket closing the one at `start`, skipping quoted strings and nested brackets."""
    stack = []
    index = start
    while index < len(text):
        character = text[index]
        if character == '"':
            index = _string_end(text, index)
        elif character in _OPENERS:
            stack.append(_OPENERS[character])
        elif character in ")>}]" and stack:
            if character == stack[-1]:
                stack.pop()
            elif character != ">":  # a '>' of "->" inside a type is no bracket
                raise CacheProblem(f"unbalanced {character!r} at offset {index}")
            if not stack:
                return index
        index += 1
    raise CacheProblem("the tt.func argument list does not end")


def _string_end(text, start):
    index = start + 1
    while index < len(text) and text[index] != '"':
        index += 2 if text[index] == "\\" else 1
    return index


def _split_top(text, separator):
    """`text` split at `separator` characters outside brackets and strings."""
    parts, depth, start, index = [], 0, 0, 0
    while index < len(text):
        character = text[index]
        if character == '"':
            index = _string_end(text, index)
        elif character in "(<{[":
            depth += 1
        elif character in ")>}]":
            depth -= 1
        elif character == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
        index += 1
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


def parse_parameters(text, name):
    """The parameters of kernel `name` in MLIR text (`.source` or `.ttir`), named as the Python
    function names them (the location `loc("x_ptr"(...))`, else the SSA name)."""
    start, end = _function_header(text, name)
    parameters = []
    for index, argument in enumerate(_split_top(text[start:end], ",")):
        match = re.match(r"%([\w$.-]+)\s*:\s*(.*)$", argument, re.DOTALL)
        if match is None:
            raise CacheProblem(f"argument {index} of @{name} is not `%name: type`: {argument[:80]}")
        ssa_name, rest = match.groups()
        pieces = _split_top(rest, " ")
        mlir_type = pieces[0]
        attributes = next((piece for piece in pieces[1:] if piece.startswith("{")), "")
        location = next((piece for piece in pieces[1:] if piece.startswith("loc(")), "")
        located = re.match(r'loc\("((?:[^"\\]|\\.)*)"\(', location)
        arg_name = _unescape(located.group(1)) if located else ssa_name
        parameters.append(_parameter(arg_name, mlir_type, attributes, name))
    return tuple(parameters)


def _parameter(arg_name, mlir_type, attributes, function):
    divisibility = re.search(r"tt\.divisibility\s*=\s*(\d+)", attributes)
    divisibility = int(divisibility.group(1)) if divisibility else 0
    if "tt.nv_tma_desc" in attributes or mlir_type.startswith("!tt.tensordesc"):
        raise CacheProblem(f"argument {arg_name} of @{function} is a tensor descriptor ({mlir_type}); "
                           "import-cache takes pointers and scalars only")
    pointer = re.fullmatch(r"!tt\.ptr<([\w]+)(?:,\s*\d+)?>", mlir_type)
    if pointer:
        dtype = MLIR_DTYPES.get(pointer.group(1))
        if dtype is None:
            raise CacheProblem(f"argument {arg_name} of @{function} points to {pointer.group(1)}, which a taot "
                               f"spec cannot name (dtypes: {', '.join(sorted(set(MLIR_DTYPES.values())))})")
        return Parameter(arg_name, arg_kinds.POINTER.name, dtype, divisibility)
    if mlir_type in SCALAR_TYPES:
        kind, type_name = SCALAR_TYPES[mlir_type]
        return Parameter(arg_name, kind, type_name, divisibility)
    raise CacheProblem(f"argument {arg_name} of @{function} has type {mlir_type}, which taot cannot pass "
                       "(pointers, i32, i64, f32, f64 and i1 only)")


def function_location(text, name):
    """(Python file, line) of the kernel's definition as the IR's locations give it, or (None, None)."""
    definitions = {}
    for match in re.finditer(r'^(#loc\d*) = loc\("((?:[^"\\]|\\.)*)":(\d+):\d+\)', text, re.MULTILINE):
        definitions[match.group(1)] = (_unescape(match.group(2)), int(match.group(3)))
    start, end = _function_header(text, name)
    referenced = re.search(r'loc\("(?:[^"\\]|\\.)*"\((#loc\d*)\)\)', text[start:end])
    if referenced is None:  # no arguments: the function's own location follows its body
        referenced = re.search(r"\}\s*loc\((#loc\d*)\)", text[end:])
    if referenced is not None and referenced.group(1) in definitions:
        return definitions[referenced.group(1)]
    return next(iter(definitions.values()), (None, None))


def _unescape(text):
    """MLIR string escapes (\\XX hex bytes, \\\\, \\") back to text."""
    data = bytearray()
    index = 0
    raw = text.encode()
    while index < len(raw):
        if raw[index:index + 1] == b"\\" and index + 1 < len(raw):
            pair = raw[index + 1:index + 3]
            if re.fullmatch(rb"[0-9A-Fa-f]{2}", pair):
                data.append(int(pair, 16))
                index += 3
                continue
            data.append(raw[index + 1])
            index += 2
            continue
        data.append(raw[index])
        index += 1
    return data.decode(errors="replace")


def integer_constants(text):
    """Integers in MLIR text that a constexpr may have produced (constants, tensor dimensions,
    ranges), most frequent first."""
    counts = {}
    patterns = (r"arith\.constant\s+(-?\d+)\s*:", r"dense<(-?\d+)>", r"(?:end|start)\s*=\s*(-?\d+)\s*:",
                r"tensor<((?:\d+x)+)")
    for pattern in patterns:
        for match in re.finditer(pattern, text):
            values = match.group(1).rstrip("x").split("x") if pattern.startswith("tensor") else [match.group(1)]
            for value in values:
                number = int(value)
                counts[number] = counts.get(number, 0) + 1
    return sorted(counts, key=lambda number: (-counts[number], abs(number), number))


def element_types(text):
    """Spec dtype names of the element types the MLIR text uses (candidates for dtype constexprs)."""
    found = []
    for mlir, spec in MLIR_DTYPES.items():
        if re.search(r"(?<![\w])" + re.escape(mlir) + r"(?![\w])", text) and spec not in found:
            found.append(spec)
    return found
