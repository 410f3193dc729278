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
