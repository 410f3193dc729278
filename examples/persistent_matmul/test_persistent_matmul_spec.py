# No GPU needed: the configs aot.py launches (CONFIGS, DEFAULT_CONFIG, pick_config's choices) are exactly
# those persistent_matmul.toml compiles, the spec's default is aot.py's, and its `where` leaves out the
# 128 x 256 tile with 4 stages that does not fit an H100 block.
import sys
from pathlib import Path

import pytest

import aot

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))  # the taot front end of this checkout


def spec():
    pytest.importorskip("triton", reason="the taot front end imports the kernel with Triton")
    from taot.spec.validate import load_spec
    return load_spec(HERE / "persistent_matmul.toml")


def key(config):
    return tuple(sorted(config.items()))


def test_aot_configs_are_the_compiled_ones():
    loaded = spec()
    (name,) = loaded.variants
    compiled = sorted({key(variant.config) for variant in loaded.variants[name]})
    assert compiled == sorted(key(config) for config in aot.CONFIGS)
    assert key(aot.config(256, 4)) not in compiled  # the tile that does not fit, left out by `where`


def test_the_default_and_every_pick_are_compiled():
    loaded = spec()
    (kernel,) = loaded.kernels
    default = {field.name: field.default for field in kernel.config}
    compiled = {key(c) for c in aot.CONFIGS}
    assert default == aot.DEFAULT_CONFIG and key(default) in compiled
    for sms in (1, 66, 114, 132):
        for m, n in ((128, 128), (4096, 4096), (8192, 8192), (300, 1000)):
            assert key(aot.pick_config(m, n, sms)) in compiled
