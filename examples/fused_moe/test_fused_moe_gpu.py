# GPU tests of the fused MoE example through the Triton JIT path (jit.py) against the plain-torch
# reference (reference.py). Every test is marked `gpu` and skipped without torch or a CUDA GPU.
#
#   pytest examples/fused_moe -m gpu -v
#
# Checks: the sort/align kernels exactly (every flat index once, sentinel padding, expert ids, the
# padded total, nothing written past it); the fp8 quantization kernel exactly, silu_and_mul and
# the sum kernel against torch; the grouped GEMM alone; the whole layer (relative error
# ||out - ref|| / ||ref|| in fp32: bf16 < 2e-2, fp8 w8a8 < 5e-2) for the seed case, a sweep of
# M / E / top_k, every tile config that fused_moe.toml compiles, and shapes that are not multiples
# of the tiles. Inputs are fresh random numbers (seeded per case); outputs and intermediates are
# poisoned (NaN / -7) before launch, and experts no token is routed to hold NaN weights, so a
# missed write or a wrong expert shows up as a non-finite output. `-s` prints each layer's error.
import math
import zlib

import pytest

from example_support import gpu_marks, torch_and_skip_reason  # on sys.path through conftest.py

torch, SKIP_REASON = torch_and_skip_reason()
pytestmark = gpu_marks(SKIP_REASON)

if SKIP_REASON is None:
    import jit as moe_jit
    import reference as ref

BF16_TOL = 2e-2
FP8_TOL = 5e-2
POISON = -7
SMALL_CONFIG = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, BLOCK_SIZE_K=128, GROUP_SIZE_M=1, num_warps=4, num_stages=3)
LARGE_CONFIG = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, GROUP_SIZE_M=16, num_warps=8, num_stages=3)
SEED_CONFIG = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=64, BLOCK_SIZE_K=128, GROUP_SIZE_M=16, num_warps=4, num_stages=3)


def config_id(config):
    return "m{BLOCK_SIZE_M}n{BLOCK_SIZE_N}k{BLOCK_SIZE_K}g{GROUP_SIZE_M}w{num_warps}s{num_stages}".format(**config)


def seed(*params):
    """Fresh, reproducible random inputs per test case."""
    torch.manual_seed(zlib.crc32(repr(params).encode()))


def cdiv(a, b):
    return (a + b - 1) // b


def rel_err(out, expected):
    out, expected = out.float(), expected.float()
    return ((out - expected).norm() / expected.norm()).item()


def make_routing(M, E, top_k):
    """(topk_weights fp32 [M, top_k], topk_ids int32 [M, top_k]): distinct experts per token."""
    probs = torch.softmax(torch.randn(M, E, device="cuda"), dim=-1)
    weights, ids = torch.topk(probs, top_k, dim=-1)
    return (weights / weights.sum(-1, keepdim=True)).float().contiguous(), ids.to(torch.int32).contiguous()


def make_expert_weights(E, N, K, used, use_fp8):
    """(w [E, N, K], scale [E, N/128, K/128] or None), values ~ N(0, 1/K); experts not in `used`
    hold NaN (weights and scales), so reading one poisons the output."""
    if use_fp8:
        w = torch.empty(E, N, K, dtype=ref.FP8_DTYPE, device="cuda")
        w.view(torch.uint8).fill_(0x7F)                          # NaN in float8_e4m3fn
        scale = torch.full((E, cdiv(N, 128), cdiv(K, 128)), float("nan"), dtype=torch.float32, device="cuda")
        for e in used:
            q, s = ref.quantize_weight_block_fp8(torch.randn(N, K, device="cuda") / math.sqrt(K))
            w[e].copy_(q)
            scale[e].copy_(s)
        return w, scale
    w = torch.full((E, N, K), float("nan"), dtype=torch.bfloat16, device="cuda")
    for e in used:
        w[e].copy_((torch.randn(N, K, device="cuda") / math.sqrt(K)).to(torch.bfloat16))
    return w, None


def make_layer(M, E, top_k, H, I, use_fp8):
    x = torch.randn(M, H, device="cuda").to(torch.bfloat16)
    topk_weights, topk_ids = make_routing(M, E, top_k)
    used = torch.unique(topk_ids).tolist()
    w1, w1_scale = make_expert_weights(E, 2 * I, H, used, use_fp8)
    w2, w2_scale = make_expert_weights(E, H, I, used, use_fp8)
    return dict(x=x, w1=w1, w2=w2, topk_weights=topk_weights, topk_ids=topk_ids, w1_scale=w1_scale, w2_scale=w2_scale)


