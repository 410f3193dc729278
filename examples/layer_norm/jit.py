# layer_norm(x, weight, bias, eps) through the kernel of layer_norm_kernels.py with Triton's JIT
# (kernel[grid](...)): the baseline the taot library is compared with. The host code is aot.py's,
# with this launch in place of the generated module's: same arguments, same grid as layer_norm.toml,
# and the same config (the kernel's @triton.heuristics, which Triton evaluates here and taot's
# runtime in the library).
import triton

import aot
from layer_norm_kernels import layer_norm_fwd_kernel


def jit_launch(x, y, w, b, mean, rstd, n_rows, n_cols, x_row_stride, y_row_stride, eps, **config):
    """layer_norm_fwd_kernel[grid](...) with the spec's grid, cdiv(n_rows, BLOCK_ROWS). Without
    config keywords the kernel's heuristics choose; with them (all three: BLOCK_SIZE, BLOCK_ROWS,
    num_warps) the @triton.jit function inside the heuristics runs that config."""
    def grid(meta):
        return (triton.cdiv(n_rows, meta["BLOCK_ROWS"]),)
    kernel = layer_norm_fwd_kernel.fn if config else layer_norm_fwd_kernel   # heuristics override keywords
    kernel[grid](x, y, w, b, mean, rstd, n_rows, n_cols, x_row_stride, y_row_stride, eps, **config)


def layer_norm_jit(x, weight=None, bias=None, eps=1e-5, config=None):
    """aot.layer_norm through Triton's JIT (the first call of a config compiles it)."""
    return aot.layer_norm(x, weight, bias, eps, config, launch=jit_launch)
