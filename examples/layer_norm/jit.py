# layer_norm(x, weight, bias, eps) through the kernel of layer_norm_kernels.py with Triton's JIT
# (kernel[grid](...)): the baseline the taot library is compared with. The host code is aot.py's,
# with this launch in place of the generated module's: same arguments, same config (configs.py),
# same grid as layer_norm.toml.
import triton

import aot
from layer_norm_kernels import layer_norm_fwd_kernel


def jit_launch(x, y, w, b, mean, rstd, n_rows, n_cols, x_row_stride, y_row_stride, eps, **config):
    """layer_norm_fwd_kernel[grid](...) with the spec's grid, cdiv(n_rows, BLOCK_ROWS)."""
    grid = (triton.cdiv(n_rows, config["BLOCK_ROWS"]),)
    layer_norm_fwd_kernel[grid](x, y, w, b, mean, rstd, n_rows, n_cols, x_row_stride, y_row_stride, eps, **config)


def layer_norm_jit(x, weight=None, bias=None, eps=1e-5, config=None):
    """aot.layer_norm through Triton's JIT (the first call of a config compiles it)."""
    return aot.layer_norm(x, weight, bias, eps, config, launch=jit_launch)
