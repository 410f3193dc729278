# Real compiles of a tiny kernel for one target: manifest contents, incremental rebuilds, failures, CLI.
import hashlib
import json

from taot.library.manifest import render
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, base_spec
from taot import triton_api
from taot.compile.engine import build
from taot.errors import CompileError
from taot.compile.ir_files import read_stage
from taot.triton_api import versions

MANIFEST_IMAGE_KEYS = {"target", "arch", "vendor", "warp_size", "arch_specific", "dir", "cubin", "cubin_sha256", "function_name",
                       "num_warps", "num_ctas", "num_stages", "shared", "global_scratch_size",
                       "global_scratch_align", "profile_scratch_size", "profile_scratch_align",
                       "launch_cooperative_grid", "launch_pdl", "cluster_dims", "tmem_size", "maxnreg", "tensordesc_meta", "artifacts",
                       "ptxas", "triton_version", "ptxas_version", "launch_abi"}


def small_spec():
    """Two variants (n % 16 == 0, n == 1) for sm_90 only."""
    spec = base_spec()
    kernel = spec["kernel"][0]
    kernel["types"]["T"] = ["fp32"]
    kernel["args"]["x_ptr"]["align"] = [16]
    kernel["args"]["n"]["hint"] = [16, 1]
    kernel["args"]["BLOCK"]["constexpr"] = [64]
    kernel["options"] = {"num_warps": [4], "num_stages": [2]}
    kernel["default"] = {}
    return spec


def compile_small(project, out="out", spec=None):
    library = project.load(spec or small_spec())
    return build(library, project.root / out, workers=1)


def read_manifest(project, out="out"):
    return json.loads((project.root / out / "manifest.json").read_text())


