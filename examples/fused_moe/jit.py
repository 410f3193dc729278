# The MoE layer through the kernels of moe_kernels.py with Triton's JIT (kernel[grid](...)): the
# baseline the AOT library is compared with, and the first thing the GPU tests check against
# reference.py. Every launch below has an AOT counterpart in fused_moe.toml with the same
# arguments, constexprs and options (README.md shows the mapping); keep the two in step. The GEMM's
# tile config comes, as in vLLM, from a tuned JSON file per device keyed by the token count M
# (tuned_configs/; the AOT library bakes the same files and its runtime does the lookup).
import functools
import json
from pathlib import Path

import torch
import triton.language as tl

from moe_kernels import (fused_moe_kernel, moe_align_count_kernel, moe_align_scan_kernel,
                         moe_align_scatter_kernel, moe_sum_kernel, per_token_group_quant_fp8_kernel,
                         silu_and_mul_kernel)

FP8_DTYPE = torch.float8_e4m3fn
ALIGN_BLOCK = 1024          # BLOCK_SIZE of moe_align_count / moe_align_scatter
ELEMENTWISE_BLOCK = 1024    # BLOCK_SIZE of silu_and_mul / moe_sum
QUANT_GROUP = 128           # GROUP_SIZE of per_token_group_quant_fp8 (= group_k of the GEMM)

# The GEMM tile configs fused_moe.toml compiles (BLOCK_SIZE_K 128, num_stages 3).
AOT_GEMM_CONFIGS = [
    dict(BLOCK_SIZE_M=m, BLOCK_SIZE_N=n, BLOCK_SIZE_K=128, GROUP_SIZE_M=g, num_warps=w, num_stages=3)
    for m in (16, 64) for n in (64, 128) for g in (1, 16) for w in (4, 8)
    if g == 1 or m == 64
]
TILE_FIELDS = tuple(AOT_GEMM_CONFIGS[0])
BLOCK_SIZES_M = sorted({config["BLOCK_SIZE_M"] for config in AOT_GEMM_CONFIGS})
# The tile a call gets on a device without a tuned file: fused_moe.toml's default config's.
DEFAULT_GEMM_CONFIG = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=16, num_warps=4,
                           num_stages=3)
AOT_TOP_K = (1, 2, 6, 8)    # the top_k values fused_moe.toml compiles

# Tuned GEMM configs in vLLM's format, named as vLLM names them, for the example's model shape
# (E = 128 experts, N = 768 intermediate: bench/moe_layer.py); fused_moe.toml bakes them.
TUNED_CONFIGS = Path(__file__).resolve().parent / "tuned_configs"
MODEL_E, MODEL_N = 128, 768


def tuned_config_file(device_name, E=MODEL_E, N=MODEL_N):
    """vLLM's file name for (E, N) on a device: E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3.json."""
    return TUNED_CONFIGS / f"E={E},N={N},device_name={device_name.replace(' ', '_')}.json"


def vllm_config(M, device_name):
    """vLLM's choice for M tokens from the tuned file of `device_name` (read as vLLM reads it: int
    keys in file order), the entry with the nearest key (`min` keeps the first, so the smaller key on
    a tie); None when the device has no file."""
    configs = _tuned_configs(tuned_config_file(device_name))
    if configs is None:
        return None
    return dict(configs[min(configs, key=lambda key: abs(key - M))])


@functools.lru_cache(maxsize=None)
def _tuned_configs(path):
    if not path.is_file():
        return None
    return {int(key): value for key, value in json.loads(path.read_text()).items()}


