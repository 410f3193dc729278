# GPU tests of the MoE layer through the taot library (aot.py): against the plain-torch reference
# and against the same kernels through Triton JIT. The module `fused_moe` (taot build fused_moe.toml
# --python) must be on PYTHONPATH; scripts/gpu_suite.sh builds it. Skipped without torch or a GPU.
import pytest

import test_fused_moe_gpu as base
from example_support import gpu_marks  # on sys.path through conftest.py
from test_fused_moe_gpu import SKIP_REASON

pytestmark = gpu_marks(SKIP_REASON)

if SKIP_REASON is None:
    import torch

    import aot
    import fused_moe as library  # the generated module
    import jit as moe_jit
    import reference as ref


def run(layer, use_fp8, config, launch_aot):
    M, H = layer["x"].shape
    out = torch.full((M, H), float("nan"), dtype=torch.bfloat16, device="cuda")
    args = (layer["x"], layer["w1"], layer["w2"], layer["topk_weights"], layer["topk_ids"], use_fp8)
    options = dict(config=config, w1_scale=layer["w1_scale"], w2_scale=layer["w2_scale"], out=out, poison=True)
    if launch_aot:
        aot.fused_moe(*args, module=library, **options)
    else:
        moe_jit.fused_moe_jit(*args, **options)
    torch.cuda.synchronize()
    return out


def check_against_reference(layer, use_fp8, config):
    out = run(layer, use_fp8, config, launch_aot=True)
    assert torch.isfinite(out).all(), "non-finite outputs: a missed write or a wrong expert"
    expected = ref.moe_reference(layer["x"], layer["w1"], layer["w2"], layer["topk_weights"], layer["topk_ids"],
                                 layer["w1_scale"], layer["w2_scale"])
    err = base.rel_err(out, expected)
    assert err < (base.FP8_TOL if use_fp8 else base.BF16_TOL), f"relative error {err:.3e}"
    return out


@pytest.mark.parametrize("config", [base.SMALL_CONFIG, base.LARGE_CONFIG], ids=base.config_id)
@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("M", [7, 300])
def test_aot_matches_jit(M, use_fp8, config):
    base.seed("aot vs jit", M, use_fp8, base.config_id(config))
    layer = base.make_layer(M, 8, 2, H=1024, I=512, use_fp8=use_fp8)
    aot_out = check_against_reference(layer, use_fp8, config)
    jit_out = run(layer, use_fp8, config, launch_aot=False)
    print(f"[aot vs jit] M={M} {'fp8' if use_fp8 else 'bf16'} {base.config_id(config)}: "
          f"bitwise equal {torch.equal(aot_out, jit_out)}, relative difference {base.rel_err(aot_out, jit_out):.2e}")
    assert base.rel_err(aot_out, jit_out) < 1e-2


def test_aot_seed_case_fp8():
    base.seed("aot seed case")
    layer = base.make_layer(M=7, E=256, top_k=1, H=7168, I=4608, use_fp8=True)
    check_against_reference(layer, True, base.SEED_CONFIG)
    layer.clear()
    torch.cuda.empty_cache()


@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("top_k", [1, 2, 6, 8])
@pytest.mark.parametrize("E", [8, 128])
@pytest.mark.parametrize("M", [1, 7, 83, 512, 2048])
def test_aot_layer_sweep(M, E, top_k, use_fp8):
    base.seed("aot sweep", M, E, top_k, use_fp8)
    check_against_reference(base.make_layer(M, E, top_k, H=1024, I=512, use_fp8=use_fp8), use_fp8, None)
