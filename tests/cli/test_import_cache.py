"""`taot import-cache` through the real binary: a Triton cache made by triton.compile for sm_90 (no
GPU needed) becomes a library whose cubins are the cache's, whose constexprs and hints are the ones
compiled, whose spec compiles the same variants, and whose generated sources build; a cache that
cannot be read is refused naming what is wrong."""
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
sys.path.insert(0, str(REPO / "tests" / "python"))
from jit_cache_writer import write_cache  # noqa: E402 (tests/python, the line above)

KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


@triton.jit
def copy(src, dst, n, stride):
    offsets = tl.arange(0, 128)
    mask = offsets < n
    row = tl.program_id(0)
    tl.store(dst + row * stride + offsets, tl.load(src + row * stride + offsets, mask=mask), mask=mask)
'''

# Compiles each job of argv[2] (JSON) from the kernels in folder argv[1] into $TRITON_CACHE_DIR.
COMPILE = '''
import json, sys
sys.path.insert(0, sys.argv[1])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import kernels
for job in json.loads(sys.argv[2]):
    attrs = {(index,): [["tt.divisibility", 16]] for index in job["divisible"]}
    source = ASTSource(getattr(kernels, job["kernel"]), job["signature"], job["constexprs"], attrs)
    triton.compile(source, target=GPUTarget("cuda", job.get("arch", 90), 32), options=job["options"])
