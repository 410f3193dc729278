# persistent_matmul(a, b) through the taot library built from persistent_matmul.toml (module
# `persistent_matmul`: `taot build persistent_matmul.toml -o OUT --python`, then CMake; OUT/build on
# PYTHONPATH): the host side of the example. jit.py runs the same code with Triton's JIT launch in
# place of the module. Needs torch (imported at call time, so that the configs below can be read
# without it); no Triton at run time.
GROUP_SIZE_M = 8


def config(block_n, stages):
    """A config in the spec's field order (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_SIZE_M, options)."""
    return dict(BLOCK_M=128, BLOCK_N=block_n, BLOCK_K=64, GROUP_SIZE_M=GROUP_SIZE_M, num_stages=stages, num_warps=8)


# The configs persistent_matmul.toml compiles (shared memory per block on sm_90, from the manifest).
CONFIGS = [config(128, 3),      # 128 KiB
           config(128, 4),      # 160 KiB (the spec's default)
           config(256, 3)]      # 208 KiB
DEFAULT_CONFIG = CONFIGS[1]
INT32_MAX = 2**31 - 1
_num_sms = {}


def num_sms(device):
    """The SM count of a CUDA device (cached): the persistent grid's size."""
    import torch
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    if index not in _num_sms:
        _num_sms[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _num_sms[index]


def pick_config(M, N, sms):
    """128 x 256 tiles when they give every SM one to four tiles, else 128 x 128 with 4 stages (on an
    H100: 128 x 256 was the faster at 4096^3, 512 tiles; 128 x 128 / 4 stages at 8192^3)."""
    return CONFIGS[2] if sms <= -(-M // 128) * -(-N // 256) <= 4 * sms else DEFAULT_CONFIG


def module_launch(a, b, c, M, N, K, NUM_SMS, **config):
    """The generated module's kernel (grid min(NUM_SMS, tiles), from the spec), on torch's current
    stream; taot allocates the kernel's global scratch (its device-side tensor descriptors)."""
    import persistent_matmul as module  # the generated module of persistent_matmul.toml
    module.persistent_matmul(a, b, c, M, N, K, NUM_SMS, **config)


def persistent_matmul(a, b, out=None, config=None, launch=None):
    """C = a @ b for bf16 a [M, K] and b [K, N] (contiguous row-major; other layouts are copied),
    fp32 accumulation, C bf16. N and K must be multiples of 16 (the spec's hint: TMA row pitches);
    data pointers 16-byte aligned (fresh torch tensors are). out: an optional contiguous bf16 [M, N]
    result; config: one of CONFIGS (pick_config by default); launch: a callable taking the kernel's
    arguments and config keywords in place of the module (jit.py passes Triton's)."""
    import torch
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"persistent_matmul: expected a [M, K] and b [K, N], got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != torch.bfloat16 or b.dtype != torch.bfloat16:
        raise TypeError(f"persistent_matmul: a and b must be bf16, got {a.dtype} and {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    if N % 16 or K % 16:
        raise ValueError(f"persistent_matmul: N and K must be multiples of 16, got N = {N}, K = {K}")
    if max(M * K, K * N, M * N) > INT32_MAX:
        raise ValueError("persistent_matmul: an operand has 2^31 elements or more (32-bit TMA coordinates)")
    a, b = a.contiguous(), b.contiguous()
    if out is None:
        out = torch.empty(M, N, dtype=torch.bfloat16, device=a.device)
    elif out.shape != (M, N) or out.dtype != torch.bfloat16 or not out.is_contiguous():
        raise ValueError(f"persistent_matmul: out must be a contiguous bf16 tensor of shape ({M}, {N})")
    for name, t in (("a", a), ("b", b), ("out", out)):
        if t.data_ptr() % 16:
            raise ValueError(f"persistent_matmul: {name} is not 16-byte aligned")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    sms = num_sms(a.device)
    config = dict(config or pick_config(M, N, sms))
    (launch or module_launch)(a, b, out, M, N, K, sms, **config)
    return out
