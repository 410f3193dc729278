# out = alpha * x + y, written as Triton users write it: a helper from a module of theirs, an
# autotune decorator over BLOCK_SIZE.
import triton
import triton.language as tl

from helpers import combine


@triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 256}, num_warps=4),
                          triton.Config({"BLOCK_SIZE": 1024}, num_warps=8)], key=["n"])
@triton.jit
def axpy(x_ptr, y_ptr, out_ptr, alpha, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, combine(x, y, alpha), mask=mask)
