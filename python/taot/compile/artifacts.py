# One artifact folder, artifacts/<variant>/<target>/: what a compile leaves there, and its record,
# inputs.json, written last: the inputs it was compiled from, the libraries that use it, the size and
# SHA-256 of the cubin and metadata.json, so that a damaged artifact is noticed and rebuilt, and what
# ptxas reported (registers, spills, stack frame).
import hashlib
import json
import re
import shutil
from pathlib import Path

from . import ir_files
from ..fsutil import canonical_json, write_atomically
from ..spec.targets import IMAGE_STAGE

RECORD = "inputs.json"
METADATA = "metadata.json"
RECORD_FORMAT = 3  # of inputs.json; 1 held the inputs alone, 2 no "ptxas" (both read as "not compiled")


# The stages of Triton's compile that are a GPU image, also the image file's suffix: a cubin on NVIDIA,
# an AMDGPU code object (ELF) on AMD. The record's "cubin" entry describes either.
IMAGE_STAGES = tuple(IMAGE_STAGE.values())


def image_stage(asm):
    """The image stage a compile's `asm` (stage -> text or bytes) has."""
    return next(stage for stage in IMAGE_STAGES if stage in asm)


def cubin_name(function, stage="cubin"):
    """The image file of `function`: NAME.cubin, or NAME.hsaco for an AMD code object."""
    return f"{function}.{stage}"


def read_record(folder):
    """The folder's record (a dict), or None when it is absent, damaged or of another format."""
    record, _ = _load_record(folder)
    return record


_RECORD_KEYS = {"inputs": dict, "libraries": list, "cubin": dict, "metadata": dict, "ir": dict, "ptx_target": str}


def _load_record(folder):
    """(record or None, whether a record file is there but damaged)."""
    try:
        text = (Path(folder) / RECORD).read_text()
    except OSError:
        return None, False
    try:
        record = json.loads(text)
    except ValueError:
        return None, True
    if not isinstance(record, dict) or record.get("record_format") != RECORD_FORMAT:
        return None, False  # an older taot's record: compiled again, quietly
    if not all(isinstance(record.get(key), kind) for key, kind in _RECORD_KEYS.items()):
        return None, True
    if not isinstance(record.get("ptxas"), (dict, type(None))):
        return None, True
    return record, False


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def stale_reason(folder, inputs, ir_mode):
    """None when the folder holds what compiling `inputs` gives, intact, with its IR kept as `ir_mode`
    asks or convertible to it; else why not: "" when it simply was not compiled from these inputs
    (never, interrupted, or the inputs changed), or a sentence naming the damaged artifact."""
    folder = Path(folder)
    record, damaged = _load_record(folder)
    if damaged:
        return f"{RECORD} is damaged"
    if record is None or canonical_json(record["inputs"]) != canonical_json(inputs):
        return ""
    try:
        return _first_damage(folder, record, ir_mode)
    except (KeyError, TypeError):
        return f"{RECORD} is damaged"


def _first_damage(folder, record, ir_mode):
    """What is wrong with a folder whose record matches the inputs, or None."""
    try:
        cubin = (folder / record["cubin"]["file"]).read_bytes()
    except OSError:
        return "the cubin is missing"
    if not cubin:
        return "the cubin is empty"
    if len(cubin) != record["cubin"]["size"] or sha256(cubin) != record["cubin"]["sha256"]:
        return "the cubin changed since it was compiled"
    try:
        metadata = (folder / record["metadata"]["file"]).read_bytes()
    except OSError:
        return f"{METADATA} is missing"
    if sha256(metadata) != record["metadata"]["sha256"]:
        return f"{METADATA} changed since it was compiled" if _is_json_object(metadata) else f"{METADATA} is damaged"
    missing = [name for name in record["ir"].values() if not (folder / name).is_file()]
    if missing:
        return f"{missing[0]} is missing"
    if ir_mode != ir_files.NONE and not record["ir"]:
        return "its IR was not kept (built with --ir none)"
    return None


def _is_json_object(data):
    try:
        return isinstance(json.loads(data), dict)
    except ValueError:
        return False


