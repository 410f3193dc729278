"""The kernels of kernels.py launched through Triton's JIT the way their users launch them: grids as
lambdas or tuples, decorators doing their work at call time."""
import torch
import triton

import kernels


def num_sms():
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def matmul(a, b, c, activation=""):
    """Autotuned: the first call per (M, N, K, dtypes) times the pruned configs and keeps the fastest."""
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(N, meta["BLOCK_SIZE_N"]),)  # noqa: E731
    kernels.matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                                c.stride(1), ACTIVATION=activation)
    return kernels.matmul_kernel.best_config


def matmul_with_config(a, b, c, config, activation=""):
    """One config by hand, past the autotuner (its .fn is the @triton.jit function)."""
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, config.kwargs["BLOCK_SIZE_M"]) * triton.cdiv(N, config.kwargs["BLOCK_SIZE_N"]),)
    kernels.matmul_kernel.fn[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                   c.stride(0), c.stride(1), ACTIVATION=activation, **config.all_kwargs())


def rms_norm(x, weight, out, eps=1e-6):
    """@triton.heuristics picks BLOCK_SIZE, num_warps and HAS_WEIGHT from the call."""
    n_rows, n_cols = x.shape
    kernels.rms_norm_kernel[(n_rows,)](x, weight, out, x.stride(0), out.stride(0), n_cols, eps)


def bias_act(x, bias, out, activation):
    n = x.numel()
    kernels.bias_act_kernel[(triton.cdiv(n, 1024),)](x, bias, out, n, x.shape[-1], ACTIVATION=activation, BLOCK=1024)


def persistent_scale(x, out, scale, programs=None):
    n = x.numel()
    grid = (programs or min(num_sms(), triton.cdiv(n, 2048)),)
    kernels.persistent_scale_kernel[grid](x, out, n, scale, BLOCK=2048)


def layer_norm_fwd(x, y, w, b, eps=1e-5):
    n_rows, n_cols = x.shape
    block = max(256, triton.next_power_of_2(n_cols))
    kernels.layer_norm_fwd_kernel[(n_rows,)](x, y, w, b, x.stride(0), n_cols, eps, BLOCK_SIZE=block)


def affine(x, out, variant):
    n = x.numel()
    kernels.affine_kernel[(triton.cdiv(n, 1024),)](x, out, n, variant=variant, BLOCK=1024)


def softcap_clamp(x, out, softcap, lower):
    n = x.numel()
    kernels.softcap_clamp_kernel[(triton.cdiv(n, 1024),)](x, out, n, softcap, lower, BLOCK=1024)
