"""GPU test of $TAOT_RECORD and `taot repro` on the MoE layer of examples/fused_moe: one bf16 layer
call through the generated module runs with the recorder on for the second launch of
fused_moe_kernel (GEMM 2, whose input GEMM 1 and silu_and_mul wrote); `taot repro` turns the
recording into a CMake project against the generated library, which must build and replay the
launch bitwise. Needs a GPU, torch and cmake; the build_module fixture (tests/gpu_modules.py) builds
the module."""
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

PROGRAM = f'''
import math
import sys

import torch

sys.path.insert(0, {str(EXAMPLE)!r})
import aot
import fused_moe as library

torch.manual_seed(0)
E, TOP_K, HIDDEN, INTER, TOKENS = 64, 8, 1024, 512, 128
w1 = (torch.randn(E, 2 * INTER, HIDDEN, device="cuda") / math.sqrt(HIDDEN)).to(torch.bfloat16)
w2 = (torch.randn(E, HIDDEN, INTER, device="cuda") / math.sqrt(INTER)).to(torch.bfloat16)
x = torch.randn(TOKENS, HIDDEN, device="cuda").to(torch.bfloat16)
probs = torch.softmax(torch.randn(TOKENS, E, device="cuda"), dim=-1)
topk_weights, topk_ids = torch.topk(probs, TOP_K, dim=-1)
topk_weights, topk_ids = topk_weights.float().contiguous(), topk_ids.to(torch.int32).contiguous()
aot.fused_moe(x, w1, w2, topk_weights, topk_ids, False, module=library)
torch.cuda.synchronize()
print("layer call done")
'''


def run(command, **kwargs):
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=900, **kwargs)
    assert result.returncode == 0, f"{command} failed ({result.returncode}):\n{result.stdout[-4000:]}\n" \
                                   f"{result.stderr[-4000:]}"
    return result

fused_moe = module_fixture("examples/fused_moe/fused_moe.toml")


def with_module(environment, built):
    """`environment` with the module's folder first on PYTHONPATH."""
    return dict(environment, PYTHONPATH=os.pathsep.join(
        filter(None, [str(built.module_dir), environment.get("PYTHONPATH")])))


def test_a_recorded_fused_moe_launch_replays_bitwise(fused_moe):
    with tempfile.TemporaryDirectory(prefix="taot-repro-") as folder:
        folder = Path(folder)
        program = folder / "moe_layer.py"
        program.write_text(PROGRAM)
        recorded = folder / "recorded"
        environment = dict(with_module(os.environ, fused_moe), TAOT_RECORD=str(recorded),
                           TAOT_RECORD_KERNEL="fused_moe_kernel", TAOT_RECORD_INDEX="1")
        layer = run([sys.executable, program], env=environment)
        assert "layer call done" in layer.stdout
        assert "taot record:" not in layer.stderr, layer.stderr
        launch = json.loads((recorded / "launch.json").read_text())
        assert launch["kernel"] == "fused_moe_kernel" and launch["launch_index"] == 1
        assert launch["status"] == "TAOT_OK" and launch["errors"] == []
        assert any(buffer["output"] and buffer.get("after") for buffer in launch["buffers"])
        taot = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [str(REPO / "python")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        out = folder / "repro"
        run([sys.executable, "-m", "taot", "repro", recorded, "-o", out, "--library", fused_moe.folder], env=taot)
        run(["cmake", "-S", out, "-B", out / "build", "-DCMAKE_BUILD_TYPE=Release"])
        run(["cmake", "--build", out / "build", "--target", "replay", "-j", str(os.cpu_count() or 4)])
        replayed = run([out / "build" / "replay"])
        assert "replay: bitwise equal" in replayed.stdout, replayed.stdout