def adopt(folder, function, library, ir_mode):
    """For an up-to-date folder: add `library` to its users and keep its IR as `ir_mode` asks
    (compressing, decompressing or deleting the stage files, no recompile). The record is rewritten
    only when something changed, after the new IR files and before the old ones are removed."""
    folder = Path(folder)
    record = read_record(folder)
    libraries = sorted(set(record["libraries"]) | {library})
    kept = record["ir"]
    wanted = {stage: ir_files.stage_file_name(function, stage, ir_mode) for stage in kept} \
        if ir_mode != ir_files.NONE else {}
    if libraries == record["libraries"] and wanted == kept:
        return
    for stage, name in wanted.items():
        if name != kept[stage]:
            write_atomically(folder / name, ir_files.encode(ir_files.read_stage(folder / kept[stage]), ir_mode))
    _write_record(folder, dict(record, libraries=libraries, ir=wanted))
    for stage, name in kept.items():
        if wanted.get(stage) != name:
            (folder / name).unlink(missing_ok=True)


def clear(folder, inputs):
    """Remove what an earlier compile left in `folder`, the record first, so that an interruption
    leaves no claim. Returns the libraries that used it if it was compiled from these same `inputs`."""
    folder = Path(folder)
    record = read_record(folder)
    same = record is not None and canonical_json(record["inputs"]) == canonical_json(inputs)
    (folder / RECORD).unlink(missing_ok=True)
    for entry in folder.iterdir():
        if entry.is_file() and _is_own_file(entry.name):
            entry.unlink()
    return record["libraries"] if same else []


_OWN_SUFFIXES = tuple(f".{stage}{compression}" for stage in ir_files.IR_STAGES for compression in ("", ".gz", ".xz")) \
    + tuple(f".{stage}" for stage in IMAGE_STAGES) + (".tmp",)


def _is_own_file(name):
    return name == METADATA or name.endswith(_OWN_SUFFIXES)


def write(folder, function, asm, metadata, inputs, libraries, ir_mode, ptxas=None):
    """Write a finished compile: IR stages as `ir_mode` keeps them, the cubin, metadata.json (a
    JSON-safe dict), then the record, with `ptxas` (ptxas_report.parse's dict, or None when ptxas'
    report was not seen)."""
    folder = Path(folder)
    kept = ir_files.write_stages(folder, function, asm, ir_mode)
    stage = image_stage(asm)
    cubin = asm[stage]
    write_atomically(folder / cubin_name(function, stage), cubin)
    metadata_bytes = (json.dumps(metadata, sort_keys=True, separators=(",", ":")) + "\n").encode()
    write_atomically(folder / METADATA, metadata_bytes)
    _write_record(folder, {
        "record_format": RECORD_FORMAT,
        "inputs": inputs,
        "libraries": sorted(libraries),
        "cubin": {"file": cubin_name(function, stage), "size": len(cubin), "sha256": sha256(cubin)},
        "metadata": {"file": METADATA, "sha256": sha256(metadata_bytes)},
        "ir": kept,
        "ptx_target": ptx_target(asm["ptx"]) if "ptx" in asm else "",
        "ptxas": ptxas,
    })


def write_record_with_users(folder, record_bytes, libraries):
    """Writes a record another machine wrote for this folder's files (`record_bytes`, inputs.json as
    it wrote it), its users being `libraries` and the ones it names; written last, as write() does."""
    record = json.loads(record_bytes)
    _write_record(folder, dict(record, libraries=sorted(set(record.get("libraries", [])) | set(libraries))))


def _write_record(folder, record):
    write_atomically(Path(folder) / RECORD, (canonical_json(record) + "\n").encode())


def ptx_target(ptx):
    """The architecture a PTX text was written for, e.g. "sm_90a" ("" when it names none)."""
    match = re.search(r"^\s*\.target\s+(sm_\w+)", ptx, re.MULTILINE)
    return match.group(1) if match else ""


def release(folder, library):
    """`library` no longer uses this folder: forget it in the record, and delete the folder when no
    library uses it now. Folders without a readable record, or used only by other libraries, are left
    alone. True when the folder was deleted."""
    folder = Path(folder)
    record = read_record(folder)
    if record is None or library not in record["libraries"]:
        return False
    others = [name for name in record["libraries"] if name != library]
    if others:
        _write_record(folder, dict(record, libraries=others))
        return False
    for entry in folder.iterdir():  # the record last, so an interrupted removal is finished next time
        if entry.name == RECORD:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    (folder / RECORD).unlink()
    folder.rmdir()
    return True
