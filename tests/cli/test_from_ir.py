"""`taot from-ir` through the real binary, no GPU needed: a library of scale_kernel (four variants,
sm_90) is rebuilt from an edited TTGIR (a changed num-warps, a removed op), PTX, TTIR and cubin; the
manifest and the generated registry show the override, a rebuild keeps it, --drop restores the
compiled cubin; a kernel that no longer takes the variant's parameters is refused and the library
left as it was; and a rebuilt kernel is swapped into a Triton cache entry (a second compile of the
same source is a cache hit returning it) or written to Triton's override directory."""
import base64
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)
''')

SPEC = textwrap.dedent('''
    [library]
    name = "scale"
    targets = ["sm_90"]

    [[kernel]]
    name = "scale_kernel"
    source = "kernels.py"
    grid = ["cdiv(n, BLOCK)", 1, 1]

    [kernel.args]
    x_ptr = { type = "*fp32", align = [16] }
    out_ptr = { type = "*fp32", align = [16] }
    n = { type = "i32", hint = [16, "none"] }
    BLOCK = { constexpr = [128, 256] }

    [kernel.options]
    num_warps = [4]

    [kernel.default]
    BLOCK = 128
''')

# Compiles scale_kernel as Triton's JIT does for a call (x, out aligned; n=1000, neither 1 nor a
# multiple of 16; BLOCK as argv[1]), into $TRITON_CACHE_DIR; prints the cubin's SHA-256, num_warps
# and the source's hash (what keys Triton's override directory). argv[2] is the project, argv[3]
# taot's python/ (for the release row: from Triton 3.7 the JIT's attrs hold an entry for BLOCK too).
JIT_LIKE = textwrap.dedent('''
    import hashlib, json, sys
    sys.path[:0] = [sys.argv[2], sys.argv[3]]
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from taot.triton_api import RELEASE
    import kernels
    attrs = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]], (2,): []}
    if RELEASE.constexpr_attrs_entries:
        attrs[(3,)] = []
    source = ASTSource(kernels.scale_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                       {(3,): int(sys.argv[1])}, attrs)
    compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
    print(json.dumps({"cubin": hashlib.sha256(compiled.asm["cubin"]).hexdigest(),
                      "num_warps": compiled.metadata.num_warps, "source_hash": source.hash()}))
