# Element-wise addition of two vectors: the smallest useful Triton kernel, compiled ahead of time by taot.
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    """output[i] = x[i] + y[i] for i < n_elements; each program handles BLOCK_SIZE elements."""
    program = tl.program_id(axis=0)
    offsets = program * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    in_bounds = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=in_bounds)
    y = tl.load(y_ptr + offsets, mask=in_bounds)
    tl.store(output_ptr + offsets, x + y, mask=in_bounds)
