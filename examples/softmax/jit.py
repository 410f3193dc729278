# softmax(x) through the kernel of softmax_kernels.py with Triton's JIT (kernel[grid](...)): the
# baseline the taot library is compared with. The host code is aot.py's, with this launch in place of
# the generated module's: same arguments, same config (configs.py), same grid as softmax.toml.
import triton

import aot
from softmax_kernels import softmax_kernel


def jit_launch(x, y, n_rows, n_cols, x_row_stride, y_row_stride, **config):
    """softmax_kernel[grid](...) with the spec's grid, cdiv(n_rows, BLOCK_ROWS)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    softmax_kernel[grid](x, y, n_rows, n_cols, x_row_stride, y_row_stride, **config)


def softmax_jit(x, dim=-1, out=None, config=None):
    """aot.softmax through Triton's JIT (the first call of a config compiles it)."""
    return aot.softmax(x, dim, out, config, launch=jit_launch)