class JitLaunch:
    """Launches through Triton's JIT: launch(kernel, grid)(*args, **constexprs_and_options) runs
    kernel[grid](...). `launch_args` (the AOT library's launch-only arguments, fused_moe_kernel's M)
    are not the kernel's; `implied` are the fields the AOT library derives from the arguments, which
    Triton takes as keywords. The GEMM's tile fields, when the call leaves them out, come from vLLM's
    rule over the tuned file for M, or the spec's default on a device without one, as the AOT
    library chooses them."""

    def __call__(self, kernel, grid, launch_args=(), implied=None):
        def launch(*args, **config):
            config = self.choose(kernel, *args, launch_args=launch_args, implied=implied, **config)
            kernel[grid](*args, **config)
        return launch

    def choose(self, kernel, *args, launch_args=(), implied=None, **config):
        """The whole config of a launch with these arguments and fields (the tile of fused_moe_kernel
        from the tuned table for M = launch_args[0] when the fields leave it out)."""
        config = {**(implied or {}), **config}
        if kernel is not fused_moe_kernel or all(field in config for field in TILE_FIELDS):
            return config
        device = next(arg.device for arg in args if isinstance(arg, torch.Tensor))
        tile = vllm_config(launch_args[0], torch.cuda.get_device_name(device)) or DEFAULT_GEMM_CONFIG
        return {**tile, **config}


jit_launch = JitLaunch()


def cdiv(a, b):
    return (a + b - 1) // b


def round_up(a, b):
    return cdiv(a, b) * b


def align_buffer_sizes(numel, num_experts, block_size_m):
    """(len(sorted_token_ids), len(expert_ids)) that always suffice: at most min(numel, E) experts
    get tokens, each padded by fewer than block_size_m entries."""
    max_padded = round_up(numel + min(numel, num_experts) * (block_size_m - 1), block_size_m)
    return max_padded, max_padded // block_size_m


def align_buffer_capacity(numel, num_experts):
    """(len(sorted_token_ids), len(expert_ids)) that suffice for every compiled BLOCK_SIZE_M: the
    largest block pads the most, the smallest makes the most blocks."""
    sizes = [align_buffer_sizes(numel, num_experts, block) for block in BLOCK_SIZES_M]
    return max(size[0] for size in sizes), max(size[1] for size in sizes)


def moe_align_block_size(topk_ids, num_experts, block_size_m, sorted_token_ids=None, expert_ids=None,
                         num_tokens_post_padded=None, launch=jit_launch):
    """(sorted_token_ids, expert_ids, num_tokens_post_padded) for topk_ids [M, top_k] (see
    moe_kernels.py). Output buffers may be given (int32, contiguous, at least align_buffer_sizes)."""
    assert topk_ids.dtype == torch.int32 and topk_ids.is_contiguous()
    assert 1 <= num_experts <= 1024, "moe_align_scan is compiled with BLOCK_E 256 or 1024"
    device = topk_ids.device
    numel = topk_ids.numel()
    sorted_len, blocks_len = align_buffer_sizes(numel, num_experts, block_size_m)
    if sorted_token_ids is None:
        sorted_token_ids = torch.empty(sorted_len, dtype=torch.int32, device=device)
    if expert_ids is None:
        expert_ids = torch.empty(blocks_len, dtype=torch.int32, device=device)
    if num_tokens_post_padded is None:
        num_tokens_post_padded = torch.empty(1, dtype=torch.int32, device=device)
    assert sorted_token_ids.numel() >= sorted_len and expert_ids.numel() >= blocks_len
    counts = torch.zeros(num_experts, dtype=torch.int32, device=device)     # a memset in the AOT version
    offsets = torch.empty(num_experts, dtype=torch.int32, device=device)
    ranks = torch.empty(max(numel, 1), dtype=torch.int32, device=device)
    grid = (cdiv(numel, ALIGN_BLOCK),)
    launch(moe_align_count_kernel, grid)(topk_ids, counts, ranks, numel, BLOCK_SIZE=ALIGN_BLOCK, num_warps=4)
    launch(moe_align_scan_kernel, (num_experts,))(
        counts, offsets, sorted_token_ids, expert_ids, num_tokens_post_padded, num_experts, numel,
        BLOCK_SIZE_M=block_size_m, BLOCK_E=256 if num_experts <= 256 else 1024, num_warps=4)
    launch(moe_align_scatter_kernel, grid)(topk_ids, ranks, offsets, sorted_token_ids, numel,
                                   BLOCK_SIZE=ALIGN_BLOCK, num_warps=4)
    return sorted_token_ids, expert_ids, num_tokens_post_padded


