# Bench file of fused_moe_kernel, the MoE layer's grouped GEMM (moe_kernels.py; docs/bench-file.md), at
# the layer's first GEMM for the example's model shape: E = 128 experts, K = hidden 2048, N = 2 x 768
# (gate and up), top_k 8, bf16, no routing weights; over the 18 batch sizes vLLM's benchmark_moe.py
# tunes. It names no LIBRARY: it serves both libraries that compile the kernel, fused_moe
# (fused_moe.toml) and fused_moe_tune (bench/specs/fused_moe_tune.toml, the `taot tune` figure).
#
# The arguments depend on BLOCK_SIZE_M (ARGS_DEPEND_ON): the token sort/align pads each expert's rows
# to a multiple of it. It is done here in plain torch, with the contract of the align kernels
# (README.md, "Kernels"). Inputs are seeded: every config, every tool and every run sees the same
# routing, activations and weights. torch is imported where it is used, so that the file also loads
# on a machine without it.
import zlib

import triton.language as tl

from moe_kernels import fused_moe_kernel

KERNEL = "fused_moe_kernel"
DIMS = ("M", "E", "N", "K", "top_k", "dtype")
X_AXIS = "M"
BATCH_SIZES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 1536, 2048, 3072, 4096)  # vLLM's
EXPERTS, HIDDEN, INTERMEDIATE, TOP_K = 128, 2048, 768, 8
SHAPES = [(m, EXPERTS, 2 * INTERMEDIATE, HIDDEN, TOP_K, "bf16") for m in BATCH_SIZES]
TUNE_SHAPES = SHAPES
ARGS_DEPEND_ON = ("BLOCK_SIZE_M",)
OUTPUTS = ["c_ptr"]
# Element by element against the fp64 product; |C| is about 1 (A ~ N(0, 1), B ~ N(0, 1/K)): C is
# rounded to bf16 once (2^-9 relative), fp32 accumulation over K adds little. As bench_matmul.py.
TOLERANCE = {"bf16": {"atol": 1e-2, "rtol": 1e-2}}
FLOPS_DTYPE = "bf16"

# What the first GEMM's arguments imply (fused_moe.toml derives them from the arguments; Triton's JIT
# takes them as keywords), and the tile of the "triton" baseline: the fused_moe_tune spec's default
# config, its BLOCK_SIZE_M being the one the arguments were made for.
IMPLIED = dict(group_n=0, group_k=0, MUL_ROUTED_WEIGHT=0, compute_type=tl.bfloat16, use_fp8_w8a8=0)
JIT_TILE = dict(BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=1, num_warps=4, num_stages=3)

_WEIGHTS = {}      # (E, N, K, device) -> B: one set, shared by every shape (805 MB at the model shape)
_TOKENS = {}       # (M, E, K, top_k, device) -> (A, topk_ids)


def cdiv(a, b):
    return (a + b - 1) // b


def align_buffer_sizes(numel, num_experts, block_size_m):
    """(len(sorted_token_ids), len(expert_ids)) that always suffice, as jit.align_buffer_sizes: at most
    min(numel, E) experts get tokens, each padded by fewer than block_size_m entries. The first is a
    multiple of block_size_m and the second is the first divided by it."""
    padded = cdiv(numel + min(numel, num_experts) * (block_size_m - 1), block_size_m) * block_size_m
    return padded, padded // block_size_m


def block_size_m_of(sorted_token_ids, expert_ids):
    """The BLOCK_SIZE_M that make_args aligned for, from its buffers' lengths (align_buffer_sizes)."""
    return sorted_token_ids.numel() // expert_ids.numel()


def weights(E, N, K, device):
    """B [E, N, K] bf16, N(0, 1/K), seeded; made once per device (the previous set is dropped)."""
    import torch
    key = (E, N, K, str(device))
    if key not in _WEIGHTS:
        _WEIGHTS.clear()
        generator = torch.Generator(device=device).manual_seed(zlib.crc32(repr(("weights", E, N, K)).encode()))
        b = torch.empty(E, N, K, dtype=torch.bfloat16, device=device)
        for e in range(E):  # an expert at a time: no fp32 copy of all of B
            b[e].copy_(torch.randn(N, K, generator=generator, device=device).mul_(K ** -0.5))
        _WEIGHTS[key] = b
    return _WEIGHTS[key]


def tokens(M, E, K, top_k, device):
    """(A [M, K] bf16 ~ N(0, 1), topk_ids [M, top_k] int32), seeded by the sizes. The routing is
    vLLM's benchmark's: the top_k of softmax(random gating logits), distinct experts per token."""
    import torch
    key = (M, E, K, top_k, str(device))
    if key not in _TOKENS:
        generator = torch.Generator(device=device).manual_seed(zlib.crc32(repr(("tokens", M, E, K, top_k)).encode()))
        a = torch.randn(M, K, generator=generator, device=device).to(torch.bfloat16)
        logits = torch.randn(M, E, generator=generator, device=device)
        topk_ids = torch.topk(torch.softmax(logits, dim=-1), top_k, dim=-1).indices.to(torch.int32).contiguous()
        _TOKENS[key] = (a, topk_ids)
    return _TOKENS[key]


