# No GPU needed: the configs that aot.py lists (and aot.py / jit.py launch) are exactly the ones
# tma_matmul.toml compiles, per operand type and fp8 accumulation mode; every descriptor's block is the
# one the kernel loads or stores (and the one jit.py gives Triton); pick_config only returns compiled
# configs; and every variant, compiled for sm_90, fits an H100 block's shared memory with 8 warps, no
# global scratch and a TMA map per descriptor.
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aot

HERE = Path(__file__).resolve().parent
PYTHON_FRONT_END = HERE.parents[1] / "python"
sys.path.insert(0, str(PYTHON_FRONT_END))                  # the taot front end of this checkout
SPEC = HERE / "tma_matmul.toml"
KERNEL = "tma_matmul"
H100_BLOCK_SHARED = 232448 - 1024                          # opt-in limit minus Triton's 1 KiB of static shared memory


def spec_variants():
    pytest.importorskip("triton", reason="the taot front end imports the kernel with Triton")
    from taot.spec.validate import load_spec
    spec = load_spec(SPEC)
    assert list(spec.variants) == [KERNEL]
    return spec.variants[KERNEL]


def mode(variant):
    a_type = variant.bindings[0].type
    return "bf16" if a_type == "bf16" else "fp8-fast" if variant.config["FAST_ACCUM"] else "fp8"


def key(config):
    return tuple(sorted(config.items()))


def test_configs_match_the_spec():
    found = {}
    for variant in spec_variants():
        found.setdefault(mode(variant), []).append(key(variant.config))
    assert sorted(found) == sorted(aot.MODES)
    for name in aot.MODES:
        assert sorted(found[name]) == sorted(key(c) for c in aot.CONFIGS[name]), name


def test_descriptor_blocks_and_layout_promises():
    for variant in spec_variants():
        config, args = variant.config, {b.name: b for b in variant.bindings}
        assert args["a_desc"].kind == args["b_desc"].kind == args["c_desc"].kind == "tensordesc"
        assert args["a_desc"].type == args["b_desc"].type in ("bf16", "fp8e4nv")
        assert args["a_desc"].block == (config["BLOCK_M"], config["BLOCK_K"]), variant.id
        assert args["b_desc"].block == (config["BLOCK_N"], config["BLOCK_K"]), variant.id
        # one 128-byte swizzle row of K per load
        assert config["BLOCK_K"] * (2 if args["a_desc"].type == "bf16" else 1) == 128, variant.id
        # C stored in two column halves
        assert args["c_desc"].type == "bf16", variant.id
        assert args["c_desc"].block == (config["BLOCK_M"], config["BLOCK_N"] // 2), variant.id
        # what aot.tma_matmul checks: N and K multiples of 16, M any value
        assert (args["M"].hint, args["N"].hint, args["K"].hint, args["NUM_SMS"].hint) == (0, 16, 16, 0), variant.id


def test_pick_config_returns_compiled_configs():
    for name in aot.MODES:
        for sms in (132, 114, 78):
            for M in (1, 16, 100, 128, 1000, 4096, 8192):
                for N in (16, 528, 4096, 8192):
                    assert aot.pick_config(name, M, N, sms) in aot.CONFIGS[name], (name, M, N, sms)
    assert aot.pick_config("bf16", 8192, 8192, 132)["BLOCK_N"] == 256
    assert aot.pick_config("fp8-fast", 8192, 8192, 132)["BLOCK_N"] == 256
    assert aot.pick_config("fp8", 8192, 8192, 132)["BLOCK_N"] == 128            # the only precise tile
    assert aot.pick_config("bf16", 16, 4096, 132)["BLOCK_N"] == 128             # 16 tiles of 128 x 256: too few


def test_every_variant_fits_an_h100_block(tmp_path):
    """Compiles the spec for sm_90 (taot's front end; a few seconds) and reads the manifest: shared
    memory per block within an H100's, 8 warps, no global scratch, and one TMA map entry
    (tensordesc_meta) per host descriptor argument (A, B and C)."""
    pytest.importorskip("triton", reason="compiling the spec needs Triton")
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(PYTHON_FRONT_END),
                                                                            os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-m", "taot", "compile", str(SPEC), "-o", str(tmp_path), "--quiet",
                             "-j", str(os.cpu_count() or 2)], capture_output=True, text=True, env=environment,
                            timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert [kernel["name"] for kernel in manifest["kernels"]] == [KERNEL]
    variants = manifest["kernels"][0]["variants"]
    assert len(variants) == sum(len(configs) for configs in aot.CONFIGS.values())
    for variant in variants:
        image = variant["images"][0]
        assert image["shared"] <= H100_BLOCK_SHARED, (variant["id"], image["shared"])
        assert image["num_warps"] == 8, (variant["id"], image["num_warps"])
        assert image["global_scratch_size"] == 0, variant["id"]
        assert len(image["tensordesc_meta"]) == 3, variant["id"]
