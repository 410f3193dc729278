"""The launch ABI is checked, never assumed: `taot gen` through the real binary on manifests whose
images are real cubins of Triton 3.6 and 3.7 (tests/unit/codegen/data, made by
make_descriptor_cubins.py there): each is accepted in its own Triton's launch ABI, refused in the
other's naming the kernel, variant, target and both parameter lists; one library may hold images of
both; `taot inspect` shows each image's Triton, ptxas and the driver it needs. No GPU, no Triton."""
import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "unit" / "codegen" / "data"
PTXAS = {"3.6.0": "12.8.93", "3.7.1": "12.8.93"}  # the ptxas each Triton bundles (sm_80 images)
LAYOUT = {"3.6.0": "3.5", "3.7.1": "3.7"}
DESCRIPTOR = {"kind": "tensordesc", "dtypes": ["fp16"], "output": False, "rank": 2, "blocks": [[16, 16]]}


def _kernel(root, name, triton, layout):
    """Kernel `name` (desc_copy of make_descriptor_cubins.py) with one sm_80 image: the cubin Triton
    `triton` made, in launch ABI `layout` (None: the manifest does not say)."""
    variant = f"{name}_fp16_BM16"
    folder = root / "artifacts" / variant / "sm_80"
    folder.mkdir(parents=True)
    cubin = folder / "desc_copy.cubin"
    shutil.copyfile(DATA / f"desc_copy_{triton}_sm80.cubin", cubin)
    image = {"target": "sm_80", "arch": 80, "arch_specific": False, "dir": folder.relative_to(root).as_posix(),
             "cubin": cubin.relative_to(root).as_posix(), "cubin_sha256": hashlib.sha256(cubin.read_bytes()).hexdigest(),
             "function_name": "desc_copy", "num_warps": 4, "num_ctas": 1, "num_stages": 3, "shared": 0,
             "global_scratch_size": 0, "global_scratch_align": 1, "profile_scratch_size": 0,
             "profile_scratch_align": 1, "launch_cooperative_grid": False, "launch_pdl": False,
             "cluster_dims": [1, 1, 1], "tmem_size": 0, "maxnreg": None, "tensordesc_meta": [], "artifacts": {},
             "triton_version": triton, "ptxas_version": PTXAS[triton]}
    if layout is not None:
        image["launch_abi"] = {"tensordesc_layout": layout, "scratch_pointers": 2}
    return {"name": name, "function": "desc_copy", "source": "desc_copy.py", "source_hash": "0", "targets": ["sm_80"],
            "grid": ["cdiv(M, BM)", "1", "1"],
            "args": [dict(DESCRIPTOR, name="in_desc"), dict(DESCRIPTOR, name="out_desc"),
                     {"name": "M", "kind": "int", "types": ["i32"]}, {"name": "scale", "kind": "float", "types": ["fp32"]},
                     {"name": "flag", "kind": "bool"}, {"name": "BM", "kind": "constexpr"}],
            "config": [{"name": "BM", "kind": "int", "values": [16], "default": 16}],
            "variants": [{
                "id": variant, "hash": "0",
                "specialization": [{"arg": "in_desc", "dtype": "fp16", "block": [16, 16]},
                                   {"arg": "out_desc", "dtype": "fp16", "block": [16, 16]},
                                   {"arg": "M", "type": "i32", "hint": 0}, {"arg": "scale", "type": "fp32"},
                                   {"arg": "flag", "type": "i1"}],
                "config": {"BM": 16}, "params": ["in_desc", "out_desc", "M", "scale", "flag"],
                "grid": [[{"op": "arg", "name": "M"}, {"op": "lit", "value": 16}, {"op": "cdiv"}],
                         [{"op": "lit", "value": 1}], [{"op": "lit", "value": 1}]],
                "images": [image]}]}


def write_manifest(root, kernels):
    manifest = {"schema": "taot.manifest", "schema_version": 2, "triton_version": "3.6.0", "library": "abi",
                "spec": "abi.toml", "targets": ["sm_80"], "kernels": kernels}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return root / "manifest.json"


def gen(run_taot, manifest):
    return run_taot("gen", manifest, "-o", manifest.parent / "generated", "-q")


