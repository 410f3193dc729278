# Plain-torch reference of the MoE layer (no Triton): route, loop over experts, dequantize fp8.
#
#   y = sum_k topk_weights[m, k] * W2[e_k] @ (silu(G[e_k] @ x[m]) * (U[e_k] @ x[m])),  e_k = topk_ids[m, k]
#
# w1 [E, 2I, H] holds G (rows 0..I-1, "gate") and U (rows I..2I-1, "up"); w2 [E, H, I] ("down").
# Weights are bf16, or fp8 e4m3 with one fp32 scale per 128 x 128 block (w1_scale [E, 2I/128, H/128],
# w2_scale [E, H/128, I/128]); in fp8 mode activations are quantized per token and group of 128
# columns before each projection (w8a8), exactly as the Triton path does, and dequantized here.
import torch

FP8_DTYPE = torch.float8_e4m3fn
FP8_MAX = 448.0          # torch.finfo(torch.float8_e4m3fn).max
FP8_SCALE_EPS = 1e-10


def cdiv(a, b):
    return (a + b - 1) // b


def per_token_group_quant_fp8_torch(x, group_size=128):
    """x [T, K] -> (q fp8 [T, K], scale fp32 [T, cdiv(K, group_size)]): per row and group of columns,
    scale = max(amax |x|, 1e-10) / 448 and q = clamp(x / scale, +-448) rounded to fp8."""
    rows, cols = x.shape
    groups = cdiv(cols, group_size)
    xf = torch.zeros(rows, groups * group_size, dtype=torch.float32, device=x.device)
    xf[:, :cols] = x.float()
    xf = xf.view(rows, groups, group_size)
    # A tensor divisor: torch turns division by a Python scalar into multiplication by its
    # reciprocal, which can differ from the kernel's IEEE division in the last bit.
    scale = xf.abs().amax(dim=-1).clamp(min=FP8_SCALE_EPS) / torch.full((), FP8_MAX, device=x.device)
    q = (xf / scale[:, :, None]).clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)
    return q.view(rows, groups * group_size)[:, :cols].contiguous(), scale.contiguous()


def dequant_per_token_group(q, scale, group_size=128):
    """fp32 [T, K] from fp8 q [T, K] and scale [T, cdiv(K, group_size)]."""
    cols = q.shape[1]
    return q.float() * scale.repeat_interleave(group_size, dim=1)[:, :cols]


def quantize_weight_block_fp8(w, block_shape=(128, 128)):
    """w [..., N, K] (any float dtype) -> (fp8 [..., N, K], fp32 scale [..., cdiv(N, bn), cdiv(K, bk)]),
    one scale per bn x bk block: scale = max(amax |block|, 1e-10) / 448."""
    bn, bk = block_shape
    *lead, n, k = w.shape
    nb, kb = cdiv(n, bn), cdiv(k, bk)
    wf = torch.zeros(*lead, nb * bn, kb * bk, dtype=torch.float32, device=w.device)
    wf[..., :n, :k] = w.float()
    blocks = wf.view(*lead, nb, bn, kb, bk)
    scale = blocks.abs().amax(dim=(-3, -1)).clamp(min=FP8_SCALE_EPS) / FP8_MAX        # [..., nb, kb]
    q = (blocks / scale[..., :, None, :, None]).clamp(-FP8_MAX, FP8_MAX).to(FP8_DTYPE)
    q = q.view(*lead, nb * bn, kb * bk)[..., :n, :k].contiguous()
    return q, scale.contiguous()


def dequant_weight_block_fp8(q, scale, block_shape=(128, 128)):
    """fp32 [..., N, K] from fp8 q [..., N, K] and block scales [..., cdiv(N, bn), cdiv(K, bk)]."""
    bn, bk = block_shape
    n, k = q.shape[-2], q.shape[-1]
    full = scale.repeat_interleave(bn, dim=-2).repeat_interleave(bk, dim=-1)[..., :n, :k]
    return q.float() * full


def moe_reference(x, w1, w2, topk_weights, topk_ids, w1_scale=None, w2_scale=None,
                  block_shape=(128, 128), emulate_bf16=True):
    """The MoE layer in fp32 torch; returns fp32 [M, H].

    x [M, H]; w1 [E, 2I, H]; w2 [E, H, I]; topk_weights [M, top_k]; topk_ids [M, top_k] (int).
    fp8 mode when w1 is float8_e4m3fn (then w1_scale / w2_scale are required): weights are
    dequantized per block_shape block, activations quantized per token and group of block_shape[1]
    columns and dequantized. emulate_bf16 rounds the three intermediates the Triton path stores in
    bf16 (first projection, silu(gate) * up, weighted second projection) so that fp8 activation
    quantization sees the same values; all arithmetic is fp32.
    """
    use_fp8 = w1.dtype == FP8_DTYPE
    if use_fp8 and (w1_scale is None or w2_scale is None):
        raise ValueError("fp8 weights need w1_scale and w2_scale")
    M, H = x.shape
    E, two_i, _ = w1.shape
    inter = two_i // 2
    top_k = topk_ids.shape[1]
    group = block_shape[1]

    def rounded(t):
        return t.to(torch.bfloat16).float() if emulate_bf16 else t

    def activations(t):
        """What the GEMM reads as A: fp32 values, through fp8 per-token-group quantization in fp8 mode."""
        if use_fp8:
            q, s = per_token_group_quant_fp8_torch(t, group)
            return dequant_per_token_group(q, s, group)
        return t.float()

    def weight(w, scale, e):
        return dequant_weight_block_fp8(w[e], scale[e], block_shape) if use_fp8 else w[e].float()

    a1 = activations(x)
    flat_ids = topk_ids.reshape(-1).long()
    flat_w = topk_weights.reshape(-1).float()
    token_of = torch.arange(M * top_k, device=x.device) // top_k
    out = torch.zeros(M, H, dtype=torch.float32, device=x.device)
    for e in torch.unique(flat_ids).tolist():
        sel = (flat_ids == e).nonzero().squeeze(1)
        tokens = token_of[sel]
        h = rounded(a1[tokens] @ weight(w1, w1_scale, e).t())                      # [n, 2I]
        act = h[:, :inter] * torch.sigmoid(h[:, :inter]) * h[:, inter:]
        act = act.to(torch.bfloat16) if emulate_bf16 else act
        y = activations(act) @ weight(w2, w2_scale, e).t()                        # [n, H]
        y = rounded(y * flat_w[sel][:, None])
        out.index_add_(0, tokens, y)
    return out