def fused_moe_kernel_arguments(A, B, C, A_scale, B_scale, topk_weights, sorted_token_ids, expert_ids,
                               num_tokens_post_padded, mul_routed_weight, top_k, use_fp8, block_shape=(128, 128)):
    """(positional arguments, implied fields, launch-only arguments) of one fused_moe_kernel launch:
    C [num_valid_tokens, N] (row t = token * top_k + slot) from A [rows, K] (row t // top_k), B [E,
    N, K], times topk_weights [M, top_k] (read flat) when mul_routed_weight (else the kernel gets
    None for it); fp8: A_scale [rows, cdiv(K, 128)], B_scale [E, cdiv(N, 128), cdiv(K, 128)]. The
    implied fields (precision, top_k, MUL_ROUTED_WEIGHT) are what the arguments say: Triton's JIT
    takes them as keywords, the AOT library derives them itself (fused_moe.toml). The launch-only
    argument is M, the token count, which the tuned table is keyed by. The tile fields
    (TILE_FIELDS) come from the caller or the table."""
    num_valid_tokens = topk_weights.numel()
    EM = sorted_token_ids.numel()
    N, K = B.shape[1], B.shape[2]
    assert A.shape[1] == K and C.shape == (num_valid_tokens, N)
    assert A.stride(1) == 1 and B.stride(2) == 1 and C.stride(1) == 1
    if use_fp8:
        assert A.dtype == FP8_DTYPE and B.dtype == FP8_DTYPE
        group_n, group_k = block_shape
        assert group_k % 128 == 0, "BLOCK_SIZE_K is 128"
        scale_strides = (A_scale.stride(0), A_scale.stride(1), B_scale.stride(0), B_scale.stride(2), B_scale.stride(1))
    else:
        assert A.dtype == torch.bfloat16 and B.dtype == torch.bfloat16
        group_n = group_k = 0
        # The AOT bf16 variants take the scale pointers too: pass any 16-byte aligned buffer, strides 0.
        A_scale = B_scale = torch.empty(4, dtype=torch.float32, device=A.device)
        scale_strides = (0, 0, 0, 0, 0)
    args = (A, B, C, A_scale, B_scale, topk_weights if mul_routed_weight else None, sorted_token_ids, expert_ids,
            num_tokens_post_padded, N, K, EM, num_valid_tokens,
            A.stride(0), A.stride(1), B.stride(0), B.stride(2), B.stride(1), C.stride(0), C.stride(1),
            *scale_strides)
    implied = dict(group_n=group_n, group_k=group_k, MUL_ROUTED_WEIGHT=int(mul_routed_weight), top_k=top_k,
                   compute_type=tl.bfloat16, use_fp8_w8a8=int(use_fp8))
    return args, implied, (topk_weights.shape[0],)


def invoke_fused_moe_kernel(A, B, C, A_scale, B_scale, topk_weights, sorted_token_ids, expert_ids,
                            num_tokens_post_padded, mul_routed_weight, top_k, config, use_fp8,
                            block_shape=(128, 128), launch=jit_launch):
    """The GEMM (fused_moe_kernel_arguments says what it computes). config: the tile fields
    (AOT_GEMM_CONFIGS' keys), or None for the tuned table's choice for M; either way its
    BLOCK_SIZE_M must be the one moe_align_block_size used."""
    args, implied, launch_args = fused_moe_kernel_arguments(
        A, B, C, A_scale, B_scale, topk_weights, sorted_token_ids, expert_ids, num_tokens_post_padded,
        mul_routed_weight, top_k, use_fp8, block_shape)
    EM, N = sorted_token_ids.numel(), B.shape[1]

    def grid(meta):
        return (cdiv(EM, meta["BLOCK_SIZE_M"]) * cdiv(N, meta["BLOCK_SIZE_N"]),)
    launch(fused_moe_kernel, grid, launch_args, implied)(*args, **(config or {}))