@pytest.mark.parametrize("triton", ["3.6.0", "3.7.1"])
def test_a_cubin_is_accepted_in_its_own_tritons_launch_abi(run_taot, tmp_path, triton):
    result = gen(run_taot, write_manifest(tmp_path, [_kernel(tmp_path, "copy", triton, LAYOUT[triton])]))
    assert result.returncode == 0, result.stderr
    source = (tmp_path / "generated" / "abi_tables.cpp").read_text()
    enumerator = "triton_3_5" if triton == "3.6.0" else "triton_3_7"
    assert f"taot::abi::TensordescLayout::{enumerator}, 0, 0, 0, 0, \"{triton}\", \"12.8.93\", nullptr, nullptr}}" in source


@pytest.mark.parametrize("triton, layout, expected, found", [
    ("3.7.1", "3.5", 25, 27),
    ("3.6.0", "3.7", 27, 25),
    ("3.7.1", None, 25, 27),  # a manifest that does not say means Triton 3.5's, as taot assumed before
])
def test_a_cubin_of_another_launch_abi_is_refused_naming_both_lists(run_taot, tmp_path, triton, layout, expected,
                                                                   found):
    result = gen(run_taot, write_manifest(tmp_path, [_kernel(tmp_path, "copy", triton, layout)]))
    assert result.returncode == 1
    message = result.stderr
    assert message.startswith("error: kernel copy variant copy_fp16_BM16 target sm_80 (")
    assert f"(Triton {triton}: tensor descriptor layout {layout or '3.5'}, 2 scratch pointers)" in message
    assert f"expected {expected} parameters [8, 8, 8, 8, 8, 1, " in message
    assert f"], the cubin has {found} [8, 8, 8, 8, 8, 1, " in message
    assert not (tmp_path / "generated" / "abi.cpp").exists()


def test_one_library_holds_images_of_two_triton_releases(run_taot, tmp_path):
    manifest = write_manifest(tmp_path, [_kernel(tmp_path, "copy36", "3.6.0", "3.5"),
                                         _kernel(tmp_path, "copy37", "3.7.1", "3.7")])
    result = gen(run_taot, manifest)
    assert result.returncode == 0, result.stderr
    source = (tmp_path / "generated" / "abi_tables.cpp").read_text()
    assert "TensordescLayout::triton_3_5" in source and "TensordescLayout::triton_3_7" in source

    listed = json.loads(run_taot("inspect", manifest, "--json").stdout)
    assert [(entry["kernel"], entry["triton_version"], entry["ptxas_version"], entry["min_driver"],
             entry["launch_abi"]["tensordesc_layout"]) for entry in listed["images"]] == [
        ("copy36", "3.6.0", "12.8.93", 525, "3.5"), ("copy37", "3.7.1", "12.8.93", 525, "3.7")]
    table = run_taot("inspect", manifest).stdout
    assert "TRITON  PTXAS    DRIVER" in table and "3.7.1   12.8.93     525" in table, table


def test_the_refusal_names_the_real_parameter_table_cuobjdump_shows(tmp_path):
    """The cubin's list in the message is what cuobjdump -elf prints for it (when Triton's is here)."""
    try:
        import triton.backends.nvidia
    except ImportError:
        pytest.skip("no Triton here to find cuobjdump")
    cuobjdump = Path(triton.backends.nvidia.__file__).parent / "bin" / "cuobjdump"
    if not cuobjdump.exists():
        pytest.skip("Triton bundles no cuobjdump here")
    text = subprocess.run([str(cuobjdump), "-elf", str(DATA / "desc_copy_3.7.1_sm80.cubin")], capture_output=True,
                          text=True, check=True).stdout
    sizes = {int(ordinal, 16): int(size, 16)
             for ordinal, size in re.findall(r"Ordinal\s*:\s*0x([0-9a-f]+)\s+Offset\s*:\s*0x[0-9a-f]+\s+Size\s*:\s*0x([0-9a-f]+)",
                                             text)}
    assert [sizes[i] for i in range(len(sizes))] == [8, 8, 8, 8, 8, 1, 1, 4, 4, 8, 8, 8, 8, 8, 8, 8, 1, 1, 4, 4, 8, 8,
                                                     4, 4, 1, 8, 8]