''')


@pytest.fixture(scope="module")
def built(tmp_path_factory, taot_bin):
    """A project folder with the spec, the kernel and the library built into lib/ (with --python)."""
    root = tmp_path_factory.mktemp("from_ir_project")
    (root / "kernels.py").write_text(KERNEL)
    (root / "scale.toml").write_text(SPEC)
    done = subprocess.run([str(taot_bin), "build", "scale.toml", "-o", "lib", "--python", "-q"], cwd=root,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def project(built, tmp_path):
    """A copy of the built project of one's own."""
    root = tmp_path / "project"
    shutil.copytree(built, root)
    return root


def manifest(lib):
    return json.loads((lib / "manifest.json").read_text())


def variant_id(lib, block, hint):
    for variant in manifest(lib)["kernels"][0]["variants"]:
        n = next(entry for entry in variant["specialization"] if entry["arg"] == "n")
        if variant["config"]["BLOCK"] == block and n["hint"] == hint:
            return variant["id"]
    raise AssertionError(f"no variant with BLOCK {block}, n hint {hint}")


def image(lib, vid):
    variant = next(v for v in manifest(lib)["kernels"][0]["variants"] if v["id"] == vid)
    return variant["images"][0]


def compiled_stage(lib, vid, stage):
    return gzip.decompress((lib / "artifacts" / vid / "sm_90" / f"scale_kernel.{stage}.gz").read_bytes()).decode()


def sha256_file(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def registry_row(lib, vid):
    """The generated tables' image row of a variant (scale_tables.cpp)."""
    text = (lib / "scale_tables.cpp").read_text()
    match = re.search(r"// Variant \d+: " + re.escape(vid) + r"\n.*?_images\[\] = \{\n\s*(\{.*?\}),\n\};", text, re.DOTALL)
    assert match, f"no image row for {vid} in scale_tables.cpp"
    return match.group(1)


def library_files(lib):
    """Every file of the library folder but the lock, with its SHA-256."""
    return {path.relative_to(lib).as_posix(): sha256_file(path) for path in lib.rglob("*")
            if path.is_file() and path.name != ".taot.lock"}


def edit(text, old, new, count=None):
    assert old in text, f"{old!r} is not in the text to edit"
    if count is not None:
        assert text.count(old) == count, (old, text.count(old))
    return text.replace(old, new)


def from_ir(run_taot, *args, cwd):
    return run_taot("from-ir", *args, cwd=cwd)


def test_ttgir_with_more_warps_becomes_the_override_until_dropped(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    compiled = image(lib, vid)
    assert compiled["num_warps"] == 4 and "override" not in compiled
    edited = project / "w8.ttgir"
    text = edit(compiled_stage(lib, vid, "ttgir"), '"ttg.num-warps" = 4', '"ttg.num-warps" = 8', count=1)
    edited.write_text(edit(text, "warpsPerCTA = [4]", "warpsPerCTA = [8]"))

    done = from_ir(run_taot, "w8.ttgir", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "num_warps 4 -> 8" in done.stderr
    rebuilt = image(lib, vid)
    assert rebuilt["override"] == {"stage": "ttgir", "sha256": sha256_file(edited),
                                   "file": f"overrides/{vid}/sm_90/scale_kernel.ttgir"}
    assert rebuilt["num_warps"] == 8
    assert rebuilt["cubin"] == f"overrides/{vid}/sm_90/scale_kernel.cubin"
    assert rebuilt["cubin_sha256"] == sha256_file(lib / rebuilt["cubin"]) != compiled["cubin_sha256"]
    assert (lib / rebuilt["override"]["file"]).read_bytes() == edited.read_bytes()
    assert rebuilt["artifacts"]["ttir"] == compiled["artifacts"]["ttir"]  # the stage before the edit: compiled
    assert rebuilt["artifacts"]["ptx"].startswith("overrides/")
    assert ".reqntid 256" in (lib / rebuilt["artifacts"]["ptx"]).read_text()
    row = registry_row(lib, vid)
    assert f'"ttgir", "{sha256_file(edited)}"' in row
    assert re.search(r'"scale_kernel", 0, 8, 1, ', row), row  # shared 0, num_warps 8, num_ctas 1
    other = variant_id(lib, 256, 0)
    assert registry_row(lib, other).endswith("nullptr, nullptr}")
    assert "override" not in image(lib, other)

    again = run_taot("build", "scale.toml", "-o", "lib", "--python", cwd=project)
    assert again.returncode == 0, again.stderr
    assert f"{vid} for sm_90: kept the kernel taot from-ir rebuilt from an edited ttgir" in again.stderr
    assert "compiled 0" in again.stderr
    assert image(lib, vid) == rebuilt
    assert f'"ttgir", "{sha256_file(edited)}"' in registry_row(lib, vid)

    dropped = from_ir(run_taot, "--drop", "--variant", vid, "-o", "lib", cwd=project)
    assert dropped.returncode == 0, dropped.stderr
    assert "dropped the ttgir override" in dropped.stderr
    restored = image(lib, vid)
    assert restored == compiled
    assert registry_row(lib, vid).endswith("nullptr, nullptr}")
    assert not (lib / "overrides").exists()
    twice = from_ir(run_taot, "--drop", "--variant", vid, "-o", "lib", cwd=project)
    assert twice.returncode == 1 and "has no override" in twice.stderr


def test_an_image_compiled_by_another_triton_release_is_refused_before_any_work(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    metadata_path = lib / "artifacts" / vid / "sm_90" / "metadata.json"
    metadata = json.loads(metadata_path.read_text())
    other = "3.5.1" if not metadata["triton_version"].startswith("3.5.") else "3.9.0"
    metadata_path.write_text(json.dumps(dict(metadata, triton_version=other)))
    (project / "same.ttgir").write_text(compiled_stage(lib, vid, "ttgir"))
    before = library_files(lib)
    done = from_ir(run_taot, "same.ttgir", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 1
    assert f"was compiled by Triton {other}, and taot runs Triton {metadata['triton_version']}" in done.stderr
    assert f"set TAOT_PYTHON to a Python with Triton {other}" in done.stderr
    assert "Traceback" not in done.stderr and "rebuilt" not in done.stderr
    assert library_files(lib) == before


def test_drop_repairs_a_library_whose_override_folder_was_deleted(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    compiled = image(lib, vid)
    edited = project / "w8.ttgir"
    text = edit(compiled_stage(lib, vid, "ttgir"), '"ttg.num-warps" = 4', '"ttg.num-warps" = 8', count=1)
    edited.write_text(edit(text, "warpsPerCTA = [4]", "warpsPerCTA = [8]"))
    assert from_ir(run_taot, "w8.ttgir", "--variant", vid, "-o", "lib", cwd=project).returncode == 0
    shutil.rmtree(lib / "overrides")
    repaired = from_ir(run_taot, "--drop", "--variant", vid, "-o", "lib", cwd=project)
    assert repaired.returncode == 0, repaired.stderr
    assert "whose folder is gone" in repaired.stderr
    assert image(lib, vid) == compiled
    assert registry_row(lib, vid).endswith("nullptr, nullptr}")


def test_ttgir_with_an_op_removed(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 256, 16)
    lines = compiled_stage(lib, vid, "ttgir").splitlines(keepends=True)
    stores = [line for line in lines if "tt.store" in line]
    assert len(stores) == 1
    (project / "no_store.ttgir").write_text("".join(line for line in lines if "tt.store" not in line))
    done = from_ir(run_taot, "no_store.ttgir", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 0, done.stderr
    rebuilt = image(lib, vid)
    assert rebuilt["override"]["stage"] == "ttgir"
    assert "st.global" not in (lib / rebuilt["artifacts"]["ptx"]).read_text()
    assert "st.global" in compiled_stage(lib, vid, "ptx")
    assert '"ttgir", "' in registry_row(lib, vid)


def test_unchanged_ttgir_gz_rebuilds_the_compiled_cubin(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 128, 16)
    compiled = image(lib, vid)
    source = lib / "artifacts" / vid / "sm_90" / "scale_kernel.ttgir.gz"
    done = from_ir(run_taot, source, "--variant", vid, "-o", "lib", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["schema"] == "taot.from-ir"
    assert result["cubin_sha256"] == compiled["cubin_sha256"]  # Triton's own pipeline, recomputed exactly
    assert result["changes"] == [] and result["carried"] == []
    assert image(lib, vid)["override"]["sha256"] == hashlib.sha256(gzip.decompress(source.read_bytes())).hexdigest()


def test_ptx_edit_carries_what_ptx_does_not_say(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    compiled = image(lib, vid)
    ptx = compiled_stage(lib, vid, "ptx")
    # x * 3.0 compiles to a multiplication by the float 3.0 (0f40400000); make it 5.0.
    (project / "times5.ptx").write_text(edit(ptx, "0f40400000", "0f40A00000"))
    done = from_ir(run_taot, "times5.ptx", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "carried from the kernel it replaces" in done.stderr and "shared 0" in done.stderr
    rebuilt = image(lib, vid)
    assert rebuilt["override"]["stage"] == "ptx"
    assert rebuilt["num_warps"] == 4  # from the PTX's .reqntid 128
    assert rebuilt["cubin_sha256"] != compiled["cubin_sha256"]
    assert set(rebuilt["artifacts"]) == {"ttir", "ttgir", "llir", "ptx", "metadata"}
    assert rebuilt["artifacts"]["llir"] == compiled["artifacts"]["llir"]
    assert "ptxas" in rebuilt and rebuilt["ptxas"]["registers"] > 0  # ptxas' report of the rebuilt cubin
    assert f'"ptx", "{sha256_file(project / "times5.ptx")}"' in registry_row(lib, vid)


def test_ttir_and_cubin(project, run_taot):
    lib = project / "lib"
    first, second = variant_id(lib, 128, 0), variant_id(lib, 256, 0)
    ttir = edit(compiled_stage(lib, first, "ttir"), "3.000000e+00", "5.000000e+00")
    (project / "times5.ttir").write_text(ttir)
    done = from_ir(run_taot, "times5.ttir", "--variant", first, "-o", "lib", cwd=project)
    assert done.returncode == 0, done.stderr
    rebuilt = image(lib, first)
    assert rebuilt["override"]["stage"] == "ttir"
    assert {name: path.startswith("overrides/") for name, path in rebuilt["artifacts"].items()} == \
        {"ttir": True, "ttgir": True, "llir": True, "ptx": True, "metadata": True}
    assert "5.000000e+00" in (lib / rebuilt["artifacts"]["ttgir"]).read_text()

    # That cubin replaces another variant's (same parameters) as it is.
    shutil.copy(lib / rebuilt["cubin"], project / "times5.cubin")
    done = from_ir(run_taot, "times5.cubin", "--variant", second, "-o", "lib", cwd=project)
    assert done.returncode == 0, done.stderr
    swapped = image(lib, second)
    assert swapped["override"]["stage"] == "cubin"
    assert swapped["cubin_sha256"] == sha256_file(project / "times5.cubin")
    assert swapped["num_warps"] == 4  # the cubin's own REQNTID
    assert "ptxas" not in swapped  # no ptxas ran: its report of the compiled cubin does not apply
    assert set(swapped["artifacts"]) == {"ttir", "ttgir", "llir", "ptx", "metadata"}


def test_a_kernel_with_other_parameters_is_refused_and_the_library_left_alone(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    before = library_files(lib)
    ttgir = compiled_stage(lib, vid, "ttgir")
    (project / "extra.ttgir").write_text(edit(ttgir, "@scale_kernel(", "@scale_kernel(%extra: i32, ", count=1))
    done = from_ir(run_taot, "extra.ttgir", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 1
    assert f"extra.ttgir does not fit variant {vid} for sm_90 (Triton parameter types): its function takes " \
           "scale_kernel(i32, *f32, *f32, i32), expected scale_kernel(*f32 x_ptr, *f32 out_ptr, i32 n)" in done.stderr

    ptx = compiled_stage(lib, vid, "ptx")
    line = next(line for line in ptx.splitlines(keepends=True) if "scale_kernel_param_3," in line)
    (project / "fewer.ptx").write_text(ptx.replace(line, ""))
    done = from_ir(run_taot, "fewer.ptx", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 1
    assert "(PTX parameters): its kernel takes scale_kernel(.u64 .ptr .global .align 1, " in done.stderr
    assert ".u64 .ptr .global .align 1 x_ptr, .u64 .ptr .global .align 1 out_ptr, .u32 n, " in done.stderr

    # Assuming n divisible by 16 where the variant does not promise it is refused too.
    divisible = compiled_stage(lib, variant_id(lib, 128, 16), "ttgir")
    (project / "d16.ttgir").write_text(divisible)
    done = from_ir(run_taot, "d16.ttgir", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 1
    assert "it assumes parameter n is divisible by 16" in done.stderr

    broken = project / "broken.ttgir"
    broken.write_text(edit(ttgir, "tt.store", "tt.bogus_store"))
    done = from_ir(run_taot, "broken.ttgir", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 1
    assert "broken.ttgir: rebuilding from its ttgir failed" in done.stderr and "tt.bogus_store" in done.stderr

    (project / "broken.llir").write_text("this is not LLVM IR\n")
    done = from_ir(run_taot, "broken.llir", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 1
    assert "broken.llir: rebuilding from its llir crashed the compiler" in done.stderr
    assert library_files(lib) == before


def test_wrong_variant_target_or_file_are_named(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    (project / "k.ttgir").write_text(compiled_stage(lib, vid, "ttgir"))
    done = from_ir(run_taot, "k.ttgir", "--variant", vid + "x", "-o", "lib", cwd=project)
    assert done.returncode == 1
    assert f"no variant '{vid}x' (did you mean {vid}?); its variants: " in done.stderr
    for other in (variant_id(lib, block, hint) for block in (128, 256) for hint in (16, 0)):
        assert other in done.stderr
    done = from_ir(run_taot, "k.ttgir", "--variant", vid, "--target", "sm_80", "-o", "lib", cwd=project)
    assert done.returncode == 1 and f"variant {vid} has no image for sm_80; its targets: sm_90" in done.stderr
    (project / "k80.ttgir").write_text(edit(compiled_stage(lib, vid, "ttgir"), '"cuda:90"', '"cuda:80"'))
    done = from_ir(run_taot, "k80.ttgir", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 1
    assert f"k80.ttgir: its layouts were made for cuda:80 (ttg.target), and variant {vid} for sm_90 is " \
           "compiled for sm_90" in done.stderr
    (project / "k.txt").write_text("")
    done = from_ir(run_taot, "k.txt", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 1 and "expected a .ttir, .ttgir, .llir, .ptx, .cubin, .amdgcn or .hsaco file" in done.stderr
    done = from_ir(run_taot, "k.ttgir", "--variant", vid, "-o", "elsewhere", cwd=project)
    assert done.returncode == 1 and "elsewhere: no manifest.json here" in done.stderr
    done = from_ir(run_taot, "k.ttgir", "-o", "lib", cwd=project)
    assert done.returncode == 2 and "--variant ID and -o LIBDIR are required" in done.stderr
    done = from_ir(run_taot, "k.ttgir", "--drop", "--variant", vid, "-o", "lib", cwd=project)
    assert done.returncode == 2 and "--drop takes no FILE" in done.stderr


def jit_like_compile(project, cache, block=128, **environment):
    done = subprocess.run([sys.executable, "-c", JIT_LIKE, str(block), str(project), str(REPO / "python")],
                          capture_output=True, text=True,
                          env=dict(os.environ, TRITON_CACHE_DIR=str(cache), **environment), timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_swap_into_a_triton_cache_entry(project, run_taot):
    lib = project / "lib"
    cache = project / "cache"
    original = jit_like_compile(project, cache, 128)
    jit_like_compile(project, cache, 256)  # another entry of the same kernel, same parameters
    vid = variant_id(lib, 128, 0)
    text = edit(compiled_stage(lib, vid, "ttgir"), '"ttg.num-warps" = 4', '"ttg.num-warps" = 8')
    (project / "w8.ttgir").write_text(edit(text, "warpsPerCTA = [4]", "warpsPerCTA = [8]"))
    before = library_files(lib)

    done = from_ir(run_taot, "w8.ttgir", "--triton-cache", "cache", cwd=project)
    assert done.returncode == 1
    assert "2 entries of kernel scale_kernel; pick one with --entry KEY" in done.stderr

    entries = {path.parent.name: path.read_bytes() for path in cache.glob("*/scale_kernel.ttgir")}
    done = from_ir(run_taot, "w8.ttgir", "--triton-cache", "cache", "--variant", vid, "-o", "lib", "--json",
                   cwd=project)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    entry = cache / result["entry"]
    (project / "own.ttgir").write_bytes(entries[result["entry"]])
    assert hashlib.sha256((entry / "scale_kernel.cubin").read_bytes()).hexdigest() == result["cubin_sha256"]
    assert result["cubin_sha256"] != original["cubin"]
    assert json.loads((entry / "scale_kernel.json").read_text())["num_warps"] == 8
    group = json.loads((entry / "__grp__scale_kernel.json").read_text())["child_paths"]
    assert all(Path(path).is_file() for path in group.values())
    assert library_files(lib) == before  # the library is not touched

    again = jit_like_compile(project, cache, 128)  # a cache hit: Triton's CompiledKernel loads the swap
    assert again["cubin"] == result["cubin_sha256"] and again["num_warps"] == 8
    assert jit_like_compile(project, cache, 256)["cubin"] != result["cubin_sha256"]

    # Picking the entry by key works without a library too; a rebuild with other parameters is refused;
    # the entry's own TTGIR rebuilds its own cubin.
    ttgir = compiled_stage(lib, vid, "ttgir")
    (project / "extra.ttgir").write_text(edit(ttgir, "@scale_kernel(", "@scale_kernel(%extra: i32, "))
    done = from_ir(run_taot, "extra.ttgir", "--triton-cache", "cache", "--entry", result["entry"][:12], cwd=project)
    assert done.returncode == 1 and "does not fit Triton cache entry" in done.stderr
    done = from_ir(run_taot, "own.ttgir", "--triton-cache", "cache", "--entry", result["entry"][:12], cwd=project)
    assert done.returncode == 0, done.stderr
    assert jit_like_compile(project, cache, 128) == original


def test_write_tritons_override_directory(project, run_taot):
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    ptx = compiled_stage(lib, vid, "ptx")
    (project / "times5.ptx").write_text(edit(ptx, "0f40400000", "0f40A00000"))
    done = from_ir(run_taot, "times5.ptx", "--override-dir", "override", "--variant", vid, "-o", "lib", "--json",
                   cwd=project)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["environment"]["TRITON_KERNEL_OVERRIDE"] == "1"
    plain = jit_like_compile(project, project / "cache")
    assert result["source_hash"] == plain["source_hash"]  # the key Triton's JIT gives this call's source
    folder = project / "override" / base64.b32encode(bytes.fromhex(plain["source_hash"])).decode().rstrip("=")
    assert sorted(path.name for path in folder.iterdir()) == ["scale_kernel.cubin", "scale_kernel.ptx"]
    overridden = jit_like_compile(project, project / "cache", **result["environment"])
    assert overridden["cubin"] == result["cubin_sha256"] != plain["cubin"]


def test_drop_without_target_on_a_two_target_library_drops_the_one_override(tmp_path, run_taot):
    """A variant with sm_80 and sm_90 images and an override on sm_90 only: --drop without --target
    drops that override and restores the manifest (it deleted the folder and left the manifest naming
    it, and the next taot gen failed)."""
    (tmp_path / "kernels.py").write_text(KERNEL)
    (tmp_path / "scale.toml").write_text(SPEC.replace('targets = ["sm_90"]', 'targets = ["sm_80", "sm_90"]')
                                         .replace("BLOCK = { constexpr = [128, 256] }", "BLOCK = { constexpr = [128] }")
                                         .replace('hint = [16, "none"]', 'hint = ["none"]'))
    built = run_taot("build", "scale.toml", "-o", "lib", "-q", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    lib = tmp_path / "lib"
    variant = manifest(lib)["kernels"][0]["variants"][0]
    vid, compiled = variant["id"], variant["images"]
    assert [entry["target"] for entry in compiled] == ["sm_80", "sm_90"]
    ttir = gzip.decompress((lib / "artifacts" / vid / "sm_90" / "scale_kernel.ttir.gz").read_bytes()).decode()
    (tmp_path / "edited.ttir").write_text(edit(ttir, "arith.mulf", "arith.addf"))
    # A .ttir does not say its target: --target is needed; a .ttgir says it (ttg.target = "cuda:90").
    done = from_ir(run_taot, "edited.ttir", "--variant", vid, "-o", "lib", cwd=tmp_path)
    assert done.returncode == 1 and "pick one with --target" in done.stderr, done.stderr
    ttgir = gzip.decompress((lib / "artifacts" / vid / "sm_90" / "scale_kernel.ttgir.gz").read_bytes()).decode()
    (tmp_path / "edited.ttgir").write_text(edit(ttgir, "arith.mulf", "arith.addf"))
    done = from_ir(run_taot, "edited.ttgir", "--variant", vid, "-o", "lib", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert manifest(lib)["kernels"][0]["variants"][0]["images"][1]["override"]["stage"] == "ttgir"
    dropped = from_ir(run_taot, "--drop", "--variant", vid, "-o", "lib", cwd=tmp_path)
    assert dropped.returncode == 0, dropped.stderr
    assert "no such" not in dropped.stderr and "dropped the ttgir override" in dropped.stderr
    assert manifest(lib)["kernels"][0]["variants"][0]["images"] == compiled
    assert not (lib / "overrides").exists()
    assert run_taot("gen", lib / "manifest.json", "-o", lib, "-q").returncode == 0


@pytest.mark.parametrize("delay", [0.2, 0.4, 0.6, 0.9])
def test_ctrl_c_at_any_moment_stops_from_ir_quietly(project, taot_bin, delay):
    """Ctrl-C reaches the whole process group: the rebuild's child, even one still starting, must not
    hang the command (it waited forever on a child blocked in its start-up) or print its own
    traceback. The command ends with 130 (or 0, or the signal, when it had finished first) within seconds."""
    import signal
    import time
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    (project / "same.ttgir").write_text(compiled_stage(lib, vid, "ttgir"))
    process = subprocess.Popen([str(taot_bin), "from-ir", "same.ttgir", "--variant", vid, "-o", "lib"], cwd=project,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    time.sleep(delay)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: the whole group
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"from-ir did not exit within 60 s of Ctrl-C at {delay} s")
    print(f"Ctrl-C at {delay} s: exit {process.returncode}")
    # 130: stopped; 0: it had finished; killed by SIGINT: the Ctrl-C came as the finished command exited
    assert process.returncode in (0, 130, -signal.SIGINT), stderr
    assert "Fatal Python error" not in stderr and "Traceback" not in stderr, stderr


def descendant_running(pid, argument):
    """The pid of a process below `pid` whose command line's second word is `argument`, else None."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) <= pid:
            continue  # a quicker scan: descendants have higher pids, unless the pid counter wrapped (one attempt lost)
        try:
            stat = (entry / "stat").read_text()
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (ValueError, OSError):
            continue
    for child, parent in parents.items():
        ancestor = parent
        while ancestor not in (0, 1, pid) and ancestor in parents:
            ancestor = parents[ancestor]
        if ancestor == pid:
            try:
                words = (Path("/proc") / str(child) / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if words[1:2] == [argument.encode()]:
                return child
    return None


def test_ctrl_c_in_the_gen_step_names_the_command_that_brings_the_sources_in_step(project, taot_bin):
    """Ctrl-C while from-ir's `taot gen` runs: the manifest has the change, the sources may not; the
    command says so and names the gen command, which then finishes the job. The gen child is stopped
    as soon as it is seen, so that the Ctrl-C lands while it runs; a gen that ended before it could be
    stopped (a loaded machine) makes the attempt count for nothing, and the test tries again."""
    import signal
    import time
    lib = project / "lib"
    vid = variant_id(lib, 128, 0)
    (project / "same.ttgir").write_text(compiled_stage(lib, vid, "ttgir"))
    for attempt in range(10):
        # (SIGINT's default restored for the command: a pytest-xdist worker may ignore it, and an
        # ignored signal stays ignored across exec)
        process = subprocess.Popen([str(taot_bin), "from-ir", "same.ttgir", "--variant", vid, "-o", "lib"],
                                   cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        while (gen := descendant_running(process.pid, "gen")) is None:
            if process.poll() is not None:
                break  # it ended before its gen step was seen
            assert time.monotonic() < deadline, "no gen step within 120 s"
            time.sleep(0.001)
        if gen is None:
            assert process.returncode == 0, process.communicate()
            continue
        try:
            os.kill(gen, signal.SIGSTOP)
        except ProcessLookupError:
            process.communicate(timeout=60)
            continue  # it ended before it could be stopped
        os.killpg(process.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: the whole group
        os.kill(gen, signal.SIGCONT)
        _, stderr = process.communicate(timeout=60)
        if process.returncode == 0 and "generated" in stderr:
            continue  # it had finished its work when it was stopped
        break
    else:
        pytest.fail("in 10 attempts, the gen step always ended before the Ctrl-C")
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == ("interrupted: manifest.json has the change, the generated sources may not: "
                                       "run taot gen lib/manifest.json -o lib --python"), stderr
    assert "Traceback" not in stderr
    assert image(lib, vid)["override"]["stage"] == "ttgir"
    named = subprocess.run([str(taot_bin), "gen", "lib/manifest.json", "-o", "lib", "--python", "-q"], cwd=project,
                           capture_output=True, text=True)
    assert named.returncode == 0, named.stderr


@pytest.mark.parametrize("content, named", [("", "the file is empty (expected a kernel's ttir)"),
                                            ("module {\n}\n", "it defines no kernel (expected a tt.func public @name")])
def test_a_file_without_a_kernel_is_named_as_such(project, run_taot, content, named):
    """An empty .ttir (or one with no tt.func) is said to be so, by from-ir and by passes, not
    "crashed the compiler" or 38 passes run over nothing."""
    lib = project / "lib"
    (project / "empty.ttir").write_text(content)
    done = from_ir(run_taot, "empty.ttir", "--variant", variant_id(lib, 128, 0), "-o", "lib", cwd=project)
    assert done.returncode == 1 and named in done.stderr, done.stderr
    passes = run_taot("passes", "empty.ttir", cwd=project)
    assert passes.returncode == 1 and named in passes.stderr, passes.stderr
