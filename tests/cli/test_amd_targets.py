"""AMD targets in specs (issue P): gfx942 and gfx950 images beside sm_90 in one library, AMD options as
config fields, and the LDS refusal; through the real binary, with no GPU and no ROCm (Triton's wheel
builds AMD code objects on its own)."""
import json
import shutil
import struct
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
KERNELS = Path(__file__).parent / "amd_kernels"
EM_AMDGPU = 224
EF_AMDGPU_MACH = {"gfx942": 0x4C, "gfx950": 0x4F}  # the e_flags machine field (LLVM's AMDGPU usage)


def elf_machine(data):
    """(e_machine, e_flags) of a 64-bit little-endian ELF."""
    assert data[:4] == b"\x7fELF" and data[4] == 2, "not a 64-bit ELF"
    return struct.unpack_from("<H", data, 18)[0], struct.unpack_from("<I", data, 48)[0]


def images(library):
    manifest = json.loads((library / "manifest.json").read_text())
    return [(variant["id"], image) for kernel in manifest["kernels"] for variant in kernel["variants"]
            for image in variant["images"]]


def mm_spec(folder, extra=""):
    shutil.copy(KERNELS / "mm.py", folder / "mm.py")
    (folder / "mm.toml").write_text(f'''[library]
name = "mm"
targets = ["sm_90", "gfx942", "gfx950"]

[[kernel]]
source = "mm.py"
function = "mm_kernel"
grid = ["1"]
{extra}
[kernel.args]
a = {{ type = "*fp16" }}
b = {{ type = "*fp16" }}
c = {{ type = "*fp32", output = true }}
K = {{ type = "i32" }}
BM = {{ constexpr = [128] }}
BN = {{ constexpr = [128] }}
BK = {{ constexpr = [64] }}

[kernel.options]
num_warps = [4]
num_stages = [2]
waves_per_eu = [0, 2]
matrix_instr_nonkdim = [0, 16]

[kernel.default]
waves_per_eu = 0
matrix_instr_nonkdim = 0
''')


def test_an_example_builds_for_gfx942_gfx950_and_sm_90_side_by_side(run_taot, tmp_path):
    """The vector_add example for three targets: each variant has an sm_90 cubin and a gfx942 and
    gfx950 code object, marked amd with a 64-wide wave, and the code object is byte-equal to what
    triton.compile gives for that target."""
    spec = REPO / "examples" / "vector_add" / "vector_add.toml"
    done = run_taot("compile", spec, "--target", "sm_90", "--target", "gfx942", "--target", "gfx950",
                    "-o", tmp_path / "lib")
    assert done.returncode == 0, done.stderr
    seen = {}
    for variant_id, image in images(tmp_path / "lib"):
        data = (tmp_path / "lib" / image["cubin"]).read_bytes()
        seen.setdefault(image["target"], 0)
        seen[image["target"]] += 1
        if image["target"] == "sm_90":
            assert (image["vendor"], image["warp_size"], image["arch"]) == ("nvidia", 32, 90)
            assert elf_machine(data)[0] == 190
            continue
        assert (image["vendor"], image["warp_size"], image["arch"]) == ("amd", 64, 0), image
        assert image["cubin"].endswith(".hsaco")
        machine, flags = elf_machine(data)
        assert machine == EM_AMDGPU and flags & 0xFF == EF_AMDGPU_MACH[image["target"]], (image["target"], hex(flags))
    assert len(set(seen.values())) == 1 and set(seen) == {"sm_90", "gfx942", "gfx950"}, seen


