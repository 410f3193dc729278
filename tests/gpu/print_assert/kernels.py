# Kernels of the print/assert GPU test: one prints its input with tl.device_print, one checks it
# with tl.device_assert (kept only in debug builds) and adds one.
import triton
import triton.language as tl


@triton.jit
def show_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n, other=0)
    tl.device_print("taot-print x=", x)


@triton.jit
def checked_kernel(x_ptr, out_ptr, n, limit, BLOCK: tl.constexpr):
    tl.static_print("checked_kernel BLOCK", BLOCK)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0)
    tl.device_assert(x < limit, "x reached limit")
    tl.store(out_ptr + offsets, x + 1, mask=mask)
