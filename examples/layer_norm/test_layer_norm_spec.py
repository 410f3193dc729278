# No GPU needed: the config a launch without one gets. layer_norm.toml compiles the kernel's
# @triton.heuristics into rule programs (as manifest.json holds them and the runtime runs them) and
# `requires = ["n_cols <= BLOCK_SIZE"]`; for every n_cols from 1 to the largest block, and row counts
# on both sides of every multi-row threshold, the programs give Triton's own result, the policy the
# README states, a config the spec compiled for every dtype and specialization, and one the rules
# accept; every compiled config is chosen for some call; a longer row gets a block that was not
# compiled (example_support.check_row_example_spec).
from pathlib import Path

from example_support import check_row_example_spec, load_kernel_spec


def test_the_spec_chooses_a_compiled_config_that_holds_the_row_for_every_row_length():
    spec = Path(__file__).resolve().parent / "layer_norm.toml"
    load_kernel_spec(spec, "layer_norm_fwd")           # skips without Triton, before the kernel's import
    from layer_norm_kernels import layer_norm_fwd_kernel
    check_row_example_spec(spec, "layer_norm_fwd", layer_norm_fwd_kernel, min_block=256, max_cols=16384,
                           config_count=10)
