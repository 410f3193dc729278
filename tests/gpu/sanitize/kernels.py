# A kernel with a deliberate out-of-bounds store, for `taot sanitize`'s GPU test: the store is
# shifted by one element, so the last element's store lands one past the end of `out`, whatever the
# block size (an n that is a multiple of 128 keeps torch's 512-byte rounding from hiding it).
import triton
import triton.language as tl


@triton.jit
def oob_double_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets + 1, x * 2, mask=offsets < n)  # the bug: + 1 writes out[n]
