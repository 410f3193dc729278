# No GPU needed: fused_moe_kernel's tuned tables. fused_moe.toml keys them by the launch-only token
# count M and bakes one file per device from tuned_configs/; each file is named and laid out as vLLM
# names and writes them, has vLLM's keys, and maps every M to a tile config the spec compiled for
# every precision and (top_k, MUL_ROUTED_WEIGHT), small tiles for few tokens.
import json
import re
import tomllib
from pathlib import Path

from example_support import load_kernel_spec

HERE = Path(__file__).resolve().parent
SPEC = HERE / "fused_moe.toml"
KEYS = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096]   # vLLM's
TILE_FIELDS = ["BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages"]
DEVICES = ["NVIDIA_H100_80GB_HBM3", "NVIDIA_H200"]     # torch.cuda.get_device_name(), spaces as _


def spec_tables():
    """The files the spec's `tuning` lists for fused_moe_kernel, as paths."""
    raw = tomllib.loads(SPEC.read_text())
    kernel = next(kernel for kernel in raw["kernel"] if kernel["name"] == "fused_moe_kernel")
    return [SPEC.parent / name for name in kernel["tuning"]]


def test_the_kernel_is_tuned_by_the_token_count():
    kernel, _ = load_kernel_spec(SPEC, "fused_moe_kernel")
    assert kernel.tuning_key == ("M",)
    launch_only = [(arg.name, arg.choices) for arg in kernel.args if arg.launch_only]
    assert launch_only == [("M", ("i32",))]
    assert [path.name for path in spec_tables()] == [f"E=128,N=768,device_name={device}.json" for device in DEVICES]


def test_tables_are_vllm_files_of_compiled_tiles():
    _, variants = load_kernel_spec(SPEC, "fused_moe_kernel")
    # each tile config, with the (precision, top_k, MUL_ROUTED_WEIGHT) it is compiled for
    compiled = {}
    for variant in variants:
        tile = tuple(variant.config[field] for field in TILE_FIELDS)
        layer_fields = (variant.config["use_fp8_w8a8"], variant.config["top_k"], variant.config["MUL_ROUTED_WEIGHT"])
        compiled.setdefault(tile, set()).add(layer_fields)
    every = set.union(*compiled.values())
    assert len(every) == 10 and len(compiled) == 12
    for path in spec_tables():
        assert re.fullmatch(r"E=\d+,N=\d+,device_name=[A-Za-z0-9_]+\.json", path.name)
        text = path.read_text()
        table = json.loads(text)
        assert text == json.dumps(table, indent=4) + "\n", f"{path.name}: not laid out as vLLM writes its files"
        assert [int(key) for key in table] == KEYS, path.name
        block_m = []
        for key, entry in table.items():
            assert list(entry) == TILE_FIELDS, f"{path.name} [{key}]: fields {list(entry)}"
            tile = tuple(entry[field] for field in TILE_FIELDS)
            assert compiled.get(tile) == every, f"{path.name} [{key}]: {entry} is not compiled for every layer GEMM"
            block_m.append(entry["BLOCK_SIZE_M"])
        assert block_m == sorted(block_m) and block_m[0] == 16 and block_m[-1] == 64, \
            f"{path.name}: BLOCK_SIZE_M by M {block_m}: small tiles for few tokens"


def test_nearest_key_rule_on_the_tables():
    """vLLM's rule as the GPU test applies it: the nearest key, the smaller on a tie; past the last
    key the last entry. Each file changes tile between some neighbouring keys, so a tie broken the
    wrong way picks another config."""
    for path in spec_tables():
        table = {int(key): value for key, value in json.loads(path.read_text()).items()}

        def nearest(M):
            return min(table, key=lambda key: abs(key - M))
        assert nearest(3) == 2 and nearest(20) == 16 and nearest(192) == 128 and nearest(8192) == 4096
        ties = [(low + high) // 2 for low, high in zip(KEYS, KEYS[1:])
                if (low + high) % 2 == 0 and table[low] != table[high]]
        assert len(ties) >= 4, f"{path.name}: few boundaries between configs"
