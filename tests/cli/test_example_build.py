"""Builds the vector_add example library from scratch with the real taot binary, compiles the
generated sources with -Wall -Wextra -Werror, and checks that a second build recompiles nothing."""
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "vector_add" / "vector_add.toml"


def run(*args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=1800, **kwargs)


@pytest.fixture(scope="module")
def built(tmp_path_factory, taot_bin):
    root = tmp_path_factory.mktemp("vector_add")
    generated, build = root / "generated", root / "build"
    first = run(taot_bin, "build", SPEC, "-o", generated, "-j", str(os.cpu_count() or 2))
    assert first.returncode == 0, first.stderr[-4000:]
    configure = run("cmake", "-S", REPO / "examples" / "vector_add", "-B", build, "-G", "Ninja",
                    f"-DTAOT_GENERATED_DIR={generated}")
    assert configure.returncode == 0, configure.stdout[-4000:] + configure.stderr[-4000:]
    compiled = run("cmake", "--build", build)
    assert compiled.returncode == 0, compiled.stdout[-6000:] + compiled.stderr[-2000:]
    return {"generated": generated, "build": build, "first": first, "compiled": compiled}


def test_generated_library_compiles_with_strict_warnings(built):
    assert "-Werror" in (built["build"] / "build.ninja").read_text()
    assert (built["build"] / "vector_add_example").exists()
    for name in ("vector_add.h", "vector_add_c.h", "vector_add.cpp", "vector_add_tables.cpp", "vector_add_cubins.cpp", "CMakeLists.txt"):
        assert (built["generated"] / name).exists(), name


def test_every_variant_was_compiled_for_both_targets(built):
    import json
    manifest = json.loads((built["generated"] / "manifest.json").read_text())
    variants = manifest["kernels"][0]["variants"]
    assert len(variants) == 3 * 8 * 2 * 2 * 2
    assert {image["target"] for v in variants for image in v["images"]} == {"sm_80", "sm_90"}


def test_second_build_recompiles_and_rewrites_nothing(built, taot_bin):
    generated = built["generated"]
    # Every file but the lock, which each build takes and writes its name into.
    before = {p: p.stat().st_mtime_ns for p in generated.rglob("*") if p.is_file() and p.name != ".taot.lock"}
    again = run(taot_bin, "build", SPEC, "-o", generated)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "compiled 0," in again.stderr, again.stderr[-2000:]
    after = {p: p.stat().st_mtime_ns for p in generated.rglob("*") if p.is_file() and p.name != ".taot.lock"}
    assert after == before, [str(p) for p in after if before.get(p) != after[p]]
    rebuilt = run("cmake", "--build", built["build"])
    assert rebuilt.returncode == 0
    assert "no work to do" in rebuilt.stdout, rebuilt.stdout


def test_launch_feature_kernels_carry_their_launch_needs(run_taot, tmp_path):
    """The GPU suite's launch-feature kernels compile here, and the manifest records what their
    launches need: global scratch, a cluster, PDL, a cooperative grid."""
    spec = REPO / "tests" / "gpu" / "launch_features" / "launch_features.toml"
    result = run_taot("build", spec, "-o", tmp_path / "out", "--quiet")
    assert result.returncode == 0, result.stdout + result.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    images = {kernel["name"]: kernel["variants"][0]["images"][0] for kernel in manifest["kernels"]}
    assert images["descriptor_scale"]["global_scratch_size"] == 256
    assert images["descriptor_scale"]["global_scratch_align"] == 128
    assert images["add_one_cluster"]["num_ctas"] == 2
    assert images["add_one_cluster"]["cluster_dims"] == [2, 1, 1]
    assert images["add_one_pdl"]["launch_pdl"] is True
    assert images["grid_barrier"]["launch_cooperative_grid"] is True
    assert images["grid_barrier"]["num_warps"] == 1


@pytest.mark.parametrize("spec", ["softmax/softmax.toml", "layer_norm/layer_norm.toml", "matmul/matmul.toml",
                                  "matmul/matmul_fp8.toml", "fused_moe/fused_moe.toml",
                                  "persistent_matmul/persistent_matmul.toml", "tma_matmul/tma_matmul.toml"])
def test_every_example_spec_compiles(run_taot, tmp_path, spec):
    """Each example's spec compiles for its targets here, without a GPU (the GPU suite runs them)."""
    result = run_taot("build", REPO / "examples" / spec, "-o", tmp_path / "out", "-j", os.cpu_count() or 2, "--quiet",
                      timeout=1500)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert all(kernel["variants"] for kernel in manifest["kernels"]), spec
