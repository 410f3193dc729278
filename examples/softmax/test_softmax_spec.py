# No GPU needed: the configs that configs.py lists (and aot.py / jit.py launch) are exactly the ones
# softmax.toml compiles, for each dtype and specialization, and pick_config only returns those.
import sys
from pathlib import Path

import pytest

import configs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))        # the taot front end of this checkout


def spec_variants():
    pytest.importorskip("triton", reason="the taot front end imports the kernel with Triton")
    from taot.spec import load_spec
    return load_spec(HERE / "softmax.toml").variants["softmax"]


def test_configs_match_the_spec():
    by_input = {}
    for variant in spec_variants():
        x = variant.bindings[0]
        by_input.setdefault((x.type, x.align), []).append(dict(variant.config))
    assert sorted(by_input) == sorted((t, a) for t in ("fp32", "fp16", "bf16") for a in (16, 0))
    for key, compiled in by_input.items():
        assert compiled == configs.CONFIGS, f"{key}: the spec compiles {compiled}, configs.py lists {configs.CONFIGS}"


def test_pick_config_returns_compiled_configs():
    for n_rows in (1, 100, 4096, 65536):
        for n_cols in list(range(1, 300)) + [1000, 1024, 1025, 4096, 5000, 16384, 20000, configs.MAX_COLS]:
            config = configs.pick_config(n_rows, n_cols)
            assert config in configs.CONFIGS, (n_rows, n_cols, config)
            assert config["BLOCK_SIZE"] >= n_cols
            for warps in configs.warp_choices(config["BLOCK_SIZE"] * config["BLOCK_ROWS"]):
                assert configs.pick_config(n_rows, n_cols, num_warps=warps) in configs.CONFIGS
    with pytest.raises(ValueError, match="longer than the largest compiled block"):
        configs.pick_config(1, configs.MAX_COLS + 1)
