# GPU tests of the MoE layer through the taot library (aot.py): against the plain-torch reference
# and against the same kernels through Triton JIT; the GEMM's tile config from the tuned table baked
# into the library, for every M from 1 to 8192 the one vLLM's rule picks from the same file. The
# module `fused_moe` is built from fused_moe.toml by the build_module fixture (tests/gpu_modules.py).
# Skipped without torch or a GPU.
import json
from pathlib import Path

import pytest

import test_fused_moe_gpu as base
from example_support import chosen, gpu_marks  # on sys.path through conftest.py
from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py
from test_fused_moe_gpu import SKIP_REASON

pytestmark = gpu_marks(SKIP_REASON)
HERE = Path(__file__).resolve().parent

if SKIP_REASON is None:
    import torch

    import aot
    import jit as moe_jit
    import reference as ref

library = None  # the generated module, set by fused_moe_module
fused_moe_module = module_fixture(HERE / "fused_moe.toml", bind="library")


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


def check_against_reference_and_jit(layer, use_fp8, config, label):
    """The AOT layer against the reference, then against the JIT layer (printed: bitwise or not)."""
    aot_out = check_against_reference(layer, use_fp8, config)
    jit_out = run(layer, use_fp8, config, launch_aot=False)
    print(f"[aot vs jit] {label} {'fp8' if use_fp8 else 'bf16'}: bitwise equal {torch.equal(aot_out, jit_out)}, "
          f"relative difference {base.rel_err(aot_out, jit_out):.2e}")
    assert base.rel_err(aot_out, jit_out) < 1e-2


@pytest.mark.parametrize("config", [base.SMALL_CONFIG, base.LARGE_CONFIG], ids=base.config_id)
@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("M", [7, 300])
def test_aot_matches_jit(M, use_fp8, config):
    base.seed("aot vs jit", M, use_fp8, base.config_id(config))
    layer = base.make_layer(M, 8, 2, H=1024, I=512, use_fp8=use_fp8)
    check_against_reference_and_jit(layer, use_fp8, config, f"M={M} {base.config_id(config)}")


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


# ---------------------------------------------------------------------------------------------------
# The tuned table: vLLM's file for this device, baked into the library
# ---------------------------------------------------------------------------------------------------

def device_table():
    """{M key: tile config} of this device's file in tuned_configs/, as vLLM reads it (file order);
    skips when the device has none."""
    name = torch.cuda.get_device_name()
    path = moe_jit.tuned_config_file(name)
    if not path.is_file():
        pytest.skip(f"no tuned table for {name!r} in {path.parent.name}/ (it has "
                    f"{', '.join(sorted(p.name for p in path.parent.glob('*.json')))})")
    return read_table(path)


def read_table(path):
    """{M key: tile config} of a vLLM file, as vLLM reads it (int keys, in file order)."""
    return {int(key): value for key, value in json.loads(path.read_text()).items()}


def vllm_rule(table, M):
    """vLLM's choice: the entry whose key is nearest to M; `min` keeps the first, the smaller key on a tie."""
    return table[min(table, key=lambda key: abs(key - M))]


def gemm_call(use_fp8, mul_routed_weight):
    """(arguments(M), implied fields) of a GEMM of the layer, the first (top_k 8, no routing weights)
    or the second (top_k 1, routing weights): the call's arguments for a layer of M tokens
    (num_valid_tokens = M * 8, M last), and the fields the JIT passes for it. The buffers are small:
    `choose` launches nothing, so only dtypes, alignment and the sizes matter."""
    layer = base.make_layer(7, 8, 8, H=1024, I=512, use_fp8=use_fp8)
    a, a_scale = layer["x"], None
    if use_fp8:
        a, a_scale = torch.empty(7, 1024, dtype=ref.FP8_DTYPE, device="cuda"), torch.ones(7, 8, device="cuda")
    sorted_len, blocks_len = moe_jit.align_buffer_capacity(56, 8)
    index_buffers = (torch.zeros(sorted_len, dtype=torch.int32, device="cuda"),
                     torch.zeros(blocks_len, dtype=torch.int32, device="cuda"),
                     torch.zeros(1, dtype=torch.int32, device="cuda"))
    c = torch.empty(56, 1024, dtype=torch.bfloat16, device="cuda")
    args, implied, _ = moe_jit.fused_moe_kernel_arguments(
        a, layer["w1"], c, a_scale, layer["w1_scale"], layer["topk_weights"], *index_buffers, mul_routed_weight,
        1 if mul_routed_weight else 8, use_fp8)

    def arguments(M):
        return args[:12] + (M * 8,) + args[13:] + (M,)     # num_valid_tokens is argument 12
    return arguments, aot.by_name(implied)