def test_manifest_follows_the_schema(project):
    result = compile_small(project)
    assert (result.compiled, result.up_to_date, result.manifest_changed) == (2, 0, True)
    text = (project.root / "out/manifest.json").read_text()
    manifest = json.loads(text)
    assert text == render(manifest)
    assert '            [{"name": "n", "op": "arg"}, {"op": "lit", "value": 64}, {"op": "cdiv"}],' in text
    assert manifest["schema"] == "taot.manifest" and manifest["schema_version"] == 2
    assert manifest["triton_version"] == triton_api.VERSION
    assert (manifest["library"], manifest["spec"], manifest["targets"]) == ("scale", "../spec.toml", ["sm_90"])
    kernel, = manifest["kernels"]
    assert (kernel["name"], kernel["function"], kernel["source"]) == ("scale_kernel", "scale_kernel", "../kernel.py")
    assert re.fullmatch(r"[0-9a-f]{64}", kernel["source_hash"])
    assert kernel["grid"] == ["cdiv(n, BLOCK)", "1", "1"]
    assert kernel["args"] == [
        {"name": "x_ptr", "kind": "pointer", "dtypes": ["fp32"], "output": False},
        {"name": "out_ptr", "kind": "pointer", "dtypes": ["fp32"], "output": False},
        {"name": "n", "kind": "int", "types": ["i32"]},
        {"name": "scale", "kind": "float", "types": ["fp32"]},
        {"name": "BLOCK", "kind": "constexpr"},
        {"name": "ACC", "kind": "constexpr"},
    ]
    assert kernel["config"] == [
        {"name": "BLOCK", "kind": "int", "values": [64], "default": 64},
        {"name": "ACC", "kind": "dtype", "values": ["fp32"], "default": "fp32"},
        {"name": "num_warps", "kind": "int", "values": [4], "default": 4},
        {"name": "num_stages", "kind": "int", "values": [2], "default": 2},
    ]
    divisible, equal_one = kernel["variants"]
    assert divisible["id"] == "scale_kernel_fp32a16_fp32_i32d16_fp32_B64_Afp32_w4_s2"
    assert equal_one["id"] == "scale_kernel_fp32a16_fp32_i32eq1_fp32_B64_Afp32_w4_s2"
    assert divisible["specialization"] == [
        {"arg": "x_ptr", "dtype": "fp32", "align": 16}, {"arg": "out_ptr", "dtype": "fp32", "align": 0},
        {"arg": "n", "type": "i32", "hint": 16}, {"arg": "scale", "type": "fp32"}]
    assert divisible["config"] == {"BLOCK": 64, "ACC": "fp32", "num_warps": 4, "num_stages": 2}
    assert divisible["params"] == ["x_ptr", "out_ptr", "n", "scale"]
    assert equal_one["params"] == ["x_ptr", "out_ptr", "scale"]
    assert divisible["grid"][0] == [{"op": "arg", "name": "n"}, {"op": "lit", "value": 64}, {"op": "cdiv"}]
    assert equal_one["grid"] == [[{"op": "lit", "value": 1}]] * 3
    assert divisible["hash"] != equal_one["hash"]
    for variant in kernel["variants"]:
        image, = variant["images"]
        assert set(image) == MANIFEST_IMAGE_KEYS
        assert (image["target"], image["arch"], image["arch_specific"]) == ("sm_90", 90, True)
        assert (image["num_warps"], image["num_ctas"], image["num_stages"]) == (4, 1, 2)
        assert image["function_name"] == "scale_kernel" and image["cluster_dims"] == [1, 1, 1]
        assert image["triton_version"] == manifest["triton_version"]
        assert re.fullmatch(r"\d+\.\d+\.\d+", image["ptxas_version"]), image["ptxas_version"]
        layout = "3.5" if versions.minor_of(triton_api.VERSION) <= (3, 6) else "3.7"
        assert image["launch_abi"] == {"tensordesc_layout": layout, "scratch_pointers": 2}
        assert set(image["ptxas"]) == {"registers", "spill_stores", "spill_loads", "stack"}
        assert 0 < image["ptxas"]["registers"] <= 255 and image["ptxas"]["spill_stores"] == 0
        assert image["dir"] == f"artifacts/{variant['id']}/sm_90"
        assert image["cubin"] == f"artifacts/{variant['id']}/sm_90/scale_kernel.cubin"
        cubin = (project.root / "out" / image["cubin"]).read_bytes()
        assert hashlib.sha256(cubin).hexdigest() == image["cubin_sha256"]
        for path in image["artifacts"].values():
            assert (project.root / "out" / path).is_file()
        ptx = read_stage(project.root / "out" / image["artifacts"]["ptx"])
        assert ".target sm_90a" in ptx
        assert (project.root / "out" / image["dir"] / "inputs.json").is_file()


def test_scalar_one_disappears_from_the_kernel_parameters(project):
    compile_small(project)
    manifest = read_manifest(project)
    for variant in manifest["kernels"][0]["variants"]:
        ptx = read_stage(project.root / "out" / variant["images"][0]["artifacts"]["ptx"])
        # the kernel's parameters, plus Triton's two trailing scratch pointers
        assert len(re.findall(r"\.param \.\w+ .*scale_kernel_param_\d+", ptx)) == len(variant["params"]) + 2


def test_second_compile_is_up_to_date_and_leaves_the_manifest_alone(project):
    compile_small(project)
    manifest_path = project.root / "out/manifest.json"
    before = manifest_path.stat().st_mtime_ns
    cubins = sorted((project.root / "out/artifacts").glob("*/sm_90/*.cubin"))
    cubin_times = [path.stat().st_mtime_ns for path in cubins]
    result = compile_small(project)
    assert (result.compiled, result.up_to_date, result.manifest_changed) == (0, 2, False)
    assert manifest_path.stat().st_mtime_ns == before
    assert [path.stat().st_mtime_ns for path in cubins] == cubin_times


def test_same_inputs_give_identical_manifests(project):
    compile_small(project, out="first")
    compile_small(project, out="second")
    assert (project.root / "first/manifest.json").read_bytes() == (project.root / "second/manifest.json").read_bytes()


def test_changing_the_kernel_source_recompiles(project):
    compile_small(project)
    before = read_manifest(project)["kernels"][0]["source_hash"]
    source = project.root / "kernel.py"
    source.write_text(source.read_text().replace("(x * scale)", "(x * scale + 1.0)"))
    result = compile_small(project)
    assert (result.compiled, result.up_to_date) == (2, 0)
    assert read_manifest(project)["kernels"][0]["source_hash"] != before


