# matmul(a, b) through the taot libraries built from matmul.toml (fp16, bf16: module `matmul`) and
# matmul_fp8.toml (fp8 e4m3: module `matmul_fp8`) (`taot build SPEC -o OUT --python`, then CMake; the
# modules on PYTHONPATH): the host side of the example. jit.py runs the same code with Triton's JIT
# launch in place of the modules. Needs torch; no Triton at run time.
import torch

from configs import pick_config, tuned_layout, uses_generic_kernel

FP8_DTYPE = torch.float8_e4m3fn
KINDS = {torch.float16: "fp16", torch.bfloat16: "bf16", FP8_DTYPE: "fp8"}
INT32_MAX = 2**31 - 1


def module_launch(module):
    """The launch of a generated module: its tuned kernel (named like the library: matmul.matmul,
    matmul_fp8.matmul_fp8) or, with generic_kernel=True, its generic one (matmul.matmul_generic, ...);
    arguments (a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    **config), on torch's current stream; the grid comes from the spec."""
    tuned = getattr(module, module.__name__)
    generic = getattr(module, module.__name__ + "_generic")

    def launch(*args, generic_kernel=False, **config):
        (generic if generic_kernel else tuned)(*args, **config)
    return launch


def default_module(fp8):
    if fp8:
        import matmul_fp8 as module  # the generated module of matmul_fp8.toml
    else:
        import matmul as module  # the generated module of matmul.toml
    return module


def matmul(a, b, out=None, out_dtype=None, fast_accum=False, config=None, module=None, launch=None):
    """C = a @ b for a [M, K] and b [K, N], any strides: fp16 @ fp16 -> fp16, bf16 @ bf16 -> bf16, or
    fp8 e4m3 @ fp8 e4m3 -> out_dtype (bf16 by default, or fp16; unit scales); fp32 accumulation
    (fp8 with fast_accum: in the tensor cores' fp8 accumulator over the whole K loop, faster, less
    precise). The tuned kernel needs configs.tuned_layout (for fp8, b column-major: b = w.t() for
    w [N, K]); other layouts and shapes run the generic kernel.

    out: an optional [M, N] result tensor; config: a tile config of configs.py (configs.pick_config
    by default; it decides FAST_ACCUM then); module: the generated module (`import matmul` or
    `import matmul_fp8` by default); launch: a callable taking the kernel's arguments and config
    keywords, in place of the module (jit.py passes Triton's)."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: expected a [M, K] and b [K, N], got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype not in KINDS or b.dtype != a.dtype:
        raise TypeError(f"matmul: a and b must both be fp16, bf16 or float8_e4m3fn, got {a.dtype} and {b.dtype}")
    kind = KINDS[a.dtype]
    fp8 = kind == "fp8"
    if out_dtype is None:
        out_dtype = out.dtype if out is not None else torch.bfloat16 if fp8 else a.dtype
    if (out_dtype not in (torch.float16, torch.bfloat16)) if fp8 else out_dtype != a.dtype:
        raise TypeError(f"matmul: a {a.dtype} product is stored as {'fp16 or bf16' if fp8 else a.dtype}, "
                        f"not {out_dtype}")
    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty(M, N, dtype=out_dtype, device=a.device)
    elif out.shape != (M, N) or out.dtype != out_dtype:
        raise ValueError(f"matmul: out must be a {out_dtype} tensor of shape ({M}, {N})")
    for name, t in (("a", a), ("b", b), ("out", out)):
        if max((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride())) > INT32_MAX:
            raise ValueError(f"matmul: {name} spans more than 2^31 elements (the kernel uses 32-bit offsets)")
    if launch is None:
        launch = module_launch(module if module is not None else default_module(fp8))
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    tuned = tuned_layout(a.data_ptr(), b.data_ptr(), out.data_ptr(), N, K, a.stride(), b.stride(), out.stride(), fp8)
    config = dict(config or pick_config(M, N, K, kind, tuned, fast_accum))
    launch(a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1),
           generic_kernel=uses_generic_kernel(config, kind, tuned), **config)
    return out