def test_a_code_object_is_what_triton_compile_gives(tmp_path, run_taot, monkeypatch):
    """One variant compiled by taot for gfx950 and by triton.compile directly: the same bytes. (The
    direct compile gets a cache of its own: the file's folder is in the code object's debug
    information, and not in Triton's cache key.)"""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    import importlib.util
    mm_spec(tmp_path)
    done = run_taot("compile", "mm.toml", "--target", "gfx950", "-o", "lib", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    variant_id, image = next((v, i) for v, i in images(tmp_path / "lib") if v.endswith("wpe2_mnk16"))
    loader = importlib.util.spec_from_file_location("mm_direct", tmp_path / "mm.py")
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    source = triton.compiler.ASTSource(
        fn=module.mm_kernel, signature={"a": "*fp16", "b": "*fp16", "c": "*fp32", "K": "i32", "BM": "constexpr",
                                        "BN": "constexpr", "BK": "constexpr"},
        constexprs={"BM": 128, "BN": 128, "BK": 64})
    direct = triton.compile(source, target=GPUTarget("hip", "gfx950", 64),
                            options={"num_warps": 4, "num_stages": 2, "waves_per_eu": 2, "matrix_instr_nonkdim": 16})
    assert (tmp_path / "lib" / image["cubin"]).read_bytes() == direct.asm["hsaco"]


def test_amd_options_are_config_fields_of_amd_images(run_taot, tmp_path):
    """waves_per_eu and matrix_instr_nonkdim vary per variant on AMD targets, reach Triton (its
    metadata says them), and an NVIDIA target is kept to their defaults by a where filter; without it,
    the spec is refused naming the option and the filter to write."""
    mm_spec(tmp_path, extra="where = [\"vendor == 'amd' or (waves_per_eu == 0 and matrix_instr_nonkdim == 0)\"]\n")
    done = run_taot("compile", "mm.toml", "-o", "lib", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    built = {}
    for variant_id, image in images(tmp_path / "lib"):
        metadata = json.loads((tmp_path / "lib" / image["artifacts"]["metadata"]).read_text())
        built.setdefault(image["target"], set()).add((metadata.get("waves_per_eu"), metadata.get("matrix_instr_nonkdim")))
    assert built["gfx942"] == built["gfx950"] == {(0, 0), (0, 16), (2, 0), (2, 16)}, built
    assert built["sm_90"] == {(None, None)}
    mm_spec(tmp_path)
    refused = run_taot("compile", "mm.toml", "-o", "lib2", cwd=tmp_path)
    assert refused.returncode == 1
    assert "is an option of AMD targets only" in refused.stderr and "vendor == 'amd'" in refused.stderr, refused.stderr


def test_a_variant_over_the_targets_lds_is_refused_naming_its_size_and_the_limit(run_taot, tmp_path):
    """Triton compiles a gfx950 kernel of 256 KiB of LDS without a word; taot refuses that variant,
    naming the bytes and gfx950's 160 KiB, and builds the others."""
    mm_spec(tmp_path)
    spec = (tmp_path / "mm.toml").read_text().replace('targets = ["sm_90", "gfx942", "gfx950"]', 'targets = ["gfx950"]')
    spec = spec.replace("BM = { constexpr = [128] }", "BM = { constexpr = [128, 256] }")
    spec = spec.replace("BN = { constexpr = [128] }", "BN = { constexpr = [128, 256] }")
    spec = spec.replace("BK = { constexpr = [64] }", "BK = { constexpr = [128] }").replace("num_stages = [2]", "num_stages = [3]")
    spec = spec.replace("waves_per_eu = [0, 2]", "waves_per_eu = [0]").replace("matrix_instr_nonkdim = [0, 16]", "matrix_instr_nonkdim = [0]")
    (tmp_path / "mm.toml").write_text(spec)
    done = run_taot("compile", "mm.toml", "-o", "lib", cwd=tmp_path)
    assert done.returncode == 1
    assert "262144 bytes of LDS (shared memory) per workgroup; gfx950 has 163840 (160 KiB)" in done.stderr, done.stderr
    assert "BM256_BN256" in done.stderr


def test_a_filter_reading_arch_is_refused_where_the_kernel_has_amd_targets(run_taot, tmp_path):
    """arch is a compute capability, which AMD targets lack: a filter over it would quietly keep or drop
    their variants, so it is refused, naming vendor and target."""
    mm_spec(tmp_path, extra='where = ["arch >= 90 or waves_per_eu == 0"]\n')
    done = run_taot("compile", "mm.toml", "-o", "lib", cwd=tmp_path)
    assert done.returncode == 1
    assert "kernel[0].where[0]" in done.stderr and "AMD targets (gfx942, gfx950)" in done.stderr, done.stderr
    assert "write vendor == 'nvidia' and ..., or target == 'gfx942'" in done.stderr


def test_an_unknown_target_lists_the_amd_ones(run_taot, tmp_path):
    mm_spec(tmp_path)
    done = run_taot("compile", "mm.toml", "--target", "gfx90a", "-o", "lib", cwd=tmp_path)
    assert done.returncode == 2 and "gfx942, gfx950" in done.stderr, done.stderr