def test_changing_an_option_recompiles_only_what_changed(project):
    compile_small(project)
    spec = small_spec()
    spec["kernel"][0]["args"]["n"]["hint"] = [16, 1, "none"]
    result = compile_small(project, spec=spec)
    assert (result.compiled, result.up_to_date) == (1, 2)


def test_artifacts_that_no_longer_belong_are_removed(project):
    compile_small(project)
    foreign = project.root / "out/artifacts/notes/readme.txt"
    foreign.parent.mkdir()
    foreign.write_text("keep me")
    spec = small_spec()
    spec["kernel"][0]["args"]["n"]["hint"] = [16]
    result = compile_small(project, spec=spec)
    removed_variant = "scale_kernel_fp32a16_fp32_i32eq1_fp32_B64_Afp32_w4_s2"
    assert result.removed_dirs == [project.root / "out/artifacts" / removed_variant / "sm_90"]
    assert sorted(path.name for path in (project.root / "out/artifacts").iterdir()) == [
        "notes", "scale_kernel_fp32a16_fp32_i32d16_fp32_B64_Afp32_w4_s2"]
    assert foreign.read_text() == "keep me"
    assert len(read_manifest(project)["kernels"][0]["variants"]) == 1


BROKEN_KERNEL = '''\
import triton
import triton.language as tl


@triton.jit
def broken(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.no_such_function(offsets))
'''


def broken_spec():
    return {"library": {"name": "broken", "targets": ["sm_90"]},
            "kernel": [{"name": "broken", "source": "broken.py", "grid": [1],
                        "args": {"x_ptr": "*fp32", "BLOCK": {"constexpr": [32]}}}]}


def test_compile_failure_names_variant_and_target(project):
    (project.root / "broken.py").write_text(BROKEN_KERNEL)
    library = project.load(broken_spec())
    (project.root / "out").mkdir()
    (project.root / "out/manifest.json").write_text("{}")
    with pytest.raises(CompileError) as caught:
        build(library, project.root / "out", workers=1)
    message = str(caught.value)
    assert message.startswith("error: compiling broken_fp32_B32 for sm_90 failed:\nbroken.py:8:30:")
    assert "no_such_function" in message
    assert not (project.root / "out/manifest.json").exists()


# A kernel defined in a class: Triton keeps its text dedented; the error still names the file's line
# and column.
CLASS_KERNEL = '''\
import triton
import triton.language as tl


class Ops:
    """Kernels grouped in a class."""

    @staticmethod
    @triton.jit
    def broken(x_ptr, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)

        tl.store(x_ptr + offsets, tl.no_such_function(offsets))


broken = Ops.broken
'''


def test_compile_failure_in_a_class_names_the_files_line(project):
    (project.root / "broken.py").write_text(CLASS_KERNEL)
    library = project.load(broken_spec())
    with pytest.raises(CompileError) as caught:
        build(library, project.root / "out", workers=1)
    message = str(caught.value)
    assert message.startswith("error: compiling broken_fp32_B32 for sm_90 failed:\nbroken.py:13:34:"), message
    line = CLASS_KERNEL.splitlines()[12]
    assert line[34:].startswith("tl.no_such_function"), line


# ---- the command line ----

def run_cli(*arguments, cwd):
    environment = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    return subprocess.run([sys.executable, "-m", "taot", "compile", *arguments], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=300)