def silu_and_mul(x, out, launch=jit_launch):
    """out [T, I] = silu(x[:, :I]) * x[:, I:], x [T, 2I] bf16."""
    rows, inter = out.shape
    assert x.shape == (rows, 2 * inter) and x.stride(1) == 1 and out.stride(1) == 1
    launch(silu_and_mul_kernel, (rows, cdiv(inter, ELEMENTWISE_BLOCK)))(
        x, out, rows, inter, x.stride(0), out.stride(0), BLOCK_SIZE=ELEMENTWISE_BLOCK, num_warps=4)
    return out


def per_token_group_quant_fp8(x, q=None, s=None, launch=jit_launch):
    """(q fp8 [T, K], s fp32 [T, cdiv(K, 128)]) from x [T, K] bf16."""
    rows, cols = x.shape
    assert x.stride(1) == 1
    if q is None:
        q = torch.empty(rows, cols, dtype=FP8_DTYPE, device=x.device)
    if s is None:
        s = torch.empty(rows, cdiv(cols, QUANT_GROUP), dtype=torch.float32, device=x.device)
    assert q.stride(1) == 1 and s.stride(1) == 1
    launch(per_token_group_quant_fp8_kernel, (rows, cdiv(cols, QUANT_GROUP)))(
        x, q, s, rows, cols, x.stride(0), q.stride(0), s.stride(0), GROUP_SIZE=QUANT_GROUP, num_warps=1)
    return q, s


def moe_sum(y, out, launch=jit_launch):
    """out [M, H] = y.sum(1) for y [M, top_k, H] (fp32 accumulation)."""
    M, top_k, H = y.shape
    assert out.shape == (M, H) and y.stride(2) == 1 and out.stride(1) == 1
    launch(moe_sum_kernel, (M, cdiv(H, ELEMENTWISE_BLOCK)))(
        y, out, M, H, top_k, y.stride(0), y.stride(1), out.stride(0), BLOCK_SIZE=ELEMENTWISE_BLOCK, num_warps=4)
    return out


