# matmul(a, b) through the kernel of matmul_kernels.py with Triton's JIT (kernel[grid](...)): the
# baseline the taot libraries are compared with. The host code is aot.py's, with this launch in place
# of the generated modules': same arguments, same config (configs.py), same grid as the specs.
import triton

import aot
from matmul_kernels import matmul_kernel


def jit_launch(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
               generic_kernel=False, **config):
    """matmul_kernel[grid](...) with the specs' grid, cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N). The JIT
    specializes on the arguments itself, so the tuned and generic kernels are the same function."""
    grid = (triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"]),)
    matmul_kernel[grid](a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, **config)


def matmul_jit(a, b, out=None, out_dtype=None, fast_accum=False, config=None):
    """aot.matmul through Triton's JIT (the first call of a config compiles it)."""
    return aot.matmul(a, b, out, out_dtype, fast_accum, config, launch=jit_launch)
