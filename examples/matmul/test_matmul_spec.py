# No GPU needed: the tiles that configs.py lists (and aot.py / jit.py launch) are exactly the ones
# matmul.toml and matmul_fp8.toml compile, for the tuned and the generic kernel and each type;
# pick_config only returns those; the host-side layout rule agrees with the specs' alignments and
# stride hints.
import sys
from pathlib import Path

import pytest

import configs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))        # the taot front end of this checkout


def spec_variants(spec, kernel):
    pytest.importorskip("triton", reason="the taot front end imports the kernel with Triton")
    from taot.spec.validate import load_spec
    return load_spec(HERE / spec).variants[kernel]


def key(config):
    return tuple(sorted(config.items()))


@pytest.mark.parametrize("spec, name, type_arg, kind", [
    ("matmul.toml", "matmul", "a_ptr", "fp16"),
    ("matmul_fp8.toml", "matmul_fp8", "c_ptr", "fp8"),
])
def test_configs_match_the_spec(spec, name, type_arg, kind):
    for generic in (False, True):
        found = {}
        for variant in spec_variants(spec, name + ("_generic" if generic else "")):
            bindings = {b.name: b for b in variant.bindings}
            found.setdefault(bindings[type_arg].type, []).append(key(variant.config))
            # the alignments and stride hints are what configs.tuned_layout promises
            unit = ("stride_ak", "stride_bk" if kind == "fp8" else "stride_bn", "stride_cn")
            sixteen = ("N", "K", "stride_am", "stride_bn" if kind == "fp8" else "stride_bk", "stride_cm")
            assert all(bindings[arg].hint == (0 if generic else 1) for arg in unit), variant.id
            assert all(bindings[arg].hint == (0 if generic else 16) for arg in sixteen), variant.id
            assert all(bindings[arg].align == (0 if generic else 16) for arg in ("a_ptr", "b_ptr", "c_ptr")), variant.id
        assert sorted(found) == ["bf16", "fp16"]
        for compiled in found.values():
            if generic:
                assert compiled == [key(configs.GENERIC[kind])]
            else:
                assert sorted(compiled) == sorted(map(key, configs.TUNED[kind]))


def test_pick_config_returns_compiled_configs():
    for kind, fast_accum in (("fp16", False), ("bf16", False), ("fp8", False), ("fp8", True)):
        for M in (1, 7, 16, 17, 64, 100, 128, 1000, 4096, 8192):
            for N in (16, 1024, 4096, 8192):
                config = configs.pick_config(M, N, 4096, kind, fast_accum=fast_accum)
                assert config in configs.TUNED[kind] and config not in configs.NOT_PICKED, (kind, M, N, config)
                assert config["BLOCK_M"] <= max(16, configs.next_power_of_2(M))
                if kind == "fp8" and config["BLOCK_M"] >= 64:
                    assert config["FAST_ACCUM"] == fast_accum
        assert configs.pick_config(10, 10, 10, kind, tuned=False) == configs.GENERIC[kind]
    assert configs.pick_config(8192, 8192, 8192, "fp8", fast_accum=True)["BLOCK_N"] == 256
    assert configs.pick_config(8192, 8192, 8192, "fp8")["BLOCK_N"] == 128
    assert configs.pick_config(8192, 8192, 8192, "fp16")["BLOCK_N"] == 256
    assert configs.pick_config(16, 4096, 4096, "bf16")["BLOCK_M"] == 16


def test_generic_kernel_choice():
    assert not configs.uses_generic_kernel(configs.TUNED["fp8"][0], "fp8", tuned=True)
    assert configs.uses_generic_kernel(configs.TUNED["fp8"][0], "fp8", tuned=False)
    assert configs.uses_generic_kernel(configs.GENERIC["bf16"], "bf16", tuned=True)


def test_tuned_layout():
    row_major = dict(a_strides=(64, 1), b_strides=(48, 1), c_strides=(48, 1))
    assert configs.tuned_layout(0, 16, 32, 48, 64, fp8=False, **row_major)
    assert not configs.tuned_layout(0, 16, 32, 48, 64, fp8=True, **row_major)        # fp8 needs b column-major
    assert configs.tuned_layout(0, 16, 32, 48, 64, (64, 1), (1, 64), (48, 1), fp8=True)
    assert not configs.tuned_layout(2, 16, 32, 48, 64, fp8=False, **row_major)       # misaligned a
    assert not configs.tuned_layout(0, 16, 32, 40, 64, (64, 1), (40, 1), (40, 1), fp8=False)  # N % 16
