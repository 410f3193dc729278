# softmax(x) and matmul(a, b) through the kernels of gluon_kernels.py with Triton's JIT
# (kernel[grid](...)): the baseline the taot module is compared with. Same host code as aot.py, same
# grids as the spec: cdiv(n_rows, ROWS) (ROWS from the kernel's @triton.heuristics) and
# cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N). Where the module takes plain tensors for the matmul's
# descriptor arguments, Triton's launch takes Gluon TensorDescriptor objects with the config's blocks
# and the default NVMMA shared layout of each block (what the spec compiles).
import triton
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

import aot
from gluon_kernels import matmul_kernel, softmax_kernel


def softmax_launch(out, x, n_rows, n_cols, x_row_stride, out_row_stride):
    softmax_kernel[lambda meta: (triton.cdiv(n_rows, meta["ROWS"]),)](out, x, n_rows, n_cols, x_row_stride,
                                                                       out_row_stride)


def softmax_jit(x, out=None):
    """aot.softmax through Triton's JIT (the first call of a config compiles it)."""
    return aot.softmax(x, out, launch=softmax_launch)


def gluon_dtype(torch_dtype):
    import torch
    return {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}[torch_dtype]


def descriptor(t, block):
    """A Gluon host-side descriptor over the whole of `t`, loading and storing `block`, in the default
    NVMMA shared layout of that block."""
    layout = gl.NVMMASharedLayout.get_default_for(block, gluon_dtype(t.dtype))
    return TensorDescriptor.from_tensor(t, block, layout)


def matmul_launch(a, b, c, M, N, K, **config):
    a_desc = descriptor(a, [config["BLOCK_M"], config["BLOCK_K"]])
    b_desc = descriptor(b, [config["BLOCK_K"], config["BLOCK_N"]])
    c_desc = descriptor(c, [config["BLOCK_M"], config["BLOCK_N"]])
    grid = (triton.cdiv(M, config["BLOCK_M"]) * triton.cdiv(N, config["BLOCK_N"]),)
    matmul_kernel[grid](a_desc, b_desc, c_desc, M, N, K, **config)


def matmul_jit(a, b, out=None, config=None):
    """aot.matmul through Triton's JIT."""
    return aot.matmul(a, b, out, config, launch=matmul_launch)
