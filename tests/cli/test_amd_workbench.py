"""The IR workbench on AMD images (issue P), through the real binary with no GPU and no ROCm: passes
over the AMD backend's own pipelines and from-ir from each stage (.ttir, .ttgir, .llir, .amdgcn,
.hsaco) of a gfx942 variant, each result byte-equal to what triton.compile gives from the same input."""
import gzip
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_amd_targets import images, mm_spec

OPTIONS = {"num_warps": 4, "num_stages": 2, "waves_per_eu": 2, "matrix_instr_nonkdim": 16}
VARIANT_SUFFIX = "wpe2_mnk16"

# triton.compile of each IR file given, for gfx942 with OPTIONS: writes <file>.from.json with every
# stage it made (the image hex-encoded).
TRITON_FROM_FILES = """
import json, sys
import triton
from triton.backends.compiler import GPUTarget
options = json.loads(sys.argv[1])
for path in sys.argv[2:]:
    compiled = triton.compile(path, target=GPUTarget("hip", "gfx942", 64), options=options)
    made = {stage: (value.hex() if isinstance(value, bytes) else value) for stage, value in compiled.asm.items()}
    with open(path + ".from.json", "w") as stream:
        json.dump(made, stream)
"""


@pytest.fixture(scope="module")
def amd_library(tmp_path_factory):
    """A gfx942 + gfx950 library of the tl.dot kernel, its variant with AMD options, and its stage
    files copied out plain (k.ttir, k.ttgir, k.llir, k.amdgcn, k.hsaco)."""
    import os
    folder = tmp_path_factory.mktemp("amd")
    mm_spec(folder)
    taot = os.environ.get("TAOT_BIN", str(Path(__file__).resolve().parents[2] / "build" / "tools" / "taot" / "taot"))
    subprocess.run([taot, "compile", "mm.toml", "--target", "gfx942", "--target", "gfx950", "-o", "lib", "-q"],
                   cwd=folder, check=True, timeout=600)
    variant_id = next(v for v, image in images(folder / "lib") if v.endswith(VARIANT_SUFFIX))
    compiled = folder / "lib" / "artifacts" / variant_id / "gfx942"
    (folder / "compiled").symlink_to(compiled)
    for stage in ("ttir", "ttgir", "llir", "amdgcn"):
        (folder / f"k.{stage}").write_bytes(gzip.decompress((compiled / f"mm_kernel.{stage}.gz").read_bytes()))
    shutil.copy(compiled / "mm_kernel.hsaco", folder / "k.hsaco")
    subprocess.run([sys.executable, "-c", TRITON_FROM_FILES, json.dumps(OPTIONS), str(folder / "k.ttir"),
                    str(folder / "k.ttgir")], check=True, timeout=300,
                   env=dict(os.environ, TRITON_CACHE_DIR=str(folder / "triton-cache")))
    return folder, variant_id


def copy_library(amd_library, tmp_path):
    folder, variant_id = amd_library
    shutil.copytree(folder / "lib", tmp_path / "lib")
    for stage in ("ttir", "ttgir", "llir", "amdgcn", "hsaco"):
        shutil.copy(folder / f"k.{stage}", tmp_path / f"k.{stage}")
    return variant_id


def from_triton(amd_library, stage_file, stage):
    made = json.loads((amd_library[0] / f"{stage_file}.from.json").read_text())[stage]
    return bytes.fromhex(made) if stage == "hsaco" else made


