# tma_matmul(a, b) through the taot library built from tma_matmul.toml (module `tma_matmul`: `taot build
# tma_matmul.toml -o OUT --python`, then CMake; OUT/build on PYTHONPATH): the host side of the example.
# The module takes plain torch tensors for the kernel's tensor descriptors (a descriptor over the whole
# tensor, with the block of the variant it launches). jit.py runs the same code with Triton's JIT
# launch in place of the module. Needs torch (imported at call time, so that the configs below can be
# read without it); no Triton at run time.
GROUP_SIZE_M = 8
MODES = ("bf16", "fp8", "fp8-fast")      # operand type and, for fp8, the accumulation mode


def config(block_n, block_k, stages, fast_accum=False):
    """A config in the spec's field order: 8 warps, C stored in two column halves (EPILOGUE_BLOCK_N =
    BLOCK_N / 2)."""
    return dict(BLOCK_M=128, BLOCK_N=block_n, BLOCK_K=block_k, GROUP_SIZE_M=GROUP_SIZE_M,
                EPILOGUE_BLOCK_N=block_n // 2, FAST_ACCUM=fast_accum, num_stages=stages, num_warps=8)


# The configs tma_matmul.toml compiles, per mode (shared memory per block on sm_90, from the manifest).
# BLOCK_K is 128 bytes of K: 64 bf16 or 128 fp8 elements.
CONFIGS = {
    "bf16": [config(256, 64, 3),                                        # 176 KiB
             config(256, 64, 4),                                        # 224 KiB
             config(128, 64, 4)],                                       # 144 KiB
    "fp8": [config(128, 128, 4),                                        # 144 KiB
            config(128, 128, 5)],                                       # 176 KiB
    "fp8-fast": [config(256, 128, 3, fast_accum=True),                  # 176 KiB
                 config(256, 128, 4, fast_accum=True),                  # 224 KiB
                 config(128, 128, 4, fast_accum=True)],                 # 144 KiB
}
INT32_MAX = 2**31 - 1
_num_sms = {}


def mode_of(dtype, fast_accum):
    """The CONFIGS key of a call: "bf16", or "fp8" / "fp8-fast" by the accumulation mode."""
    import torch
    if dtype == torch.bfloat16:
        return "bf16"
    return "fp8-fast" if fast_accum else "fp8"


def num_sms(device):
    """The SM count of a CUDA device (cached): the persistent grid's size."""
    import torch
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    if index not in _num_sms:
        _num_sms[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _num_sms[index]


def pick_config(mode, M, N, sms):
    """The config of a call when none is given: 128 x 256 tiles (4 stages) when they give every SM
    at least one tile, else 128 x 128 tiles (4 stages); fp8 without fast accumulation has only
    128 x 128 tiles (a second accumulator per 128 x 256 tile would spill).
    The GPU tests print every config's throughput with -s: the [tma matmul] lines."""
    wide = [c for c in CONFIGS[mode] if c["BLOCK_N"] == 256 and c["num_stages"] == 4]
    narrow = [c for c in CONFIGS[mode] if c["BLOCK_N"] == 128 and c["num_stages"] == 4]
    if wide and -(-M // 128) * -(-N // 256) >= sms:
        return wide[0]
    return narrow[0]


def module_launch(a, w, c, M, N, K, NUM_SMS, **config):
    """The generated module's kernel `tma_matmul` (grid min(NUM_SMS, tiles), from the spec), on torch's
    current stream. The module encodes a descriptor for each of a, w and c with the variant's block."""
    import tma_matmul as module  # the generated module of tma_matmul.toml
    module.tma_matmul(a, w, c, M, N, K, NUM_SMS, **config)


def tma_matmul(a, b, out=None, fast_accum=False, config=None, launch=None):
    """C = a @ b for a [M, K] and b [K, N], both bf16 or both fp8 e4m3 (unit scales); fp32
    accumulation, C bf16 (fp8 with fast_accum: in the tensor cores' fp8 accumulator over the whole K
    loop, faster, less precise). The kernel reads B K-major: b = w.t() for a contiguous w [N, K]
    (the layout of a linear layer's weight and of torch._scaled_mm's second operand); a row-major;
    other layouts are copied. N and K must be multiples of 16 (TMA row pitches; the spec's hint);
    data pointers 16-byte aligned (fresh torch tensors are). out: an optional contiguous bf16 [M, N]
    result; config: one of CONFIGS[mode] (pick_config by default); launch: a callable taking the
    kernel's arguments (a, w, c, M, N, K, NUM_SMS) and config keywords in place of the module (jit.py
    passes Triton's)."""
    import torch
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"tma_matmul: expected a [M, K] and b [K, N], got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype not in (torch.bfloat16, torch.float8_e4m3fn) or b.dtype != a.dtype:
        raise TypeError(f"tma_matmul: a and b must both be bf16 or both float8_e4m3fn, got {a.dtype} and {b.dtype}")
    M, K = a.shape
    N = b.shape[1]
    if N % 16 or K % 16:
        raise ValueError(f"tma_matmul: N and K must be multiples of 16, got N = {N}, K = {K}")
    if max(M, N, K) > INT32_MAX:
        raise ValueError("tma_matmul: a dimension is 2^31 or more (the kernel takes M, N, K as i32)")
    a, w = a.contiguous(), b.t().contiguous()                 # w [N, K]: b K-major
    if out is None:
        out = torch.empty(M, N, dtype=torch.bfloat16, device=a.device)
    elif out.shape != (M, N) or out.dtype != torch.bfloat16 or not out.is_contiguous():
        raise ValueError(f"tma_matmul: out must be a contiguous bf16 tensor of shape ({M}, {N})")
    for name, t in (("a", a), ("b", w), ("out", out)):
        if t.data_ptr() % 16:
            raise ValueError(f"tma_matmul: {name} is not 16-byte aligned (TMA needs 16-byte aligned tensors)")
    if M == 0 or N == 0:
        return out
    if K == 0:
        return out.zero_()
    sms = num_sms(a.device)
    config = dict(config or pick_config(mode_of(a.dtype, fast_accum), M, N, sms))
    (launch or module_launch)(a, w, out, M, N, K, sms, **config)
    return out