def moe_align(topk_ids, num_experts, block_size_m):
    """(sorted_token_ids, expert_ids, num_tokens_post_padded), int32, as the align kernels make them:
    the flat indices t = token * top_k + slot grouped by expert (experts in increasing order, indices
    increasing within one), each group starting at a multiple of block_size_m and padded with the
    sentinel numel; one expert id per block; the padded total. Buffers are align_buffer_sizes long;
    what lies past the total holds the sentinel (sorted_token_ids) or 0 (expert_ids), never read."""
    import torch
    device = topk_ids.device
    flat = topk_ids.reshape(-1).long()
    numel = flat.numel()
    counts = torch.bincount(flat, minlength=num_experts)
    padded = cdiv(counts, block_size_m) * block_size_m
    starts = torch.cumsum(padded, 0) - padded
    sorted_len, blocks_len = align_buffer_sizes(numel, num_experts, block_size_m)
    sorted_token_ids = torch.full((sorted_len,), numel, dtype=torch.int32, device=device)
    order = torch.argsort(flat, stable=True)                            # flat indices, grouped by expert
    expert_of = flat[order]
    rank = torch.arange(numel, device=device) - (torch.cumsum(counts, 0) - counts)[expert_of]
    sorted_token_ids[starts[expert_of] + rank] = order.to(torch.int32)
    blocks = torch.repeat_interleave(torch.arange(num_experts, device=device), padded // block_size_m)
    expert_ids = torch.zeros(blocks_len, dtype=torch.int32, device=device)
    expert_ids[:blocks.numel()] = blocks.to(torch.int32)
    num_tokens_post_padded = padded.sum().reshape(1).to(torch.int32)
    return sorted_token_ids, expert_ids, num_tokens_post_padded


def make_args(shape, device, config):
    """fused_moe_kernel's runtime arguments for the first GEMM, aligned for config["BLOCK_SIZE_M"], then
    M (the launch-only argument, the tuning key): C [M * top_k, N] bf16 starts as NaN (every row is
    written: a missed one fails the check); the scale pointers are unused in bf16 (strides 0) and
    topk_weights is None (no routing weights)."""
    import torch
    M, E, N, K, top_k = shape["M"], shape["E"], shape["N"], shape["K"], shape["top_k"]
    assert shape["dtype"] == "bf16", "this file describes the bf16 GEMM"
    a, topk_ids = tokens(M, E, K, top_k, device)
    b = weights(E, N, K, device)
    sorted_token_ids, expert_ids, num_tokens_post_padded = moe_align(topk_ids, E, config["BLOCK_SIZE_M"])
    c = torch.full((M * top_k, N), float("nan"), dtype=torch.bfloat16, device=device)
    scales = torch.zeros(4, dtype=torch.float32, device=device)
    return [a, b, c, scales, scales, None, sorted_token_ids, expert_ids, num_tokens_post_padded,
            N, K, sorted_token_ids.numel(), M * top_k,
            a.stride(0), a.stride(1), b.stride(0), b.stride(2), b.stride(1), c.stride(0), c.stride(1),
            0, 0, 0, 0, 0, M]


def reference(a, b, c, a_scale, b_scale, topk_weights, sorted_token_ids, expert_ids, num_tokens_post_padded,
              N, K, EM, num_valid_tokens, *strides_and_M):
    """C[t] = A[t // top_k] @ B[e_t].T in fp64 for every flat index t, e_t its expert, from the routing
    itself (not the aligned buffers, so a wrong align fails too)."""
    import torch
    M = strides_and_M[-1]
    top_k = num_valid_tokens // M
    _, topk_ids = tokens(M, b.shape[0], K, top_k, a.device)
    experts = topk_ids.reshape(-1).long()
    rows = a.double()
    expected = torch.empty(num_valid_tokens, N, dtype=torch.float64, device=a.device)
    for e in torch.unique(experts).tolist():
        flat = (experts == e).nonzero().squeeze(1)
        expected[flat] = rows[flat // top_k] @ b[e].double().t()
    return expected


def triton_jit(*args):
    """The same kernel through Triton's JIT with a fixed tile (JIT_TILE, and the BLOCK_SIZE_M the
    arguments were aligned for), the spec's grid."""
    *kernel_args, M = args
    sorted_token_ids, expert_ids, N, EM, num_valid_tokens = (kernel_args[6], kernel_args[7], kernel_args[9],
                                                              kernel_args[11], kernel_args[12])
    block_size_m = block_size_m_of(sorted_token_ids, expert_ids)
    grid = (cdiv(EM, block_size_m) * cdiv(N, JIT_TILE["BLOCK_SIZE_N"]),)
    fused_moe_kernel[grid](*kernel_args, BLOCK_SIZE_M=block_size_m, top_k=num_valid_tokens // M, **JIT_TILE,
                           **IMPLIED)


BASELINES = {"triton": triton_jit}


def flops(shape):
    return 2 * shape["M"] * shape["top_k"] * shape["N"] * shape["K"]


def bytes(shape):
    """The weights of the experts the tokens reach (expected count under uniform routing: each token
    picks top_k of E), A read, C written; 2-byte elements. The index buffers are left out (< 1%)."""
    M, E, N, K, top_k = shape["M"], shape["E"], shape["N"], shape["K"], shape["top_k"]
    experts_reached = E * (1 - (1 - top_k / E) ** M)
    return 2 * (experts_reached * N * K + M * K + M * top_k * N)