@pytest.mark.parametrize("given, pipeline, final", [("k.ttir", "ttgir", "ttgir"), ("k.ttgir", "llir", "llir")])
def test_passes_replays_the_amd_backends_pipelines(run_taot, amd_library, tmp_path, given, pipeline, final):
    """The ttgir pipeline of AMD's make_ttgir (its two pass managers: convert-to-ttgpuir, then the
    rest, AMD's own passes among them) and the llir one of its make_llir, one pass at a time: the
    result equals Triton's own compile of the same file."""
    folder, _ = amd_library
    # the stage as the build kept it: its metadata.json gives the target and the options
    given_path = folder / "compiled" / f"mm_kernel.{Path(given).suffix[1:]}.gz"
    done = run_taot("passes", given_path, "-o", tmp_path / "out", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["pipeline"] == pipeline and report["backend"] == "HIPBackend"
    assert report["target"] == {"name": "gfx942", "from": "metadata.json" if given == "k.ttir" else "the IR"}
    names = [step["pass"] for step in report["steps"]]
    if pipeline == "ttgir":
        assert names[0] == "convert-to-ttgpuir" and "accelerate-matmul" in names and "pipeline" in names, names
        assert report["options"]["matrix_instr_nonkdim"]["value"] == 16
    else:
        assert "to-llvmir" in names and names[-1] == "translate-to-llvm-ir", names
    assert (tmp_path / "out" / f"final.{final}").read_text() == from_triton(amd_library, given, final)


def test_passes_takes_an_amd_target_for_a_ttir_without_one(run_taot, amd_library, tmp_path):
    folder, _ = amd_library
    shutil.copy(folder / "k.ttir", tmp_path / "k.ttir")  # no metadata.json beside it
    done = run_taot("passes", tmp_path / "k.ttir", "--target", "gfx950", "-o", tmp_path / "out", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["target"] == {"name": "gfx950", "from": "--target"} and report["backend"] == "HIPBackend"
    assert '#ttg.target = "hip:gfx950"' in (tmp_path / "out" / "final.ttgir").read_text() or \
        'ttg.target = "hip:gfx950"' in (tmp_path / "out" / "final.ttgir").read_text()


@pytest.mark.parametrize("stage", ["ttir", "ttgir", "llir", "amdgcn", "hsaco"])
def test_from_ir_rebuilds_an_amd_image_from_each_stage(run_taot, amd_library, tmp_path, stage):
    """from-ir of each unedited stage of the gfx942 image: the override's code object equals Triton's
    own (the compiled one from .llir, .amdgcn and .hsaco; Triton's compile of the file from .ttir and
    .ttgir), the parameters match, and taot gen takes the override."""
    variant_id = copy_library(amd_library, tmp_path)
    done = run_taot("from-ir", f"k.{stage}", "--variant", variant_id, "--target", "gfx942", "-o", "lib",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"for variant {variant_id} for gfx942" in done.stderr and "its parameters match" in done.stderr
    image = next(image for v, image in images(tmp_path / "lib") if v == variant_id and image["target"] == "gfx942")
    assert image["override"]["stage"] == stage and image["cubin"].endswith(".hsaco")
    rebuilt = (tmp_path / "lib" / image["cubin"]).read_bytes()
    if stage in ("ttir", "ttgir"):
        assert rebuilt == from_triton(amd_library, f"k.{stage}", "hsaco")
    else:
        assert rebuilt == (amd_library[0] / "k.hsaco").read_bytes()
    assert "generated" in done.stderr, done.stderr  # the gen step took the override


def test_an_edited_amdgcn_is_assembled_and_a_wrong_one_refused(run_taot, amd_library, tmp_path):
    """An .amdgcn with an instruction added gives a new code object of the same kernel; one whose
    kernel takes another argument list is refused naming both; PTX cannot replace an AMD image."""
    variant_id = copy_library(amd_library, tmp_path)
    text = (tmp_path / "k.amdgcn").read_text()
    first_instruction = re.search(r"^(\s+)s_\w+", text, re.MULTILINE)
    edited = text[:first_instruction.start()] + "\ts_nop 0\n" + text[first_instruction.start():]
    (tmp_path / "edited.amdgcn").write_text(edited)
    done = run_taot("from-ir", "edited.amdgcn", "--variant", variant_id, "--target", "gfx942", "-o", "lib",
                    cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    image = next(image for v, image in images(tmp_path / "lib") if v == variant_id and image["target"] == "gfx942")
    assert (tmp_path / "lib" / image["cubin"]).read_bytes() != (amd_library[0] / "k.hsaco").read_bytes()

    # K (an i32) declared 8 bytes wide in the code object's metadata: the kernel takes other arguments
    wider = re.sub(r"(\.offset:\s+24\n\s+\.size:\s+)4", r"\g<1>8", text)
    assert wider != text
    (tmp_path / "wider.amdgcn").write_text(wider)
    refused = run_taot("from-ir", "wider.amdgcn", "--variant", variant_id, "--target", "gfx942", "-o", "lib",
                       cwd=tmp_path)
    assert refused.returncode != 0, refused.stderr
    assert "image parameter sizes" in refused.stderr and "8 bytes, 8 bytes, 8 bytes, 8 bytes" in refused.stderr, \
        refused.stderr
    (tmp_path / "k.ptx").write_text(".version 8.0\n.target sm_90a\n.visible .entry mm_kernel() { ret; }\n")
    ptx = run_taot("from-ir", "k.ptx", "--variant", variant_id, "--target", "gfx942", "-o", "lib", cwd=tmp_path)
    assert ptx.returncode != 0 and "PTX is NVIDIA's" in ptx.stderr, ptx.stderr


# ---- a Triton cache the JIT wrote for an AMD GPU ----

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from jit_cache_writer import write_cache  # noqa: E402
from test_jit_cache_import import CALLS, KERNELS  # noqa: E402


def manifest_images(library):
    return {(variant_id, image["target"]): image for variant_id, image in images(library)}


def test_import_cache_takes_every_entry_the_amd_jit_wrote_exactly(run_taot, tmp_path):
    """The JIT's own warmup calls on a gfx942 device (sizes that are and are not multiples of 16, n == 1,
    an autotuned kernel): every entry imported exactly, and the spec written beside the library
    recompiles every code object byte-equal."""
    cache, compiled = write_cache(tmp_path / "jit", CALLS, KERNELS, target="hip:gfx942")
    done = run_taot("import-cache", cache, "-o", tmp_path / "lib", "--grid", "cdiv(n,BLOCK)")
    assert done.returncode == 0, done.stderr
    assert "scale: 4 variants for gfx942 from 4 cache entries, imported exactly" in done.stderr, done.stderr
    assert "tuned_copy: 2 variants for gfx942 from 2 cache entries, imported exactly" in done.stderr
    imported = manifest_images(tmp_path / "lib")
    assert len(imported) == len(compiled) == 6
    rebuilt = run_taot("compile", tmp_path / "lib" / "lib.toml", "-o", tmp_path / "again", "-q")
    assert rebuilt.returncode == 0, rebuilt.stderr
    again = manifest_images(tmp_path / "again")
    assert {key: image["cubin_sha256"] for key, image in imported.items()} == \
        {key: image["cubin_sha256"] for key, image in again.items()}


def test_an_entry_of_a_tensor_under_2gb_is_imported_from_its_ir_saying_why(run_taot, tmp_path):
    """AMD's JIT gives a tensor under 2 GB tt.pointer_range = 32 (buffer loads); no spec can ask for
    that, so the entry's code object is imported from its IR alone, and the note says why."""
    small = {"pointer": "fp32", "aligned": True, "within_2gb": True}
    cache, compiled = write_cache(tmp_path / "jit", [{"kernel": "scale", "args": [small, small, 4096, 2.0],
                                                      "kwargs": {"BLOCK": 256}}], KERNELS, target="hip:gfx942")
    assert ["tt.pointer_range", 32] in compiled[0]["attrs"][0][1]
    done = run_taot("import-cache", cache, "-o", tmp_path / "lib")
    assert done.returncode == 0, done.stderr
    assert "imported from the IR alone: its pointers carry tt.pointer_range = 32" in done.stderr, done.stderr
    image, = manifest_images(tmp_path / "lib").values()
    entry = next(cache.glob("*/scale.hsaco"))
    assert (tmp_path / "lib" / image["cubin"]).read_bytes() == entry.read_bytes()


def test_the_seed_loop_on_an_amd_cache(run_taot, tmp_path):
    """The workflow the project grew from, on AMD: a JIT cache, passes over an entry's .ttgir, an edit,
    from-ir --triton-cache swapping the rebuilt .hsaco into the entry, and import-cache keeping the
    swapped entry as the override of the variant the spec compiles."""
    cache, _ = write_cache(tmp_path / "jit", CALLS, KERNELS, target="hip:gfx942")
    entry = next(folder for folder in cache.iterdir() if (folder / "scale.ttgir").exists())
    listed = run_taot("passes", entry / "scale.ttgir", "-o", tmp_path / "passes")
    assert listed.returncode == 0 and "for gfx942 (the IR)" in listed.stderr + listed.stdout, listed.stderr
    text = (entry / "scale.ttgir").read_text()
    assert "arith.mulf" in text
    (tmp_path / "edited.ttgir").write_text(text.replace("arith.mulf", "arith.addf"))
    before = (entry / "scale.hsaco").read_bytes()
    swapped = run_taot("from-ir", tmp_path / "edited.ttgir", "--triton-cache", cache, "--entry", entry.name)
    assert swapped.returncode == 0, swapped.stderr
    assert "scale.hsaco" in swapped.stderr and (entry / "scale.hsaco").read_bytes() != before
    assert "v_add_f32" in (entry / "scale.amdgcn").read_text()
    done = run_taot("import-cache", cache, "-o", tmp_path / "lib", "--grid", "cdiv(n,BLOCK)")
    assert done.returncode == 0, done.stderr
    assert f"{entry.name}/scale: swapped by taot from-ir (an edited ttgir): kept as the override" in done.stderr
    overridden = [image for image in manifest_images(tmp_path / "lib").values() if image.get("override")]
    assert len(overridden) == 1 and overridden[0]["target"] == "gfx942"
    assert (tmp_path / "lib" / overridden[0]["cubin"]).read_bytes() == (entry / "scale.hsaco").read_bytes()
