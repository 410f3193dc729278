"""GPU test of `taot profile` on the MoE layer of examples/fused_moe through the generated module: two
layer calls in bf16 and two in fp8 run under `python -m taot profile --nvtx --json -o OUT.hatchet
--bench ...`; the report and the hatchet file read back must hold every kernel of the layer with the
launch count the layer makes, positive GPU times, the tuned table as the GEMM's step on the devices
it has tables for, and the GEMM's FLOPs from the bench file's call_shape (flops16 for bf16, flops8
for fp8) equal to 2 * tokens * top_k * N * K summed over its launches. Needs a GPU and torch; the
build_module fixture (tests/gpu_modules.py) builds the module."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "fused_moe"
pytestmark = pytest.mark.gpu
BENCH = REPO / "tests" / "python" / "profile_fixtures" / "bench_fused_moe_gemm.py"
E, TOP_K, HIDDEN, INTER, TOKENS, CALLS = 128, 8, 2048, 768, 256, 2
TUNED_DEVICES = ("NVIDIA H100 80GB HBM3", "NVIDIA H200")

PROGRAM = f'''
import math
import sys

import torch

sys.path.insert(0, {str(EXAMPLE)!r})
import aot
import fused_moe as library
import reference

torch.manual_seed(0)
E, TOP_K, HIDDEN, INTER, TOKENS, CALLS = {E}, {TOP_K}, {HIDDEN}, {INTER}, {TOKENS}, {CALLS}
w1 = torch.randn(E, 2 * INTER, HIDDEN, device="cuda") / math.sqrt(HIDDEN)
w2 = torch.randn(E, HIDDEN, INTER, device="cuda") / math.sqrt(INTER)
x = torch.randn(TOKENS, HIDDEN, device="cuda").to(torch.bfloat16)
probs = torch.softmax(torch.randn(TOKENS, E, device="cuda"), dim=-1)
topk_weights, topk_ids = torch.topk(probs, TOP_K, dim=-1)
topk_weights, topk_ids = topk_weights.float().contiguous(), topk_ids.to(torch.int32).contiguous()
for _ in range(CALLS):
    aot.fused_moe(x, w1.to(torch.bfloat16), w2.to(torch.bfloat16), topk_weights, topk_ids, False, module=library)
(q1, s1), (q2, s2) = reference.quantize_weight_block_fp8(w1), reference.quantize_weight_block_fp8(w2)
for _ in range(CALLS):
    aot.fused_moe(x, q1, q2, topk_weights, topk_ids, True, module=library, w1_scale=s1, w2_scale=s2)
torch.cuda.synchronize()
print("layer calls done")
'''

# Launches per layer call (examples/fused_moe/README.md): the quantization of x and of the GEMM's
# intermediate in fp8 only; the align kernels, both GEMMs, silu_and_mul and moe_sum always.
LAUNCHES = {"moe_align_count": 2 * CALLS, "moe_align_scan": 2 * CALLS, "moe_align_scatter": 2 * CALLS,
            "fused_moe_kernel": 4 * CALLS, "silu_and_mul": 2 * CALLS, "moe_sum": 2 * CALLS,
            "per_token_group_quant_fp8": 2 * CALLS}


def gemm_flops():
    """The FLOPs of the GEMMs of CALLS layer calls in one precision: GEMM 1 (N = 2I, K = H) and GEMM 2
    (N = H, K = I), each over tokens * top_k rows."""
    rows = TOKENS * TOP_K
    return CALLS * (2 * rows * 2 * INTER * HIDDEN + 2 * rows * HIDDEN * INTER)

fused_moe = module_fixture("examples/fused_moe/fused_moe.toml")


def profile(folder, built):
    program = Path(folder) / "moe_layer_program.py"
    program.write_text(PROGRAM)
    output = Path(folder) / "moe.hatchet"
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [
        str(REPO / "python"), str(built.module_dir), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-m", "taot", "profile", "--nvtx", "--json", "--bench", str(BENCH),
                             "-o", str(output), "--", str(program)],
                            env=environment, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"taot profile failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    assert "layer calls done" in result.stderr, result.stderr  # with --json, the program's output goes there
    return json.loads(result.stdout), json.loads(output.read_text()), output


def frames(node, depth=0):
    """(depth, frame) for every frame of a hatchet tree, depth-first."""
    yield depth, node
    for child in node["children"]:
        yield from frames(child, depth + 1)


def test_the_moe_layers_kernels_have_their_launch_counts_times_steps_and_gemm_flops(fused_moe):
    with tempfile.TemporaryDirectory(prefix="taot-profile-moe-") as folder:
        report, hatchet, output = profile(folder, fused_moe)
        assert report["outcome"] == "exited with code 0" and report["processes"] == 1, report["notes"]
        assert report["launches"] == report["timed"] == sum(LAUNCHES.values()), report["notes"]
        (library,) = report["tree"]["children"]
        assert library["name"] == "fused_moe"
        kernels = {kernel["name"]: kernel for kernel in library["children"]}
        assert {name: kernel["count"] for name, kernel in kernels.items()} == LAUNCHES
        for kernel in kernels.values():
            assert kernel["time_ns"] > 0 and kernel["min_ns"] > 0, kernel
        gemm_steps = kernels["fused_moe_kernel"]["steps"]
        if report["device"] in TUNED_DEVICES:
            assert gemm_steps == {"table": LAUNCHES["fused_moe_kernel"]}, gemm_steps
        assert kernels["fused_moe_kernel"]["flops"] == {"flops16": gemm_flops(), "flops8": gemm_flops()}

        # The hatchet file: Proton's layout, every variant a leaf with a count and a positive time.
        root, device_info = hatchet
        assert root["frame"]["name"] == "ROOT" and set(device_info) == {"CUDA"}
        leaves = [frame for depth, frame in frames(root) if depth == 3]
        assert sum(leaf["metrics"]["count"] for leaf in leaves) == sum(LAUNCHES.values())
        for leaf in leaves:
            assert leaf["metrics"]["time (ns)"] > 0 and leaf["metrics"]["device_type"] == "CUDA", leaf
        kernel_frames = {frame["frame"]["name"]: frame for depth, frame in frames(root) if depth == 2}
        assert set(kernel_frames) == set(LAUNCHES)
        for name, count in LAUNCHES.items():
            assert sum(leaf["metrics"]["count"] for leaf in kernel_frames[name]["children"]) == count, name

        # proton-viewer reads it (where hatchet is installed) and derives a rate for the GEMM.
        try:
            from triton.profiler import viewer
        except ImportError:
            print("hatchet is not installed: proton-viewer's reading of the file not checked")
            return
        gf, metrics = viewer.parse(["time/ms", "tflop16/s"], str(output))
        table = gf.dataframe.set_index("name")
        assert table.loc["fused_moe_kernel", "time/ms (inc)"] > 0
        assert table.loc["fused_moe_kernel", "tflop16/s (inc)"] > 0