def check_layer(layer, use_fp8, config):
    M, H = layer["x"].shape
    out = torch.full((M, H), float("nan"), dtype=torch.bfloat16, device="cuda")
    result = moe_jit.fused_moe_jit(layer["x"], layer["w1"], layer["w2"], layer["topk_weights"], layer["topk_ids"],
                                   use_fp8, config, w1_scale=layer["w1_scale"], w2_scale=layer["w2_scale"],
                                   out=out, poison=True)
    torch.cuda.synchronize()
    assert result.data_ptr() == out.data_ptr()
    expected = ref.moe_reference(layer["x"], layer["w1"], layer["w2"], layer["topk_weights"], layer["topk_ids"],
                                 layer["w1_scale"], layer["w2_scale"])
    finite = torch.isfinite(out)
    assert finite.all(), f"{(~finite).sum().item()} of {out.numel()} outputs are not finite (missed write or wrong expert)"
    err = rel_err(out, expected)
    tol = FP8_TOL if use_fp8 else BF16_TOL
    E, top_k = layer["w1"].shape[0], layer["topk_ids"].shape[1]
    print(f"[layer] M={M} H={H} E={E} top_k={top_k} {'fp8' if use_fp8 else 'bf16'} "
          f"{config_id(config) if config else 'default'}: relative error {err:.3e}")
    assert err < tol, f"relative error {err:.3e} >= {tol:.0e}"
    return err


# ---------------------------------------------------------------------------------------------------
# Sort / align
# ---------------------------------------------------------------------------------------------------

def run_align(topk_ids, E, block_size_m):
    numel = topk_ids.numel()
    sorted_len, blocks_len = moe_jit.align_buffer_sizes(numel, E, block_size_m)
    sorted_ids = torch.full((sorted_len,), POISON, dtype=torch.int32, device="cuda")
    expert_ids = torch.full((blocks_len,), POISON, dtype=torch.int32, device="cuda")
    total = torch.full((1,), POISON, dtype=torch.int32, device="cuda")
    moe_jit.moe_align_block_size(topk_ids, E, block_size_m, sorted_ids, expert_ids, total)
    torch.cuda.synchronize()
    return sorted_ids.cpu().long(), expert_ids.cpu().long(), total.item()