'''

SCALE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "factor": "fp32", "BLOCK": "constexpr"}
COPY = {"src": "*fp16", "dst": "*fp16", "n": "i32", "stride": "i64"}
JOBS = [
    {"kernel": "scale", "signature": SCALE, "constexprs": {"BLOCK": 256}, "divisible": [0, 1], "options": {}},
    {"kernel": "scale", "signature": SCALE, "constexprs": {"BLOCK": 1024}, "divisible": [0, 1], "options": {}},
    {"kernel": "scale", "signature": SCALE, "constexprs": {"BLOCK": 1024}, "divisible": [0, 1],
     "options": {"num_warps": 8}},
    {"kernel": "copy", "signature": COPY, "constexprs": {}, "divisible": [3], "options": {"num_warps": 2}},
]
GRIDS = ["--grid", "scale=cdiv(n, BLOCK)", "--grid", "copy=n"]


def make_cache(folder, jobs, kernels=KERNELS):
    """folder/kernels.py and folder/cache, a Triton cache holding `jobs` compiled for sm_90."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernels.py").write_text(kernels)
    env = {**os.environ, "TRITON_CACHE_DIR": str(folder / "cache")}
    result = subprocess.run([sys.executable, "-c", COMPILE, str(folder), json.dumps(jobs)], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return folder / "cache"


# A cache written the way Triton's JIT writes it: the kernels' own warmup, through the JIT's binder.
ALIGNED = {"pointer": "fp32", "aligned": True}
JIT_CALLS = [
    *({"kernel": "scale", "args": [ALIGNED, ALIGNED, n, 2.0], "kwargs": {"BLOCK": 256}} for n in (1000, 1024, 100003)),
    {"kernel": "scale", "args": [ALIGNED, {"pointer": "fp32", "aligned": False}, 1, 2.0], "kwargs": {"BLOCK": 128}},
]


def make_jit_cache(folder, calls, kernels=KERNELS):
    """folder/kernels.py and folder/cache, the Triton cache a program making `calls` leaves."""
    return write_cache(folder, calls, kernels)[0]


def cache_cubins(cache):
    return sorted(path.read_bytes() for path in cache.glob("*/*.cubin"))


def library_cubins(out):
    manifest = json.loads((out / "manifest.json").read_text())
    return sorted((out / image["cubin"]).read_bytes() for kernel in manifest["kernels"]
                  for variant in kernel["variants"] for image in variant["images"])


def kernel_of(out, name):
    manifest = json.loads((out / "manifest.json").read_text())
    return next(kernel for kernel in manifest["kernels"] if kernel["name"] == name)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return make_cache(tmp_path_factory.mktemp("jit"), JOBS)


@pytest.fixture(scope="module")
def imported(cache, taot_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("imported") / "scaling"
    result = subprocess.run([str(taot_bin), "import-cache", str(cache), "-o", str(out), *GRIDS, "--python"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    return out, result


def test_import_builds_a_library_whose_cubins_equal_the_caches(imported, cache):
    out, result = imported
    assert len(cache_cubins(cache)) == 4
    assert library_cubins(out) == cache_cubins(cache)
    for name in ("scaling.h", "scaling_c.h", "scaling.cpp", "scaling_tables.cpp", "scaling_cubins.cpp", "scaling_python.cpp",
                 "CMakeLists.txt", "scaling.toml"):
        assert (out / name).is_file(), name
    assert "scale: 3 variants for sm_90 from 3 cache entries, imported exactly" in result.stderr


def test_constexprs_and_hints_are_the_ones_compiled(imported):
    out, _ = imported
    scale = kernel_of(out, "scale")
    fields = {field["name"]: field["values"] for field in scale["config"]}
    assert fields == {"BLOCK": [256, 1024], "num_warps": [4, 8], "num_stages": [3]}
    assert {(variant["config"]["BLOCK"], variant["config"]["num_warps"]) for variant in scale["variants"]} == \
        {(256, 4), (1024, 4), (1024, 8)}
    assert [arg["name"] for arg in scale["args"]] == ["x_ptr", "out_ptr", "n", "factor", "BLOCK"]
    for variant in scale["variants"]:
        assert variant["specialization"][0] == {"arg": "x_ptr", "dtype": "fp32", "align": 16}
        assert variant["grid"][0] == [{"op": "arg", "name": "n"}, {"op": "lit", "value": variant["config"]["BLOCK"]},
                                      {"op": "cdiv"}]
    copy = kernel_of(out, "copy")
    (variant,) = copy["variants"]
    assert variant["specialization"][3] == {"arg": "stride", "type": "i64", "hint": 16}
    assert variant["specialization"][2] == {"arg": "n", "type": "i32", "hint": 0}
    assert variant["config"] == {"num_warps": 2, "num_stages": 3}


def test_written_spec_compiles_the_same_variants(imported, run_taot, tmp_path):
    out, _ = imported
    spec = out / "scaling.toml"
    listed = run_taot("compile", spec, "--list", "--json")
    assert listed.returncode == 0, listed.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert json.loads(listed.stdout)["schema"] == "taot.compile"
    assert json.loads(listed.stdout)["kernels"] == {
        kernel["name"]: [variant["id"] for variant in kernel["variants"]] for kernel in manifest["kernels"]}
    # Three of the four combinations of BLOCK and num_warps: a filter keeps the spec to them.
    assert "BLOCK == 256 and num_warps == 4" in spec.read_text()
    # The records are what compiling the spec asks for: nothing to compile in the imported folder ...
    again = run_taot("compile", spec, "-o", out)
    assert again.returncode == 0, again.stderr
    assert "compiled 0, up to date 4" in again.stderr
    # ... and compiling it afresh gives the same cubins.
    fresh = run_taot("compile", spec, "-o", tmp_path / "fresh")
    assert fresh.returncode == 0, fresh.stderr
    assert library_cubins(tmp_path / "fresh") == library_cubins(out)


def test_generated_library_and_module_build_and_select_the_imported_variants(imported):
    out, _ = imported
    build = out / "build"
    for command in (["cmake", "-S", str(out), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     f"-DTAOT_SOURCE_DIR={REPO}", f"-DPython_EXECUTABLE={sys.executable}", "--log-level=ERROR"],
                    ["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2)]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    code = textwrap.dedent("""
        import scaling

        class CudaArray:
            def __init__(self, address, typestr):
                self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": (4096,),
                                                 "version": 3}

        x, out = CudaArray(0x7f0000001000, "<f4"), CudaArray(0x7f0000002000, "<f4")
        variants = scaling.scale.variants()
        index, step = scaling.scale.choose(x, out, 4096, 2.0, BLOCK=1024)
        config = variants[index]["config"]
        print(len(variants), config["BLOCK"], config["num_warps"], step)
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join([str(build), os.environ["PYTHONPATH"]])})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.split() == ["3", "1024", "4", "config"]


def test_without_a_grid_every_launch_gives_it(cache, tmp_path, run_taot):
    out = tmp_path / "gridless"
    result = run_taot("import-cache", cache, "-o", out, "--kernel", "scale")
    assert result.returncode == 0, result.stderr
    scale = kernel_of(out, "scale")
    assert scale["grid"] is None and all(variant["grid"] is None for variant in scale["variants"])
    source = (out / "gridless_tables.cpp").read_text()
    assert '"scale", {nullptr, nullptr, nullptr},' in source
    assert "the grid each launch gives" in (out / "gridless.h").read_text()
    spec = (out / "gridless.toml").read_text()
    assert not re.search(r"^grid\s*=", spec, re.MULTILINE)
    # The spec without a grid compiles back to the same variants, still without a grid.
    again = run_taot("compile", out / "gridless.toml", "-o", tmp_path / "again", "-q")
    assert again.returncode == 0, again.stderr
    assert kernel_of(tmp_path / "again", "scale")["grid"] is None
    assert library_cubins(tmp_path / "again") == library_cubins(out)


def test_entries_of_a_missing_source_are_imported_from_their_ir(tmp_path, run_taot):
    cache = make_cache(tmp_path / "gone", JOBS[:2])
    (tmp_path / "gone" / "kernels.py").unlink()
    out = tmp_path / "out"
    result = run_taot("import-cache", cache, "-o", out, "--grid", "cdiv(n, 256)")
    assert result.returncode == 0, result.stderr
    assert "imported from the IR alone" in result.stderr and "kernels.py is not there" in result.stderr
    assert "differ in constexpr values the cache does not record" in result.stderr
    assert library_cubins(out) == cache_cubins(cache)
    scale = kernel_of(out, "scale")
    assert [arg["name"] for arg in scale["args"]] == ["x_ptr", "out_ptr", "n", "factor"]
    assert len({variant["id"] for variant in scale["variants"]}) == 2
    spec = (out / "out.toml").read_text()
    assert "describe its constexpr parameters" in spec
    # The spec is honest: it does not compile until the constexprs are described.
    assert run_taot("compile", out / "out.toml", "--list").returncode == 1


def test_a_constexpr_the_grid_needs_is_unknown_without_the_source(tmp_path, run_taot):
    cache = make_cache(tmp_path / "gone", JOBS[:1])
    result = run_taot("import-cache", cache, "-o", tmp_path / "out", "--grid", "cdiv(n, BLOCK)", "--no-source")
    assert result.returncode == 1
    assert "--grid for scale: entry 0 (cdiv(n, BLOCK)): unknown name BLOCK" in result.stderr
    assert "Traceback" not in result.stderr


def test_entries_of_an_older_version_of_the_source_are_left_out(tmp_path, run_taot):
    folder = tmp_path / "edited"
    cache = make_cache(folder, JOBS[:1])
    edited = KERNELS.replace("mask = offsets < n\n    tl.store(out_ptr", "mask = n > offsets\n    tl.store(out_ptr")
    assert edited != KERNELS
    make_cache(folder, JOBS[1:2], kernels=edited)
    out = tmp_path / "out"
    result = run_taot("import-cache", cache, "-o", out, "--grid", "cdiv(n, BLOCK)")
    assert result.returncode == 0, result.stderr
    assert "does not match scale in" in result.stderr and "left out" in result.stderr
    (variant,) = kernel_of(out, "scale")["variants"]
    assert variant["config"]["BLOCK"] == 1024


def test_kernel_selects_functions_and_names_those_the_cache_holds(cache, run_taot, tmp_path):
    only = run_taot("import-cache", cache, "-o", tmp_path / "only", "--kernel", "copy", "--grid", "n")
    assert only.returncode == 0, only.stderr
    assert [kernel["name"] for kernel in json.loads((tmp_path / "only" / "manifest.json").read_text())["kernels"]] \
        == ["copy"]
    unknown = run_taot("import-cache", cache, "-o", tmp_path / "unknown", "--kernel", "nope", "--grid", "1")
    assert unknown.returncode == 1
    assert "--kernel nope: the cache holds no kernel of that name (it holds: copy, scale)" in unknown.stderr


def test_json_names_the_kernels_variants_and_entries(cache, run_taot, tmp_path):
    result = run_taot("import-cache", cache, "-o", tmp_path / "lib", *GRIDS, "--json", "--name", "mine")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["schema"], report["schema_version"]) == ("taot.import-cache", 1)
    assert report["library"] == "mine" and report["spec"].endswith("mine.toml")
    assert report["kernels"]["scale"]["exact"] is True
    assert len(report["kernels"]["scale"]["variants"]) == 3 and len(report["kernels"]["scale"]["entries"]) == 3


@pytest.mark.parametrize("case, message", [
    ("missing", "no such folder"),
    ("empty", "the folder is empty"),
    ("not_a_cache", "not a Triton cache"),
    ("launchers_only", "holds no compiled kernels"),
])
def test_folders_that_are_not_caches_are_refused(tmp_path, run_taot, case, message):
    folder = tmp_path / case
    if case != "missing":
        folder.mkdir()
    if case == "not_a_cache":
        (folder / "notes").mkdir()
        (folder / "readme.txt").write_text("hello")
    if case == "launchers_only":
        (folder / ("A" * 52)).mkdir()
        (folder / ("A" * 52) / "cuda_utils.so").write_bytes(b"\x7fELF")
    result = run_taot("import-cache", folder, "-o", tmp_path / "out", "--grid", "1")
    assert result.returncode == 1
    assert message in result.stderr and str(folder) in result.stderr
    assert "Traceback" not in result.stderr


def test_a_damaged_entry_is_named_and_nothing_is_written(cache, tmp_path, run_taot):
    damaged = tmp_path / "cache"
    shutil.copytree(cache, damaged)
    cubin = sorted(damaged.glob("*/scale.cubin"))[0]
    cubin.unlink()
    out = tmp_path / "out"
    result = run_taot("import-cache", damaged, "-o", out, *GRIDS)
    assert result.returncode == 1
    assert f"cache entry {cubin.parent.name}/scale: scale.cubin is missing" in result.stderr
    assert not (out / "manifest.json").exists()
    # The kernel's other entries are not needed to import the rest.
    rest = run_taot("import-cache", damaged, "-o", out, "--kernel", "copy", "--grid", "n")
    assert rest.returncode == 0, rest.stderr


def test_an_unfinished_compile_is_skipped_with_a_note(cache, tmp_path, run_taot):
    partial = tmp_path / "cache"
    shutil.copytree(cache, partial)
    unfinished = partial / ("B" * 52)
    unfinished.mkdir()
    (unfinished / "scale.source").write_text("module {}")
    result = run_taot("import-cache", partial, "-o", tmp_path / "out", *GRIDS)
    assert result.returncode == 0, result.stderr
    assert f"note: skipped {'B' * 52}: a compile that did not finish" in result.stderr
    assert library_cubins(tmp_path / "out") == cache_cubins(cache)


@pytest.mark.parametrize("grid, status, message", [
    (["--grid", "cdiv(n, 4"], 2, "--grid: unbalanced parentheses"),
    (["--grid", "1,2,3,4"], 2, "expected 1 to 3 comma-separated grid entries"),
    (["--grid", "scale=cdiv(n, BLOCK)", "--grid", "copy=rows"], 1, "--grid for copy: entry 0 (rows): unknown name rows"),
])
def test_grids_are_checked(cache, tmp_path, run_taot, grid, status, message):
    result = run_taot("import-cache", cache, "-o", tmp_path / "out", *(grid or []))
    assert result.returncode == status
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_cache_the_jit_wrote_is_imported_exactly_and_compiles_back(tmp_path, run_taot):
    # n = 1000 and 100003 specialize alike (an i32 with an empty attrs entry), 1024 as 16-divisible,
    # 1 as a constexpr; the JIT gives every parameter an attrs entry (3.7+: constexprs too).
    cache = make_jit_cache(tmp_path / "jit", JIT_CALLS)
    out = tmp_path / "lib"
    result = run_taot("import-cache", cache, "-o", out, "--grid", "cdiv(n, BLOCK)")
    assert result.returncode == 0, result.stderr
    assert "scale: 3 variants for sm_90 from 3 cache entries, imported exactly" in result.stderr
    assert "left out" not in result.stderr
    assert library_cubins(out) == cache_cubins(cache)
    scale = kernel_of(out, "scale")
    assert sorted((variant["config"]["BLOCK"], variant["specialization"][2].get("hint"))
                  for variant in scale["variants"]) == [(128, 1), (256, 0), (256, 16)]
    # The spec compiles the same variants: nothing to do in the imported folder, the same cubins afresh.
    again = run_taot("compile", out / "lib.toml", "-o", out)
    assert again.returncode == 0, again.stderr
    assert "compiled 0, up to date 3" in again.stderr
    fresh = run_taot("compile", out / "lib.toml", "-o", tmp_path / "fresh")
    assert fresh.returncode == 0, fresh.stderr
    assert library_cubins(tmp_path / "fresh") == library_cubins(out)


ROWS_KERNEL = KERNELS + '''

