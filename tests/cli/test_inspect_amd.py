"""`taot inspect` through the real binary on AMD GPU code objects (.hsaco) that Triton compiles here
(no GPU, no ROCm): the VGPRs, SGPRs, AGPRs, spills, LDS, scratch and wave size it prints, as a table
and as JSON, equal what each code object's metadata note says as pyelftools and msgpack read it;
a damaged code object is an error that names the file."""
import json
from pathlib import Path

import msgpack  # msgpack and pyelftools: scripts/setup.sh installs them
import pytest
import triton
import triton.language as tl
from elftools.elf import elffile
from triton.backends.compiler import GPUTarget

from test_inspect import inspect, table_rows

# A code object with a fixed LDS (Triton's own are all dynamic LDS, whose fixed size is 0):
# tests/unit/codegen/data/README.md says how it was made.
STATIC_LDS = Path(__file__).resolve().parents[1] / "unit" / "codegen" / "data" / "amdgpu_3.6.0_gfx950_lds.hsaco"
NT_AMDGPU_METADATA = 32


@triton.jit
def scale_kernel(x, y, n, B: tl.constexpr):
    i = tl.program_id(0) * B + tl.arange(0, B)
    v = tl.load(x + i, mask=i < n, other=0.0)
    tl.store(y + i, v / tl.sum(v, axis=0), mask=i < n)


@pytest.fixture(scope="module")
def code_objects(tmp_path_factory):
    """scale_kernel compiled for gfx942 and gfx950, and the checked-in code object with fixed LDS."""
    folder = tmp_path_factory.mktemp("hsaco")
    paths = []
    for arch in ("gfx942", "gfx950"):
        source = triton.compiler.ASTSource(fn=scale_kernel, signature={"x": "*fp32", "y": "*fp32", "n": "i32",
                                                                       "B": "constexpr"}, constexprs={"B": 1024})
        compiled = triton.compile(source, target=GPUTarget("hip", arch, 64))
        path = folder / f"scale_{arch}.hsaco"
        path.write_bytes(compiled.asm["hsaco"])
        paths.append(path)
    return paths + [STATIC_LDS]


def note_metadata(path):
    """The NT_AMDGPU_METADATA note of `path`, decoded by pyelftools and msgpack."""
    with open(path, "rb") as file:
        for section in elffile.ELFFile(file).iter_sections():
            if section["sh_type"] != "SHT_NOTE":
                continue
            for note in section.iter_notes():
                if note["n_name"] == "AMDGPU" and note["n_type"] == NT_AMDGPU_METADATA:
                    descriptor = note["n_descdata"]
                    return msgpack.unpackb(descriptor if isinstance(descriptor, bytes) else descriptor.encode("latin-1"))
    raise AssertionError(f"{path} has no AMDGPU metadata note")


def test_the_table_shows_the_metadata_notes_registers_lds_and_wave_size(run_taot, code_objects):
    for path in code_objects:
        metadata = note_metadata(path)
        kernel, = metadata["amdhsa.kernels"]
        text = inspect(run_taot, path)
        row, = table_rows(text)
        assert row["KERNEL"] == kernel[".name"], text
        assert metadata["amdhsa.target"].endswith("--" + row["TARGET"]), text
        assert int(row["VGPRS"]) == kernel[".vgpr_count"], text
        assert int(row["SGPRS"]) == kernel[".sgpr_count"], text
        assert int(row["AGPRS"]) == kernel[".agpr_count"], text
        assert row["SPILL V/S"] == f'{kernel[".vgpr_spill_count"]}/{kernel[".sgpr_spill_count"]}', text
        assert int(row["LDS"]) == kernel[".group_segment_fixed_size"], text
        assert int(row["SCRATCH"]) == kernel[".private_segment_fixed_size"], text
        assert int(row["WAVE"]) == kernel[".wavefront_size"] == 64, text
        assert f"1 kernel in {path}" in text
        assert "REGS" not in text and "ptxas" not in text, "no NVIDIA columns or words for a code object"
    assert int(row["LDS"]) == 8192, "the checked-in code object's fixed LDS"


def test_json_has_every_fact_of_the_metadata_note(run_taot, code_objects):
    for path in code_objects:
        kernel, = note_metadata(path)["amdhsa.kernels"]
        listed = json.loads(inspect(run_taot, path, "--json"))
        assert (listed["origin"], listed["count"]) == ("code_object", 1)
        entry, = listed["images"]
        facts = entry["amdgpu"]
        assert (facts["vgprs"], facts["sgprs"], facts["agprs"]) == (
            kernel[".vgpr_count"], kernel[".sgpr_count"], kernel[".agpr_count"])
        assert (facts["vgpr_spills"], facts["sgpr_spills"]) == (kernel[".vgpr_spill_count"], kernel[".sgpr_spill_count"])
        assert facts["lds"] == facts["lds_fixed"] == kernel[".group_segment_fixed_size"]
        assert facts["scratch"] == kernel[".private_segment_fixed_size"]
        assert facts["wavefront_size"] == kernel[".wavefront_size"]
        assert facts["kernarg_size"] == kernel[".kernarg_segment_size"]
        assert facts["max_flat_workgroup_size"] == kernel[".max_flat_workgroup_size"]
        assert facts["symbol"] == kernel[".symbol"]
        assert entry["registers"] is None and entry["registers_from"] is None and entry["cubin_resources"] is None


def test_a_damaged_code_object_is_an_error_naming_it(run_taot, code_objects, tmp_path):
    whole = code_objects[0].read_bytes()
    cut = tmp_path / "cut.hsaco"
    cut.write_bytes(whole[: len(whole) // 2])
    result = run_taot("inspect", cut)
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("error: ")
    assert f"{cut}: not a valid AMDGPU code object" in result.stderr, result.stderr

    for args, named in ((["--stage", "sass"], "is an AMD image: sass is NVIDIA machine code"),
                        (["--variant", "x"], "is a bare code object: it has no variants")):
        result = run_taot("inspect", code_objects[0], *args)
        assert result.returncode == 1, result.stdout
        assert named in result.stderr, result.stderr