def check_alignment(topk_ids, E, block_size_m, sorted_ids, expert_ids, total):
    ids = topk_ids.reshape(-1).cpu().long()
    numel = ids.numel()
    counts = torch.bincount(ids, minlength=E)
    padded = (counts + block_size_m - 1) // block_size_m * block_size_m
    assert total == padded.sum().item(), f"num_tokens_post_padded {total}, expected {padded.sum().item()}"
    assert total % block_size_m == 0
    starts = torch.cumsum(padded, 0) - padded
    for e in torch.nonzero(counts).squeeze(1).tolist():
        start, count, length = starts[e].item(), counts[e].item(), padded[e].item()
        segment = sorted_ids[start:start + length]
        want = torch.nonzero(ids == e).squeeze(1)
        assert torch.equal(segment[:count].sort().values, want), f"expert {e}: wrong flat indices"
        assert (segment[count:] == numel).all(), f"expert {e}: padding is not the sentinel {numel}"
        blocks = expert_ids[start // block_size_m:(start + length) // block_size_m]
        assert (blocks == e).all(), f"expert {e}: expert_ids of its blocks are {blocks.tolist()}"
    # every flat index exactly once, and the padded region holds nothing else
    head = sorted_ids[:total]
    real = head[head != numel]
    assert torch.equal(real.sort().values, torch.arange(numel)), "not every flat index appears exactly once"
    # nothing written past the padded total
    assert (sorted_ids[total:] == POISON).all(), "sorted_token_ids written past num_tokens_post_padded"
    assert (expert_ids[total // block_size_m:] == POISON).all(), "expert_ids written past the last block"


@pytest.mark.parametrize("block_size_m", [16, 64])
@pytest.mark.parametrize("E", [8, 128, 256, 1000])
@pytest.mark.parametrize("top_k", [1, 2, 6, 8])
@pytest.mark.parametrize("M", [1, 7, 83, 512, 2048])
def test_align_random_routing(M, top_k, E, block_size_m):
    seed("align", M, top_k, E, block_size_m)
    _, topk_ids = make_routing(M, E, top_k)
    check_alignment(topk_ids, E, block_size_m, *run_align(topk_ids, E, block_size_m))


@pytest.mark.parametrize("block_size_m", [16, 64])
@pytest.mark.parametrize("E", [8, 256, 1000])
@pytest.mark.parametrize("top_k", [1, 2])
def test_align_skewed_routing(top_k, E, block_size_m):
    """8192 tokens onto top_k experts (many blocks per expert, most experts empty)."""
    M = 8192
    experts = torch.tensor([E - 1, E // 2][:top_k], dtype=torch.int32, device="cuda")
    topk_ids = experts.repeat(M, 1).contiguous()
    check_alignment(topk_ids, E, block_size_m, *run_align(topk_ids, E, block_size_m))


# ---------------------------------------------------------------------------------------------------
# Element-wise kernels
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("cols", [128, 336, 1024, 7168])
@pytest.mark.parametrize("rows", [1, 7, 300])
def test_per_token_group_quant_fp8(rows, cols):
    seed("quant", rows, cols)
    x = (torch.randn(rows, cols, device="cuda") * 3).to(torch.bfloat16)
    if rows > 1:
        x[1] = 0                                                  # an all-zero row: scale 1e-10 / 448, q = 0
    groups = cdiv(cols, 128)
    q = torch.empty(rows, cols, dtype=ref.FP8_DTYPE, device="cuda")
    q.view(torch.uint8).fill_(0x7F)
    s = torch.full((rows, groups), float("nan"), dtype=torch.float32, device="cuda")
    moe_jit.per_token_group_quant_fp8(x, q, s)
    torch.cuda.synchronize()
    q_ref, s_ref = ref.per_token_group_quant_fp8_torch(x, 128)
    got, want = q.float(), q_ref.float()
    diff = (got - want).abs()
    print(f"[quant] rows={rows} cols={cols}: scales equal {torch.equal(s, s_ref)}, "
          f"q differs in {(diff > 0).sum().item()} of {diff.numel()}")
    # Same algorithm, IEEE division and round-to-nearest-even fp8 conversion on both sides: bit-exact
    # (seen on an H100: every element of every case equal).
    assert torch.equal(s, s_ref), f"scales differ: max {(s - s_ref).abs().max().item()}"
    assert torch.equal(got, want), \
        f"{(diff > 0).sum().item()} of {q.numel()} fp8 values differ, max difference {diff.max().item()}"


@pytest.mark.parametrize("inter", [336, 512, 4608])
@pytest.mark.parametrize("rows", [1, 83])
def test_silu_and_mul(rows, inter):
    seed("silu", rows, inter)
    x = (torch.randn(rows, 2 * inter, device="cuda") * 4).to(torch.bfloat16)
    out = torch.full((rows, inter), float("nan"), dtype=torch.bfloat16, device="cuda")
    moe_jit.silu_and_mul(x, out)
    torch.cuda.synchronize()
    gate, up = x[:, :inter].float(), x[:, inter:].float()
    expected = (gate * torch.sigmoid(gate) * up).to(torch.bfloat16)
    torch.testing.assert_close(out.float(), expected.float(), rtol=1e-2, atol=1e-5)


@pytest.mark.parametrize("H", [1024, 1040, 7168])
@pytest.mark.parametrize("top_k", [1, 2, 6, 8])
@pytest.mark.parametrize("M", [1, 83])
def test_moe_sum(M, top_k, H):
    seed("sum", M, top_k, H)
    y = torch.randn(M, top_k, H, device="cuda").to(torch.bfloat16)
    out = torch.full((M, H), float("nan"), dtype=torch.bfloat16, device="cuda")
    moe_jit.moe_sum(y, out)
    torch.cuda.synchronize()
    torch.testing.assert_close(out.float(), y.float().sum(1).to(torch.bfloat16).float(), rtol=1e-2, atol=1e-3)


# ---------------------------------------------------------------------------------------------------
# Grouped GEMM alone
# ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", [SMALL_CONFIG, LARGE_CONFIG], ids=config_id)
@pytest.mark.parametrize("mul_routed_weight", [False, True])
@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
def test_fused_moe_kernel(use_fp8, mul_routed_weight, config):
    """C[t] = (w[t] if MUL_ROUTED_WEIGHT) * A[t // top_k] @ B[ids[t]].T for every flat index t."""
    M, E, top_k, N, K = 83, 8, 2, 256, 512
    seed("gemm", use_fp8, mul_routed_weight, config_id(config))
    topk_weights, topk_ids = make_routing(M, E, top_k)
    a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    b, b_scale = make_expert_weights(E, N, K, torch.unique(topk_ids).tolist(), use_fp8)
    if use_fp8:
        a_q, a_scale = ref.per_token_group_quant_fp8_torch(a, 128)
        a_ref = ref.dequant_per_token_group(a_q, a_scale, 128)
        b_ref = ref.dequant_weight_block_fp8(b[torch.unique(topk_ids).long()], b_scale[torch.unique(topk_ids).long()])
    else:
        a_q, a_scale = a, None
        a_ref = a.float()
        b_ref = b[torch.unique(topk_ids).long()].float()
    numel = M * top_k
    sorted_ids, expert_ids, total = moe_jit.moe_align_block_size(topk_ids, E, config["BLOCK_SIZE_M"])
    c = torch.full((numel, N), float("nan"), dtype=torch.bfloat16, device="cuda")
    moe_jit.invoke_fused_moe_kernel(a_q, b, c, a_scale, b_scale, topk_weights, sorted_ids, expert_ids, total,
                                    mul_routed_weight, top_k, config, use_fp8)
    torch.cuda.synchronize()
    flat_ids = topk_ids.reshape(-1).long()
    slot_of = torch.searchsorted(torch.unique(topk_ids).long(), flat_ids)         # index into b_ref
    rows = a_ref[torch.arange(numel, device="cuda") // top_k]                     # [numel, K]
    expected = torch.bmm(b_ref[slot_of], rows[:, :, None]).squeeze(2)             # [numel, N]
    if mul_routed_weight:
        expected = expected * topk_weights.reshape(-1, 1)
    assert torch.isfinite(c).all(), "some rows of C were not written"
    err = rel_err(c, expected)
    assert err < 1e-2, f"relative error {err:.3e}"


# ---------------------------------------------------------------------------------------------------
# The whole layer
# ---------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def seed_layer():
    """The seed's case: M=7, N (intermediate) = 4608, K (hidden) = 7168, E=256, top_k=1, fp8 w8a8 with
    128x128 blocks, bf16 out: w1 [256, 9216, 7168] and w2 [256, 7168, 4608] fp8 (25 GB)."""
    seed("seed case")
    layer = make_layer(M=7, E=256, top_k=1, H=7168, I=4608, use_fp8=True)
    yield layer
    layer.clear()
    torch.cuda.empty_cache()


@pytest.mark.parametrize("config", [SMALL_CONFIG, SEED_CONFIG], ids=config_id)
def test_seed_case_fp8(seed_layer, config):
    check_layer(seed_layer, True, config)


@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("top_k", [1, 2, 6, 8])
@pytest.mark.parametrize("E", [8, 128])
@pytest.mark.parametrize("M", [1, 7, 83, 512, 2048])
def test_layer_sweep(M, E, top_k, use_fp8):
    """N (intermediate) = 512, K (hidden) = 1024; the tile vLLM's rule picks for M from this device's
    tuned file (the spec's default tile on a device without one)."""
    seed("sweep", M, E, top_k, use_fp8)
    check_layer(make_layer(M, E, top_k, H=1024, I=512, use_fp8=use_fp8), use_fp8, None)


@pytest.mark.parametrize("config", moe_jit.AOT_GEMM_CONFIGS if SKIP_REASON is None else [], ids=config_id)
@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
def test_layer_every_aot_config(use_fp8, config):
    """Every GEMM tile config fused_moe.toml compiles, at M=83, E=8, top_k=2."""
    seed("configs", use_fp8, config_id(config))
    check_layer(make_layer(83, 8, 2, H=1024, I=512, use_fp8=use_fp8), use_fp8, config)


@pytest.mark.parametrize("config", [SMALL_CONFIG, LARGE_CONFIG], ids=config_id)
@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("M", [7, 300])
def test_layer_ragged_shapes(M, use_fp8, config):
    """H = 1040 and I = 336: N and K not multiples of the tiles, a partial fp8 scale group."""
    seed("ragged", M, use_fp8, config_id(config))
    check_layer(make_layer(M, 8, 2, H=1040, I=336, use_fp8=use_fp8), use_fp8, config)
