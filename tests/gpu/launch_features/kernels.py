"""Kernels that need more than a plain cuLaunchKernel: global scratch (device-side tensor
descriptors), clusters (num_ctas = 2), programmatic dependent launch and a cooperative grid.
Compiled by launch_features.toml for sm_90; tested by test_launch_features.py."""
import triton
import triton.language as tl


@triton.jit
def descriptor_scale_kernel(in_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """out = 2 * in for an (M, N) row-major fp16 matrix, through two tensor descriptors built on
    the device (each needs 128 bytes of global scratch per program on sm_90)."""
    source = tl.make_tensor_descriptor(in_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    target = tl.make_tensor_descriptor(out_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    row, col = tl.program_id(0) * BM, tl.program_id(1) * BN
    tile = source.load([row, col])
    target.store([row, col], tile * 2)


@triton.jit
def add_one_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x + 1. Compiled with num_ctas = 2 (each program a cluster of two blocks) and with
    launch_pdl (waits for the previous kernel's writes before reading, lets the next one start)."""
    tl.extra.cuda.gdc_wait()
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.extra.cuda.gdc_launch_dependents()
    tl.store(out_ptr + offsets, x + 1, mask=mask)


@triton.jit
def grid_barrier_kernel(counter_ptr, out_ptr, n_programs):
    """Every program arrives at a grid-wide barrier built from atomics, then records what it saw:
    only a cooperative launch guarantees all programs are resident, so this cannot hang."""
    tl.atomic_add(counter_ptr, 1)
    seen = tl.atomic_add(counter_ptr, 0)
    while seen < n_programs:
        seen = tl.atomic_add(counter_ptr, 0)
    tl.store(out_ptr + tl.program_id(0), seen)


@triton.jit
def host_descriptor_scale_kernel(in_desc, out_desc, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """out = 2 * in through two host-side tensor descriptors (TMA maps the runtime encodes at launch
    on sm_90): one program per BM x BN block of the M x N tensors (M and N only size the grid);
    loads past the tensor's edge read the padding, stores past it are dropped."""
    row, col = tl.program_id(0) * BM, tl.program_id(1) * BN
    tile = in_desc.load([row, col])
    out_desc.store([row, col], tile * 2)


@triton.jit
def host_descriptor_block_kernel(in_desc, out_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """Copies the descriptor's first BM x BN block, out-of-bounds elements included, to the dense
    BM x BN array at out_ptr: shows the padding (zeros, or NaN for padding="nan")."""
    tile = in_desc.load([0, 0])
    offsets = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    tl.store(out_ptr + offsets, tile)


@triton.jit
def host_descriptor_sum3d_kernel(in_desc, out_ptr, B0: tl.constexpr, B1: tl.constexpr, B2: tl.constexpr):
    """out[i, j] = sum over k of the descriptor's [0:B0, 0:B1, 0:B2] block, for a rank-3 descriptor
    (a transposed view of the tensor, so its strides are not the contiguous ones)."""
    tile = in_desc.load([0, 0, 0])
    total = tl.sum(tile.to(tl.float32), axis=2)
    offsets = tl.arange(0, B0)[:, None] * B1 + tl.arange(0, B1)[None, :]
    tl.store(out_ptr + offsets, total)