@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
def test_table_choice_matches_vllm_for_every_M(use_fp8):
    """For M = 1 .. 8192, both GEMMs of the layer (top_k 8 without routing weights, top_k 1 with
    them), called as the layer calls them, without a config: `choose` reports step "table", the tile
    config vLLM's nearest-M rule picks from the same file, and the precision, top_k and
    MUL_ROUTED_WEIGHT the JIT path passes, which the library derives from the arguments."""
    table = device_table()
    mismatches, checked = [], 0
    for mul_routed_weight in (False, True):
        arguments, implied = gemm_call(use_fp8, mul_routed_weight)
        for M in range(1, 8193):
            got = chosen(library.fused_moe_kernel, *arguments(M))
            want = ({**vllm_rule(table, M), **implied}, "table")
            checked += 1
            if got != want:
                mismatches.append((M, implied["top_k"], got, want))
    assert not mismatches, f"{len(mismatches)} of {checked} choices differ from vLLM's rule " \
                           f"(M, top_k, got, vLLM): {mismatches[:5]}"


@pytest.mark.parametrize("use_fp8", [False, True], ids=["bf16", "fp8"])
@pytest.mark.parametrize("M", [1, 20, 300, 2048])
def test_layer_with_the_table_config(M, use_fp8):
    """The example's model shape (E=128, top_k=8, hidden 2048, intermediate 768) with no config
    passed: the tile comes from the table (M=20 is a tie between keys 16 and 24 in the H100 file),
    the align step uses its BLOCK_SIZE_M; against the reference, and bitwise against the JIT
    path, which picks the same tile with vLLM's rule."""
    table = device_table()
    base.seed("table layer", M, use_fp8)
    layer = base.make_layer(M, 128, 8, H=2048, I=768, use_fp8=use_fp8)
    tile = base.config_id(vllm_rule(table, M))
    check_against_reference_and_jit(layer, use_fp8, None, f"M={M} E=128 top_k=8 table {tile}")


def test_a_table_loaded_at_run_time_replaces_the_baked_one():
    """load_tuning() with the H200 file, named for this device, serves every later call (step
    "table", vLLM's rule over that file); reset_tuning() brings back the baked table, or on a
    device without one the heuristics' step (the spec's default tile)."""
    name = torch.cuda.get_device_name()
    h200 = read_table(moe_jit.tuned_config_file("NVIDIA H200"))
    baked = moe_jit.tuned_config_file(name)
    kernel = library.fused_moe_kernel
    arguments, implied = gemm_call(use_fp8=False, mul_routed_weight=False)
    try:
        kernel.load_tuning(str(moe_jit.tuned_config_file("NVIDIA H200")), device=name)
        for M in (1, 12, 20, 200, 1280, 8192):
            assert chosen(kernel, *arguments(M)) == ({**vllm_rule(h200, M), **implied}, "table"), M
    finally:
        kernel.reset_tuning()
    for M in (1, 12, 20, 200, 1280, 8192):
        config, step = chosen(kernel, *arguments(M))
        if baked.is_file():
            assert (config, step) == ({**vllm_rule(read_table(baked), M), **implied}, "table"), M
        else:
            assert step == "heuristics" and config == {**moe_jit.DEFAULT_GEMM_CONFIG, **implied}, M
