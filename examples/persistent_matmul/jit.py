# persistent_matmul(a, b) through the kernel of persistent_matmul_kernels.py with Triton's JIT
# (kernel[grid](...)): the baseline the taot module is compared with. Same host code as aot.py, same
# config, same grid as the spec: min(NUM_SMS, cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)).
import torch
import triton

import aot
from persistent_matmul_kernels import persistent_matmul_kernel


def _torch_allocator(size, alignment, stream):
    """Global scratch for the device-side tensor descriptors under the JIT (taot allocates its own)."""
    return torch.empty(size, dtype=torch.int8, device="cuda")


def jit_launch(a, b, c, M, N, K, NUM_SMS, **config):
    triton.set_allocator(_torch_allocator)
    tiles = triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"])
    persistent_matmul_kernel[(min(NUM_SMS, tiles),)](a, b, c, M, N, K, NUM_SMS, **config)


def persistent_matmul_jit(a, b, out=None, config=None):
    """aot.persistent_matmul through Triton's JIT (the first call of a config compiles it)."""
    return aot.persistent_matmul(a, b, out, config, launch=jit_launch)
