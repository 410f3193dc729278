"""MoE layer time, side by side: the layer through the taot module (examples/fused_moe/aot.py),
the same kernels and configs through Triton JIT (jit.py), and the plain-torch reference, for input
tokens {1, 1024, 2048, 4096, 8192}, E=128, top_k=8, hidden 2048, intermediate 768, bf16 and fp8.
The GEMM tile comes from the tuned table for the device (examples/fused_moe/tuned_configs/, vLLM's
format): the taot runtime looks it up by M, the JIT path applies vLLM's nearest-M rule to the same
file (the spec's default tile on a device without one); the tile column shows it.
End-to-end time per layer call (CPU launch cost included): triton.testing.do_bench median, ms.
Needs the generated module fused_moe on PYTHONPATH (scripts/gpu.sh bench builds it)."""
import math
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "fused_moe"))
import aot  # noqa: E402
import fused_moe as library  # noqa: E402  (the generated module)
import jit  # noqa: E402
import reference  # noqa: E402

E, TOP_K, HIDDEN, INTER = 128, 8, 2048, 768
TOKENS = (1, 1024, 2048, 4096, 8192)


def weights(use_fp8):
    w1 = torch.randn(E, 2 * INTER, HIDDEN, device="cuda") / math.sqrt(HIDDEN)
    w2 = torch.randn(E, HIDDEN, INTER, device="cuda") / math.sqrt(INTER)
    if not use_fp8:
        return w1.to(torch.bfloat16), w2.to(torch.bfloat16), None, None
    (q1, s1), (q2, s2) = reference.quantize_weight_block_fp8(w1), reference.quantize_weight_block_fp8(w2)
    return q1, q2, s1, s2


def main():
    torch.manual_seed(0)
    print(f"MoE layer, E={E} top_k={TOP_K} hidden={HIDDEN} intermediate={INTER}, {torch.cuda.get_device_name()}")
    print("median ms per layer call (do_bench), same kernels and configs for taot and JIT")
    print(f"{'dtype':6} {'tokens':>6} {'tile':>20} {'taot':>9} {'JIT':>9} {'torch ref':>10} {'taot/JIT':>9} "
          f"{'max |taot-JIT|':>15}")
    for use_fp8 in (False, True):
        w1, w2, s1, s2 = weights(use_fp8)
        for tokens in TOKENS:
            x = torch.randn(tokens, HIDDEN, device="cuda").to(torch.bfloat16)
            probs = torch.softmax(torch.randn(tokens, E, device="cuda"), dim=-1)
            topk_weights, topk_ids = torch.topk(probs, TOP_K, dim=-1)
            topk_weights, topk_ids = topk_weights.float().contiguous(), topk_ids.to(torch.int32).contiguous()
            options = dict(w1_scale=s1, w2_scale=s2)
            args = (x, w1, w2, topk_weights, topk_ids, use_fp8)
            run_taot = lambda: aot.fused_moe(*args, module=library, **options)  # noqa: E731
            run_jit = lambda: jit.fused_moe_jit(*args, **options)  # noqa: E731
            run_ref = lambda: reference.moe_reference(x, w1, w2, topk_weights, topk_ids, s1, s2)  # noqa: E731
            difference = (run_taot().float() - run_jit().float()).abs().max().item()
            taot_ms = triton.testing.do_bench(run_taot, warmup=50, rep=300, return_mode="median")
            jit_ms = triton.testing.do_bench(run_jit, warmup=50, rep=300, return_mode="median")
            ref_ms = triton.testing.do_bench(run_ref, warmup=5, rep=100, return_mode="median")
            tile = jit.vllm_config(tokens, torch.cuda.get_device_name()) or jit.DEFAULT_GEMM_CONFIG
            tile = "m{BLOCK_SIZE_M} n{BLOCK_SIZE_N} g{GROUP_SIZE_M} w{num_warps}".format(**tile)
            print(f"{'fp8' if use_fp8 else 'bf16':6} {tokens:6} {tile:>20} {taot_ms:9.3f} {jit_ms:9.3f} {ref_ms:10.3f} "
                  f"{taot_ms / jit_ms:9.3f} {difference:15.3g}")


if __name__ == "__main__":
    main()
