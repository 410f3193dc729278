# No GPU needed: the config a launch without one gets. softmax.toml compiles the kernel's
# @triton.heuristics into rule programs (as manifest.json holds them and the runtime runs them) and
# `requires = ["n_cols <= BLOCK_SIZE"]`; for every n_cols from 1 to the largest block, and row counts
# on both sides of every multi-row threshold, the programs give Triton's own result, the policy the
# README states, a config the spec compiled for every dtype and specialization, and one the rules
# accept; every compiled config is chosen for some call; a longer row gets a block that was not
# compiled (example_support.check_row_example_spec).
from pathlib import Path

from example_support import check_row_example_spec, load_kernel_spec


def test_the_spec_chooses_a_compiled_config_that_holds_the_row_for_every_row_length():
    spec = Path(__file__).resolve().parent / "softmax.toml"
    load_kernel_spec(spec, "softmax")                  # skips without Triton, before the kernel's import
    from softmax_kernels import softmax_kernel
    check_row_example_spec(spec, "softmax", softmax_kernel, min_block=128, max_cols=32768, config_count=13)
