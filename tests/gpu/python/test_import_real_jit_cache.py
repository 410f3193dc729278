"""GPU test of `taot import-cache` on a cache Triton's JIT really wrote: a program launches three
kernels on the GPU as projects write them (an @triton.autotune one, whose first call of each key
value times every config; a @triton.heuristics one on a pointer passed as None; a plain one), with
sizes that are and are not multiples of 16; every entry the JIT left must be imported exactly, its
cubin the library's, and the spec written beside it must compile the same cubins afresh."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.gpu

KERNELS = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask),
                 mask=mask)


    @triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4),
                              triton.Config({"BLOCK": 1024}, num_warps=8, num_stages=2)], key=["n"])
    @triton.jit
    def scale(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


    @triton.heuristics(values={"HAS_BIAS": lambda args: args["bias_ptr"] is not None})
    @triton.jit
    def rows(x_ptr, bias_ptr, out_ptr, stride, n_cols, HAS_BIAS: tl.constexpr, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * stride + cols, mask=mask)
        if HAS_BIAS:
            x += tl.load(bias_ptr + cols, mask=mask)
        tl.store(out_ptr + row * stride + cols, x, mask=mask)
''')

PROGRAM = textwrap.dedent('''
    import sys
    import torch
    import triton
    sys.path.insert(0, sys.argv[1])
    import kernels
    for n in (1000, 4096, 100003):
        x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        kernels.add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        kernels.scale[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, 2.0)
        rows, cols = 8, n // 8 if n % 8 == 0 else 100
        matrix = torch.randn(rows, cols, device="cuda")
        bias = torch.randn(cols, device="cuda") if n != 1000 else None
        kernels.rows[(rows,)](matrix, bias, torch.empty_like(matrix), matrix.stride(0), cols,
                              BLOCK=triton.next_power_of_2(cols))
    torch.cuda.synchronize()
''')


def cubins(paths):
    return sorted(Path(path).read_bytes() for path in paths)


def test_every_entry_a_real_program_left_is_imported_exactly(tmp_path):
    taot = os.environ.get("TAOT_BIN", str(REPO / "build" / "tools" / "taot" / "taot"))
    (tmp_path / "kernels.py").write_text(KERNELS)
    (tmp_path / "program.py").write_text(PROGRAM)
    cache = tmp_path / "cache"
    ran = subprocess.run([sys.executable, str(tmp_path / "program.py"), str(tmp_path)], capture_output=True,
                         text=True, timeout=600, env={**os.environ, "TRITON_CACHE_DIR": str(cache)})
    assert ran.returncode == 0, ran.stderr[-3000:]
    entries = list(cache.glob("*/*.cubin"))
    out = tmp_path / "lib"
    imported = subprocess.run([taot, "import-cache", str(cache), "-o", str(out), "--grid", "add=cdiv(n, BLOCK)",
                               "--grid", "scale=cdiv(n, BLOCK)", "--grid", "rows=1"],
                              capture_output=True, text=True, timeout=600)
    assert imported.returncode == 0, imported.stderr[-3000:]
    print(imported.stderr)
    kernels = [line for line in imported.stderr.splitlines() if " cache entr" in line]
    assert len(kernels) == 3 and all(line.endswith("imported exactly") for line in kernels), kernels
    assert "left out" not in imported.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    images = [out / image["cubin"] for kernel in manifest["kernels"] for variant in kernel["variants"]
              for image in variant["images"]]
    assert cubins(images) == cubins(entries), f"{len(images)} images, {len(entries)} cache entries"
    fresh = subprocess.run([taot, "compile", str(out / "lib.toml"), "-o", str(tmp_path / "fresh")],
                           capture_output=True, text=True, timeout=600)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    again = json.loads((tmp_path / "fresh" / "manifest.json").read_text())
    assert cubins(tmp_path / "fresh" / image["cubin"] for kernel in again["kernels"] for variant in kernel["variants"]
                  for image in variant["images"]) == cubins(images)
