"""The front end's manifest writer against the list of image facts: runtime/include/taot/image_fields.h
(the list the runtime's tables, the C API, the Python binding, the code generator and taot diff are
made from or checked against) names every key of a manifest image entry, and
python/taot/library/manifest.py writes each of them and no other."""
import json
import re

import pytest

from conftest import REPO

from taot import triton_api
from taot.library import manifest

HEADER = REPO / "runtime" / "include" / "taot" / "image_fields.h"

# X(field, type, "manifest_key", info, python, "compare") and X("manifest_key", "compare")
FIELD_ROW = re.compile(r'^\s*X\((\w+), ([\w:*\[\] ]+), "([\w.]+)", (copy|own|none), (copy|own|none), "(\w*)"\)')
ONLY_ROW = re.compile(r'^\s*X\("([\w.]+)", "(\w*)"\)')


def macro_lines(name):
    lines = HEADER.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"#define {name}(X)")))
    body = []
    for line in lines[start + 1:]:  # each line of the macro but the last ends with a backslash
        body.append(line)
        if not line.rstrip().endswith("\\"):
            break
    return body


def rows(name, pattern):
    body = macro_lines(name)
    matched = [pattern.match(line) for line in body]
    assert all(matched), [line for line, row in zip(body, matched) if not row]
    return [row.groups() for row in matched]


def field_rows():
    return rows("TAOT_IMAGE_FIELDS", FIELD_ROW)


def manifest_keys():
    """Every manifest key the list names, "outer.inner" for nested ones."""
    return {row[2] for row in field_rows()} | {row[0] for row in rows("TAOT_IMAGE_MANIFEST_ONLY_KEYS", ONLY_ROW)}


def test_header_rows_are_well_formed():
    fields = field_rows()
    names = [row[0] for row in fields]
    assert len(names) == len(set(names)) and "target" == names[0], names
    # Python shows a copied member under its manifest key, which must then be a top-level one.
    assert all("." not in key for _, _, key, _, python, _ in fields if python == "copy")
    assert len(manifest_keys()) > 20


@pytest.fixture
def image_folder(tmp_path, monkeypatch):
    """An artifact folder as a compile leaves it, and an override as taot from-ir leaves one, so that
    the writer writes every key it can (its "ptxas" and "override" only where they exist)."""
    outdir = tmp_path / "out"
    folder = manifest.artifact_dir(outdir, "k_v0", "sm_90")
    folder.mkdir(parents=True)
    (folder / "k.cubin").write_bytes(b"\x7fELF")
    (folder / "k.json").write_text(json.dumps({
        "name": "k", "num_warps": 4, "num_ctas": 1, "num_stages": 3, "shared": 0, "global_scratch_size": 0,
        "global_scratch_align": 1, "launch_cooperative_grid": False, "launch_pdl": False}))
    record = {"inputs": {"triton_version": triton_api.VERSION, "ptxas": "Cuda compilation tools, release 12.8, V12.8.93"},
              "cubin": {"file": "k.cubin"}, "metadata": {"file": "k.json"}, "ir": {"ttgir": "k.ttgir"},
              "ptx_target": "sm_90", "ptxas": {"registers": 32, "spill_stores": 0, "spill_loads": 0, "stack": 0}}

    class Override:
        def __init__(self):
            self.folder = folder

        def image_record(self, compiled_folder, compiled_record):
            return compiled_record

        def manifest_entry(self, outdir):
            return {"stage": "ttgir", "sha256": "a" * 64, "file": "overrides/k_v0/sm_90/k.ttgir"}

    monkeypatch.setattr(manifest.artifacts, "read_record", lambda where: record)
    monkeypatch.setattr(manifest.overrides, "read", lambda *where: Override())
    return outdir


def test_the_writer_writes_every_key_of_the_list_and_no_other(image_folder):
    entry = manifest.image_entry(image_folder, "k_v0", "k", "sm_90")
    keys = manifest_keys()
    listed = {key.split(".")[0] for key in keys}
    assert not set(entry) - listed, f"written but not in image_fields.h: {sorted(set(entry) - listed)}"
    assert not listed - set(entry), f"in image_fields.h but not written: {sorted(listed - set(entry))}"
    for outer in {key.split(".")[0] for key in keys if "." in key}:
        assert set(entry[outer]) == {key.split(".")[1] for key in keys if key.startswith(outer + ".")}, outer