@triton.heuristics(values={"HAS_BIAS": lambda args: args["bias_ptr"] is not None})
@triton.jit
def rows(x_ptr, bias_ptr, out_ptr, stride_row, stride_col, n_cols, eps, offset, SCALE: tl.constexpr,
         HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr, ACT: tl.constexpr = "none"):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride_row + cols * stride_col + offset * 0, mask=mask)
    if HAS_BIAS:
        x += tl.load(bias_ptr + cols, mask=mask)
    if SCALE:
        x = x * eps
    if ACT == "relu":
        x = tl.maximum(x, 0)
    tl.store(out_ptr + row * stride_row + cols * stride_col, x, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=8,
                                                                                   num_stages=2)],
                 key=["n"])
@triton.jit
def tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)
'''


def test_a_row_kernel_as_projects_call_it_is_imported_exactly(tmp_path, run_taot):
    """A heuristic on a pointer passed as None, a unit stride (compiled as the constant 1), an int that
    is 2**40 on one call, 7 on another and 1 on a third (i64, i32 and the constant 1), a bool and a
    string constexpr: each entry is imported exactly (an int compiled as 1 under several types gave two
    variants of one entry, and the kernel fell to the IR alone); and an autotuned kernel, whose every
    config the JIT compiled at a first call of each key value."""
    aligned = {"pointer": "fp32", "aligned": True}
    calls = [{"kernel": "rows", "args": [aligned, bias, aligned, stride * n_cols, stride, n_cols, 1e-5, offset, scale],
              "kwargs": {"BLOCK": block, "ACT": act}}
             for n_cols, stride, bias, offset, act, scale, block in (
                 (1000, 1, None, 2 ** 40, "none", True, 1024), (4096, 1, aligned, 7, "relu", False, 4096),
                 (33, 48, None, 1, "none", False, 64))]
    # an autotuned kernel's warmup compiles every config, as its first call's tuning does
    calls += [{"kernel": "tuned", "args": [aligned, aligned, n]} for n in (1000, 4096)]
    cache = make_jit_cache(tmp_path / "jit", calls, ROWS_KERNEL)
    out = tmp_path / "lib"
    result = run_taot("import-cache", cache, "-o", out, "--grid", "rows=1", "--grid", "tuned=cdiv(n, BLOCK)")
    assert result.returncode == 0, result.stderr
    assert "rows: 3 variants for sm_90 from 3 cache entries, imported exactly" in result.stderr
    assert "tuned: 4 variants for sm_90 from 4 cache entries, imported exactly" in result.stderr
    assert library_cubins(out) == cache_cubins(cache)
    fresh = run_taot("compile", out / "lib.toml", "-o", tmp_path / "fresh")
    assert fresh.returncode == 0, fresh.stderr
    assert library_cubins(tmp_path / "fresh") == library_cubins(out)


@pytest.mark.parametrize("damage", ["truncated", "not_elf"])
def test_a_damaged_cubin_is_named_and_nothing_is_written(cache, tmp_path, run_taot, damage):
    """A cubin cut short (or not a CUDA ELF at all) is no compiled kernel: an error naming the entry,
    not "imported exactly" with the broken cubin's SHA-256 recorded for later builds to trust."""
    damaged = tmp_path / "cache"
    shutil.copytree(cache, damaged)
    cubin = sorted(damaged.glob("*/scale.cubin"))[0]
    cubin.write_bytes(cubin.read_bytes()[:1000] if damage == "truncated" else b"not a cubin at all" * 100)
    out = tmp_path / "out"
    result = run_taot("import-cache", damaged, "-o", out, *GRIDS)
    assert result.returncode == 1, result.stderr
    assert f"cache entry {cubin.parent.name}/scale: scale.cubin is not a valid cubin: " in result.stderr
    assert "remove the entry's folder" in result.stderr
    assert not (out / "manifest.json").exists()


def test_an_entry_swapped_by_from_ir_is_imported_as_an_override(imported, cache, tmp_path, run_taot):
    """An entry taot from-ir --triton-cache swapped holds an edited kernel under the original's key: the
    library's image of it is that kernel as an override, and its compiled image is the spec's compile
    of the kernel it replaced (equal to the cache's before the swap, and up to date for a later compile)."""
    import gzip
    library, _ = imported
    swapped_cache = tmp_path / "cache"
    shutil.copytree(cache, swapped_cache)
    scale = kernel_of(library, "scale")
    variant = next(v for v in scale["variants"] if v["config"] == {"BLOCK": 256, "num_warps": 4, "num_stages": 3})
    folder = library / variant["images"][0]["dir"]
    ttir = gzip.decompress((folder / "scale.ttir.gz").read_bytes()).decode()
    assert "arith.mulf" in ttir
    (tmp_path / "edited.ttir").write_text(ttir.replace("arith.mulf", "arith.addf"))
    original = (folder / "scale.cubin").read_bytes()
    entry = next(path.parent for path in swapped_cache.glob("*/scale.cubin") if path.read_bytes() == original)
    swap = run_taot("from-ir", tmp_path / "edited.ttir", "--triton-cache", swapped_cache, "--entry", entry.name)
    assert swap.returncode == 0, swap.stderr
    edited = (entry / "scale.cubin").read_bytes()
    assert edited != original

    out = tmp_path / "out"
    result = run_taot("import-cache", swapped_cache, "-o", out, *GRIDS)
    assert result.returncode == 0, result.stderr
    assert f"{entry.name}/scale: swapped by taot from-ir (an edited ttir): kept as the override of {variant['id']}" \
        in result.stderr
    image = next(v for v in kernel_of(out, "scale")["variants"] if v["id"] == variant["id"])["images"][0]
    assert image["override"]["stage"] == "ttir" and (out / image["cubin"]).read_bytes() == edited
    assert (out / "artifacts" / variant["id"] / "sm_90" / "scale.cubin").read_bytes() == original
    again = run_taot("compile", out / "out.toml", "-o", out)
    assert again.returncode == 0, again.stderr
    assert "compiled 0" in again.stderr and "kept the kernel taot from-ir rebuilt from an edited ttir" in again.stderr
