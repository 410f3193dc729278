# softmax(x) through the kernel of softmax_kernels.py with Triton's JIT (kernel[grid](...)): the
# baseline the taot library is compared with. The host code is aot.py's, with this launch in place of
# the generated module's: same arguments, same grid as softmax.toml, and the same config (the
# kernel's @triton.heuristics, which Triton evaluates here and taot's runtime in the library).
import triton

import aot
from softmax_kernels import softmax_kernel


def jit_launch(x, y, n_rows, n_cols, x_row_stride, y_row_stride, **config):
    """softmax_kernel[grid](...) with the spec's grid, cdiv(n_rows, BLOCK_ROWS). Without config
    keywords the kernel's heuristics choose; with them (all three: BLOCK_SIZE, BLOCK_ROWS,
    num_warps) the @triton.jit function inside the heuristics runs that config."""
    def grid(meta):
        return (triton.cdiv(n_rows, meta["BLOCK_ROWS"]),)
    kernel = softmax_kernel.fn if config else softmax_kernel   # Triton's heuristics override keywords
    kernel[grid](x, y, n_rows, n_cols, x_row_stride, y_row_stride, **config)


def softmax_jit(x, dim=-1, out=None, config=None):
    """aot.softmax through Triton's JIT (the first call of a config compiles it)."""
    return aot.softmax(x, dim, out, config, launch=jit_launch)
