"""import-cache of a cache written the way Triton's JIT writes it (jit_cache_writer.py runs the kernels'
own warmup, so the installed Triton's binder and _pack_args specialize each call): every entry's
signature, constexprs and attrs are recovered exactly as the JIT made them, whatever the release
(3.7+ gives constexprs an empty attrs entry; ints not a multiple of 16 get an empty one; n == 1 is a
constexpr), and every entry is imported exactly. Needs Triton, no GPU."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from jit_cache_writer import write_cache
from taot.spec import source as kernel_source
from taot.triton_api import RELEASE
from taot.workbench import cache_recovery
from taot.workbench.cache_import import import_cache
from taot.workbench.triton_cache import read_cache


KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=8)],
                 key=["n"])
@triton.jit
def tuned_copy(src, dst, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(dst + offsets, tl.load(src + offsets, mask=mask), mask=mask)
'''

ALIGNED_F32 = {"pointer": "fp32", "aligned": True}
CALLS = [
    *({"kernel": "scale", "args": [ALIGNED_F32, ALIGNED_F32, n, 2.0], "kwargs": {"BLOCK": 256}}
      for n in (1000, 1024, 100003, 1)),
    {"kernel": "scale", "args": [ALIGNED_F32, {"pointer": "fp32", "aligned": False}, 4096, 0.5],
     "kwargs": {"BLOCK": 1024}},
    {"kernel": "tuned_copy", "args": [{"pointer": "fp16", "aligned": True}, {"pointer": "fp16", "aligned": True}, 777]},
]
GRIDS = {"scale": ["cdiv(n, BLOCK)"], "tuned_copy": ["cdiv(n, BLOCK)"]}


def write_jit_cache(folder, calls=CALLS, kernels=KERNELS):
    """folder/kernels.py, folder/cache written by the JIT's own calls, and what the JIT compiled."""
    return write_cache(folder, calls, kernels)


@pytest.fixture(scope="module")
def jit_cache(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jit")
    cache, compiled = write_jit_cache(folder)
    return folder, cache, compiled


def _function(folder, name):
    return kernel_source.find_kernel(kernel_source.import_source(folder / "kernels.py"), name, "kernels.py").jit


def test_every_entry_is_recovered_as_the_jit_made_it(jit_cache):
    folder, cache, compiled = jit_cache
    entries = read_cache(cache).entries
    # n = 1000 and n = 100003 specialize alike; the autotuned kernel has one entry per config.
    assert len(entries) == len(compiled) == 6
    by_hash = {record["hash"]: record for record in compiled}
    for name in ("scale", "tuned_copy"):
        function = _function(folder, name)
        named = [entry for entry in entries if entry.name == name]
        results = cache_recovery.recover_all(named, function)
        for entry in named:
            recovered = results[entry.key]
            assert not isinstance(recovered, cache_recovery.NotRecovered), f"{entry.label}: {recovered}"
            made = by_hash[entry.triton_hash]
            names = list(made["signature"])
            assert recovered.by_jit
            assert recovered.signature == made["signature"]
            assert {name: [type(value).__name__, str(value)] for name, value in recovered.constexprs.items()} == \
                {names[path[0]]: value for path, value in made["constexprs"]}
            assert [[list(path), value] for path, value in recovered.attrs.items()] == made["attrs"]


def test_the_jits_specializations_are_the_ones_this_release_makes(jit_cache):
    """What the test above recovers differs between releases: this says how, so a release that
    specializes otherwise is noticed here."""
    _, _, compiled = jit_cache
    scale = {record["constexprs"][-1][1][1] + ("/n=1" if record["signature"]["n"] == "constexpr" else
                                               "/div" if [[2], [["tt.divisibility", 16]]] in record["attrs"] else
                                               "/any"): record for record in compiled if record["name"] == "scale"}
    assert sorted(scale) == ["1024/div", "256/any", "256/div", "256/n=1"]
    plain = dict((path[0], value) for path, value in scale["256/any"]["attrs"])
    assert plain[2] == []                       # an int not a multiple of 16 has an entry, empty
    assert (4 in plain) == RELEASE.constexpr_attrs_entries   # BLOCK
    assert 3 not in plain                       # a float is never specialized
    ones = dict((path[0], value) for path, value in scale["256/n=1"]["attrs"])
    assert (2 in ones) == RELEASE.constexpr_attrs_entries    # n == 1 is a constexpr


def test_every_entry_is_imported_exactly(jit_cache, tmp_path):
    folder, cache, compiled = jit_cache
    entries = read_cache(cache).entries
    result = import_cache(entries, tmp_path / "lib", "lib", GRIDS)
    assert [(kernel.name, kernel.exact, kernel.reason) for kernel in result.kernels] == \
        [("scale", True, None), ("tuned_copy", True, None)]
    assert sorted(placement.entry.key for kernel in result.kernels for placement in kernel.placements) == \
        sorted(entry.key for entry in entries)
    assert not [note for note in result.notes if "left out" in note]
    tuned = next(kernel for kernel in result.kernels if kernel.name == "tuned_copy")
    assert sorted((variant.config["BLOCK"], variant.config["num_warps"]) for variant in tuned.variants) == \
        [(128, 4), (512, 8)]
    scale = next(kernel for kernel in result.kernels if kernel.name == "scale")
    hints = sorted({binding.hint for variant in scale.variants for binding in variant.bindings if binding.name == "n"})
    assert hints == [0, 1, 16]


OTHER_SUPPORTED = "3.9.0" if RELEASE.minor != (3, 9) else "3.5.1"


@pytest.mark.parametrize("version, says", [
    ("3.4.0", "a release taot does not support (it supports Triton 3.5 to 3.9): they cannot be imported"),
    ("2.9.0", "a release taot does not support (it supports Triton 3.5 to 3.9): they cannot be imported"),
    (OTHER_SUPPORTED, f"to import them, run taot with TAOT_PYTHON naming a Python with Triton {OTHER_SUPPORTED}"),
])
def test_entries_of_another_release_are_left_out_saying_which_taot_imports(jit_cache, tmp_path, version, says):
    folder, cache, _ = jit_cache
    copied = tmp_path / "cache"
    shutil.copytree(cache, copied)
    metadata_file = sorted(copied.glob("*/tuned_copy.json"))[0]
    metadata = json.loads(metadata_file.read_text())
    metadata["triton_version"] = version
    metadata_file.write_text(json.dumps(metadata))
    result = import_cache(read_cache(copied).entries, tmp_path / "lib", "lib", GRIDS)
    (note,) = [note for note in result.notes if "left out" in note]
    assert note.startswith(f"left out 1 entry ({metadata_file.parent.name}/tuned_copy): compiled by Triton {version}; "
                           f"taot runs Triton "), note
    minor = ".".join(map(str, RELEASE.minor))
    assert f"imports the entries of Triton {minor}.x only" in note
    assert note.endswith(says), note
    assert [(kernel.name, kernel.exact, len(kernel.placements)) for kernel in result.kernels] == \
        [("scale", True, 4), ("tuned_copy", True, 1)]
