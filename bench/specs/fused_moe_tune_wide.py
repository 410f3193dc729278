# fused_moe_tune.toml over a wider part of vLLM's MoE tuning grid, for the figure of `taot tune` on
# one GPU against every GPU of the host (scripts/gpu.sh measure tune-scaling): the 64-config
# library tunes in about 25 s on one H200, of which starting the workers and checking the table are
# a fixed few seconds that more GPUs cannot shorten, so the speed-up of a real search shows on a
# larger one. Same kernel, arguments, bench file and library name (the bench file names it); only
# the grid differs: BLOCK_SIZE_M {16, 32, 64, 128} x BLOCK_SIZE_N {32, 64, 128, 256} x BLOCK_SIZE_K
# {64, 128, 256} x GROUP_SIZE_M {1, 16} x num_warps {4, 8} x num_stages {3, 4} = 384 configs, a fifth
# of vLLM's 1920 (it adds 256-row tiles, GROUP_SIZE_M 32 and 64, and 2 or 5 stages). Configs that
# need more shared memory than the device gives a block are filtered by the tuner before timing.
import tomllib
from pathlib import Path


def taot_spec():
    spec = tomllib.loads(Path(__file__).with_name("fused_moe_tune.toml").read_text())
    (kernel,) = spec["kernel"]
    kernel["args"].update(BLOCK_SIZE_M={"constexpr": [16, 32, 64, 128]}, BLOCK_SIZE_N={"constexpr": [32, 64, 128, 256]},
                          BLOCK_SIZE_K={"constexpr": [64, 128, 256]}, GROUP_SIZE_M={"constexpr": [1, 16]})
    kernel["options"] = {"num_warps": [4, 8], "num_stages": [3, 4]}
    kernel["default"]["GROUP_SIZE_M"] = 1
    return spec