def test_cli_compiles_in_parallel_then_finds_everything_up_to_date(project):
    project.write_spec(small_spec())
    first = run_cli("spec.toml", "-o", "out", "-j", "2", cwd=project.root)
    assert first.returncode == 0, first.stderr
    progress = [line for line in first.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 2
    assert all(re.fullmatch(r"\[[12]/2\] scale_kernel_\w+ sm_90 \d+\.\d\ds", line) for line in progress)
    assert re.search(r"^compiled 2, up to date 0, in \d+\.\ds$", first.stderr, re.MULTILINE)
    assert "manifest: out/manifest.json (written)" in first.stderr
    second = run_cli("spec.toml", "-o", "out", "--json", cwd=project.root)
    assert second.returncode == 0, second.stderr
    summary = json.loads(second.stdout)
    assert (summary["compiled"], summary["up_to_date"], summary["manifest_changed"]) == (0, 2, False)


def test_cli_lists_variants_without_compiling(project):
    project.write_spec(base_spec())
    listed = run_cli("spec.toml", "--list", "--target", "sm_80,sm_90", cwd=project.root)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == "scale_kernel_fp32a16_fp32_i32d16_fp32_B64_Afp32_w4"
    assert len(lines) == 33
    assert lines[-1] == "32 variants (scale_kernel 32) for 2 targets (sm_80, sm_90) = 64 compile jobs"
    assert not (project.root / "out").exists()


def test_cli_spec_error_is_a_message_not_a_traceback(project):
    spec = base_spec()
    spec["kernel"][0]["args"]["n"]["hint"] = [16, 8]
    project.write_spec(spec)
    failed = run_cli("spec.toml", "-o", "out", cwd=project.root)
    assert failed.returncode == 1
    assert failed.stderr == 'error: spec.toml: kernel[0].args.n.hint[1]: expected 1, 16 or "none", got 8\n'


def test_cli_compile_failure_exits_1_and_names_the_variant(project):
    (project.root / "broken.py").write_text(BROKEN_KERNEL)
    project.write_spec(broken_spec())
    failed = run_cli("spec.toml", "-o", "out", "--quiet", cwd=project.root)
    assert failed.returncode == 1
    assert "error: compiling broken_fp32_B32 for sm_90 failed:" in failed.stderr
    assert "no_such_function" in failed.stderr and "Traceback" not in failed.stderr
    assert not (project.root / "out/manifest.json").exists()


def test_native_diagnostics_are_kept_without_ir_dumps():
    from taot.compile.jobs import error_text
    captured = ("Unsupported conversion from f8E4M3FN to f64\n"
                "#blocked = #ttg.blocked<{sizePerThread = [1]}>\n"
                "module attributes {} {\n  tt.func public @k() {\n    tt.return\n  }\n}\n"
                "{-#\n  external_resources: {}\n#-}\n"
                "k.py:6:0: error: Failures have been detected while processing an MLIR pass pipeline\n"
                "Unsupported conversion from f8E4M3FN to f64\n")
    assert error_text(RuntimeError("PassManager::run failed"), diagnostics=captured).splitlines() == [
        "RuntimeError: PassManager::run failed",
        "Unsupported conversion from f8E4M3FN to f64",
        "k.py:6:0: error: Failures have been detected while processing an MLIR pass pipeline",
    ]


# Two kernel folders, each with its own `common.py`: each kernel is compiled with its own folder's
# helper, in one worker and in several, and the depfile names both helpers.
NEIGHBOUR_KERNEL = '''\
import triton
import triton.language as tl
from common import op


@triton.jit
def apply_op(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, op(tl.load(x_ptr + offsets, mask=mask)), mask=mask)
'''
NEIGHBOUR_SPEC = '''\
[library]
name = "neighbours"
targets = ["sm_90"]
''' + "".join(f'''
[[kernel]]
name = "{name}"
source = "{folder}/kern.py"
function = "apply_op"
grid = ["cdiv(n, BLOCK)"]
[kernel.args]
x_ptr = "*fp32"
out_ptr = "*fp32"
n = "i32"
BLOCK = {{ constexpr = 256 }}
''' for name, folder in (("plus_one", "a"), ("times_two", "b")))


def write_neighbour_folders(root):
    for folder, body in (("a", "x + 1.0"), ("b", "x * 2.0")):
        (root / folder).mkdir()
        (root / folder / "kern.py").write_text(NEIGHBOUR_KERNEL)
        (root / folder / "common.py").write_text(f"import triton\n\n\n@triton.jit\ndef op(x):\n    return {body}\n")
    (root / "spec.toml").write_text(NEIGHBOUR_SPEC)


@pytest.mark.parametrize("workers", ["1", "2"])
def test_same_named_neighbour_modules_of_two_folders_stay_apart(tmp_path, workers):
    write_neighbour_folders(tmp_path)
    environment = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    result = subprocess.run([sys.executable, "-m", "taot", "compile", "spec.toml", "-o", "out", "-j", workers, "--ir",
                             "plain"], cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "out/manifest.json").read_text())
    for kernel, wanted, unwanted in (("plus_one", "arith.addf", "arith.mulf"), ("times_two", "arith.mulf", "arith.addf")):
        (variant,) = next(k for k in manifest["kernels"] if k["name"] == kernel)["variants"]
        ttir = read_stage(tmp_path / "out" / variant["images"][0]["artifacts"]["ttir"])
        assert wanted in ttir and unwanted not in ttir, (kernel, ttir)


