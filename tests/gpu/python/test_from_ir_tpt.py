"""GPU: the edit-IR loop end to end with `taot from-ir`. A JIT program runs scale_kernel (x * 3) with
a private Triton cache; its TTIR, taken from the cache and edited to multiply by 5, is rebuilt and
swapped into the cache entry, and the same JIT program then computes x * 5 (no recompile: the cache
hit loads the swapped kernel). The same edit through Triton's override directory, and through the
generated library's Python module (x * 5 with the override, x * 3 again after --drop). Needs torch
on a CUDA GPU, the taot binary ($TAOT_BIN, else build/tools/taot/taot of this checkout), CMake and
nanobind."""
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from gpu_modules import torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[3]
TAOT = os.environ.get("TAOT_BIN") or str(REPO / "build" / "tools" / "taot" / "taot")

KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 3.0, mask=mask)
''')

# One variant: what the JIT program's call specializes to (torch's allocations are 16-aligned;
# n = 1000 is neither 1 nor a multiple of 16).
SPEC = textwrap.dedent('''
    [library]
    name = "scale"
    targets = ["{target}"]

    [[kernel]]
    name = "scale_kernel"
    source = "kernels.py"
    grid = ["cdiv(n, BLOCK)", 1, 1]

    [kernel.args]
    x_ptr = {{ type = "*fp32", align = [16] }}
    out_ptr = {{ type = "*fp32", align = [16] }}
    n = {{ type = "i32", hint = ["none"] }}
    BLOCK = {{ constexpr = [128] }}

    [kernel.options]
    num_warps = [4]
''')

# Prints the distinct values of out / x after one launch: [3.0] for the kernel as written.
JIT_PROGRAM = textwrap.dedent('''
    import json, sys
    import torch, triton
    sys.path.insert(0, sys.argv[1])
    from kernels import scale_kernel
    n = 1000
    x = torch.arange(1, n + 1, device="cuda", dtype=torch.float32)
    out = torch.zeros_like(x)
    scale_kernel[(triton.cdiv(n, 128),)](x, out, n, BLOCK=128)
    torch.cuda.synchronize()
    print(json.dumps(sorted(set((out / x).tolist()))))
''')

MODULE_PROGRAM = textwrap.dedent('''
    import json
    import torch
    import scale
    n = 1000
    x = torch.arange(1, n + 1, device="cuda", dtype=torch.float32)
    out = torch.zeros_like(x)
    scale.scale_kernel(x, out, n)
    torch.cuda.synchronize()
    print(json.dumps(sorted(set((out / x).tolist()))))
''')


def run(command, cwd, **environment):
    done = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, **environment))
    assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


def ratios(program, cwd, *arguments, **environment):
    """What a program printed last: the distinct values of out / x."""
    done = run([sys.executable, "-c", program, *arguments], cwd, **environment)
    return json.loads(done.stdout.strip().splitlines()[-1])


def cmake_build_library(root):
    """Configure and build the generated library with its Python module into lib/build."""
    build = root / "lib" / "build"
    run(["cmake", "-S", root / "lib", "-B", build, "-DCMAKE_BUILD_TYPE=Release", f"-DTAOT_SOURCE_DIR={REPO}",
         f"-DPython_EXECUTABLE={sys.executable}"], root)
    run(["cmake", "--build", build, "-j", str(os.cpu_count() or 4)], root)
    return build


def test_edit_ir_loop_through_the_jit_cache_the_override_dir_and_the_library():
    major, minor = torch.cuda.get_device_capability()
    with tempfile.TemporaryDirectory(prefix="taot-from-ir-gpu-") as scratch:
        root = Path(scratch)
        (root / "kernels.py").write_text(KERNEL)
        (root / "scale.toml").write_text(SPEC.format(target=f"sm_{major}{minor}"))
        cache = root / "cache"

        assert ratios(JIT_PROGRAM, root, root, TRITON_CACHE_DIR=str(cache)) == [3.0]
        jit_ttir = list(cache.glob("*/scale_kernel.ttir"))
        assert len(jit_ttir) == 1, jit_ttir
        text = jit_ttir[0].read_text()
        assert text.count("3.000000e+00") == 1, text
        (root / "times5.ttir").write_text(text.replace("3.000000e+00", "5.000000e+00"))

        run([TAOT, "build", "scale.toml", "-o", "lib", "-q"], root)
        variant = json.loads((root / "lib" / "manifest.json").read_text())["kernels"][0]["variants"][0]["id"]

        # Into the JIT's cache entry (the variant picks the entry compiled from its TTIR).
        run([TAOT, "from-ir", "times5.ttir", "--triton-cache", cache, "--variant", variant, "-o", "lib"], root)
        assert ratios(JIT_PROGRAM, root, root, TRITON_CACHE_DIR=str(cache)) == [5.0]

        # Into Triton's override directory: a fresh cache, Triton compiles and takes the override.
        done = run([TAOT, "from-ir", "times5.ttir", "--override-dir", "override", "--variant", variant, "-o", "lib",
                    "--json"], root)
        environment = json.loads(done.stdout)["environment"]
        assert ratios(JIT_PROGRAM, root, root, TRITON_CACHE_DIR=str(root / "fresh"), **environment) == [5.0]
        assert ratios(JIT_PROGRAM, root, root, TRITON_CACHE_DIR=str(root / "fresh2")) == [3.0]

        # Into the library: the generated module runs the rebuilt kernel, a rebuild keeps it, --drop restores.
        run([TAOT, "from-ir", "times5.ttir", "--variant", variant, "-o", "lib"], root)
        kept = run([TAOT, "build", "scale.toml", "-o", "lib", "--python"], root)
        assert "kept the kernel taot from-ir rebuilt from an edited ttir" in kept.stderr
        build = cmake_build_library(root)
        module_path = os.pathsep.join(filter(None, [str(build), os.environ.get("PYTHONPATH")]))
        assert ratios(MODULE_PROGRAM, root, PYTHONPATH=module_path) == [5.0]
        run([TAOT, "from-ir", "--drop", "--variant", variant, "-o", "lib"], root)
        cmake_build_library(root)
        assert ratios(MODULE_PROGRAM, root, PYTHONPATH=module_path) == [3.0]
