# fused_moe_tune.toml over the whole of vLLM's NVIDIA MoE tuning grid (benchmark_moe.py's
# get_configs_compute_bound): BLOCK_SIZE_M {16, 32, 64, 128, 256} x BLOCK_SIZE_N {32, 64, 128, 256} x
# BLOCK_SIZE_K {64, 128, 256} x GROUP_SIZE_M {1, 16, 32, 64} x num_warps {4, 8} x num_stages {2, 3, 4,
# 5} = 1920 configs, one variant each, for the full-search figure (scripts/gpu.sh measure tune-full):
# build the library, then tune it over the bench file's 18 batch sizes on every GPU of the host.
# Same kernel, arguments, bench file and library name as fused_moe_tune.toml; configs that need more
# shared memory than the device gives a block compile and are filtered by the tuner before timing.
import tomllib
from pathlib import Path


def taot_spec():
    spec = tomllib.loads(Path(__file__).with_name("fused_moe_tune.toml").read_text())
    (kernel,) = spec["kernel"]
    kernel["args"].update(BLOCK_SIZE_M={"constexpr": [16, 32, 64, 128, 256]},
                          BLOCK_SIZE_N={"constexpr": [32, 64, 128, 256]},
                          BLOCK_SIZE_K={"constexpr": [64, 128, 256]},
                          GROUP_SIZE_M={"constexpr": [1, 16, 32, 64]})
    kernel["options"] = {"num_warps": [4, 8], "num_stages": [2, 3, 4, 5]}
    kernel["default"]["GROUP_SIZE_M"] = 1
    return spec