def fused_moe_jit(x, w1, w2, topk_weights, topk_ids, use_fp8, config=None, w1_scale=None, w2_scale=None,
                  block_shape=(128, 128), out=None, poison=False, launch=jit_launch):
    """The MoE layer: out [M, H] bf16 = sum_k topk_weights[:, k] * expert_k(x).

    x [M, H] bf16; w1 [E, 2I, H], w2 [E, H, I]: bf16, or fp8 e4m3 (use_fp8) with w1_scale
    [E, 2I/128, H/128], w2_scale [E, H/128, I/128] fp32; topk_weights [M, top_k] fp32; topk_ids
    [M, top_k] int32. config: the GEMMs' tile config (keys of AOT_GEMM_CONFIGS), or None: the
    tuned table's choice for M (vLLM's files in tuned_configs/; the AOT library bakes them), as
    `launch.choose` reports it before the align step, which needs its BLOCK_SIZE_M. poison: fill
    every intermediate buffer with NaN (or -7 for indices) first, so that an element a kernel fails
    to write shows up in the output. launch: how kernels launch (jit_launch, or aot.AotLaunch for
    the taot library).

    Launches: [quant x]; 3 align kernels; GEMM 1 (top_k, no weights); silu_and_mul; [quant];
    GEMM 2 (rows = M * top_k, so top_k = 1, MUL_ROUTED_WEIGHT = 1); moe_sum. Both GEMMs take M, so
    the table gives them the same tile, as in vLLM.
    """
    M, H = x.shape
    E, two_i, _ = w1.shape
    inter = two_i // 2
    top_k = topk_ids.shape[1]
    numel = M * top_k
    assert w1.shape == (E, 2 * inter, H) and w2.shape == (E, H, inter)
    assert x.dtype == torch.bfloat16 and x.is_contiguous()
    assert w1.is_contiguous() and w2.is_contiguous()
    assert topk_ids.shape == (M, top_k) and topk_weights.shape == (M, top_k)
    if use_fp8:
        assert w1_scale is not None and w2_scale is not None
        assert w1_scale.shape == (E, cdiv(2 * inter, block_shape[0]), cdiv(H, block_shape[1]))
        assert w2_scale.shape == (E, cdiv(H, block_shape[0]), cdiv(inter, block_shape[1]))
        assert block_shape[1] == QUANT_GROUP
    topk_ids = topk_ids.to(torch.int32).contiguous()
    topk_weights = topk_weights.to(torch.float32).contiguous()
    device = x.device

    def buffer(shape, dtype):
        if not poison:
            return torch.empty(shape, dtype=dtype, device=device)
        if dtype == FP8_DTYPE:
            t = torch.empty(shape, dtype=dtype, device=device)
            t.view(torch.uint8).fill_(0x7F)          # NaN in float8_e4m3fn
            return t
        return torch.full(shape, -7 if dtype == torch.int32 else float("nan"), dtype=dtype, device=device)

    def quantized(a):
        if not use_fp8:
            return a, None
        return per_token_group_quant_fp8(
            a, buffer(a.shape, FP8_DTYPE), buffer((a.shape[0], cdiv(a.shape[1], QUANT_GROUP)), torch.float32),
            launch=launch)

    a1, a1_scale = quantized(x)
    cache1 = buffer((numel, 2 * inter), torch.bfloat16)
    # The align buffers hold the layout of any BLOCK_SIZE_M the library compiled, so that GEMM 1's
    # config can be asked before the align step that depends on it; the GEMMs get them cut to the
    # length the chosen BLOCK_SIZE_M needs (EM).
    sorted_capacity, blocks_capacity = align_buffer_capacity(numel, E)
    sorted_buffer, expert_buffer = buffer((sorted_capacity,), torch.int32), buffer((blocks_capacity,), torch.int32)
    num_tokens_post_padded = buffer((1,), torch.int32)
    args, implied, launch_args = fused_moe_kernel_arguments(
        a1, w1, cache1, a1_scale, w1_scale, topk_weights, sorted_buffer, expert_buffer, num_tokens_post_padded,
        False, top_k, use_fp8, block_shape)
    bm = launch.choose(fused_moe_kernel, *args, launch_args=launch_args, implied=implied,
                       **(config or {}))["BLOCK_SIZE_M"]
    sorted_len, blocks_len = align_buffer_sizes(numel, E, bm)
    sorted_token_ids, expert_ids, num_tokens_post_padded = moe_align_block_size(
        topk_ids, E, bm, sorted_buffer[:sorted_len], expert_buffer[:blocks_len], num_tokens_post_padded,
        launch=launch)
    invoke_fused_moe_kernel(a1, w1, cache1, a1_scale, w1_scale, topk_weights, sorted_token_ids, expert_ids,
                            num_tokens_post_padded, False, top_k, config, use_fp8, block_shape, launch)
    cache2 = silu_and_mul(cache1, buffer((numel, inter), torch.bfloat16), launch)
    a2, a2_scale = quantized(cache2)
    cache3 = buffer((numel, H), torch.bfloat16)
    invoke_fused_moe_kernel(a2, w2, cache3, a2_scale, w2_scale, topk_weights, sorted_token_ids, expert_ids,
                            num_tokens_post_padded, True, 1, config, use_fp8, block_shape, launch)
    if out is None:
        out = torch.empty(M, H, dtype=torch.bfloat16, device=device)
    return moe_sum(cache3.view(M, top_k, H), out, launch)
