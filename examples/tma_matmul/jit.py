# tma_matmul(a, b) through the kernel of tma_matmul_kernels.py with Triton's JIT (kernel[grid](...)): the
# baseline the taot module is compared with. Same host code as aot.py, same config, same grid as the
# spec: min(NUM_SMS, cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)). Where the module takes plain tensors for the
# descriptor arguments, Triton's launch takes TensorDescriptor objects with the config's blocks.
import triton
from triton.tools.tensor_descriptor import TensorDescriptor

import aot
from tma_matmul_kernels import tma_matmul_kernel


def descriptor(t, block):
    """A host-side descriptor over the whole of `t` (zero padding), loading and storing `block`."""
    return TensorDescriptor(t, t.shape, t.stride(), block)


def jit_launch(a, w, c, M, N, K, NUM_SMS, **config):
    a_desc = descriptor(a, [config["BLOCK_M"], config["BLOCK_K"]])
    b_desc = descriptor(w, [config["BLOCK_N"], config["BLOCK_K"]])
    c_desc = descriptor(c, [config["BLOCK_M"], config["EPILOGUE_BLOCK_N"]])
    tiles = triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"])
    tma_matmul_kernel[(min(NUM_SMS, tiles),)](a_desc, b_desc, c_desc, M, N, K, NUM_SMS, **config)


def tma_matmul_jit(a, b, out=None, fast_accum=False, config=None):
    """aot.tma_matmul through Triton's JIT (the first call of a config compiles it)."""
    return aot.tma_matmul(a, b, out, fast_accum, config, launch=jit_launch)