def test_the_depfile_names_each_folders_neighbour(tmp_path):
    from taot.compile import depfile
    from taot.spec.source import import_source
    write_neighbour_folders(tmp_path)
    plus_one, times_two = (import_source(tmp_path / folder / "kern.py") for folder in ("a", "b"))
    assert plus_one.op is not times_two.op
    (tmp_path / "a" / "kern2.py").write_text(NEIGHBOUR_KERNEL)  # folder a again, after b
    assert import_source(tmp_path / "a" / "kern2.py").op is plus_one.op
    sources = depfile.imported_sources()
    assert {tmp_path / "a" / "common.py", tmp_path / "b" / "common.py"} <= sources


# A compile error inside @triton.jit helpers of another file: every call on the way is named at its
# file's line, and Triton's message (held by the innermost error) is kept, even past the line limit.
HELPERS = '''\
import triton
import triton.language as tl


@triton.jit
def bad_helper(x, BLOCK: tl.constexpr):
    y = tl.reshape(x, (BLOCK // 3, 3))
    return tl.sum(y, axis=1)


@triton.jit
def middle(x, BLOCK: tl.constexpr):
    x = x + 1
    return bad_helper(x, BLOCK)
'''
USES_HELPERS = '''\
import triton
import triton.language as tl
from helpers import middle


@triton.jit
def broken(x_ptr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets)
    tl.store(x_ptr + offsets, middle(x, BLOCK))
'''


def test_a_compile_error_in_a_helper_names_each_call_and_keeps_the_message(project):
    (project.root / "broken.py").write_text(USES_HELPERS)
    (project.root / "helpers.py").write_text(HELPERS)
    library = project.load(broken_spec())
    with pytest.raises(CompileError) as caught:
        build(library, project.root / "out", workers=1)
    lines = str(caught.value).splitlines()
    located = [line for line in lines if re.fullmatch(r"\w+\.py:\d+:\d+:", line)]
    assert located == ["broken.py:10:30:", "helpers.py:14:11:", "helpers.py:7:8:"], lines
    assert lines[-1] == "Shape element 0 must be a power of 2", lines


@pytest.mark.parametrize("asked, cores, memory, jobs, expected, said", [
    (0, 16, 64 * 2**30, 100, 16, None),                      # every core, memory to spare
    (64, 16, 64 * 2**30, 100, 16, "-j 64: this machine has 16 cores; compiling with 16 processes"),
    (8, 16, 2 * 2**30, 100, 4, "-j 8: 2.0 GB of memory available holds 4 (about 0.5 GB each); compiling with 4"),
    (0, 16, 2**30, 100, 2, "16 workers (one per core): 1.0 GB of memory available holds 2"),
    (8, 16, 100 * 2**20, 100, 1, "0.1 GB of memory available holds 1"),  # at least one
    (64, 16, 64 * 2**30, 3, 16, None),                       # fewer jobs than cores: nothing to say (3 start)
    (4, 16, None, 100, 4, None),                             # memory unknown: the cores alone
])
def test_workers_are_capped_by_cores_and_memory_and_a_cap_is_said(asked, cores, memory, jobs, expected, said):
    from taot.compile.engine import _worker_count
    notices = []
    assert _worker_count(asked, jobs, notices.append, cores=cores, memory=memory) == expected
    assert (said in notices[0]) if said else not notices, notices
