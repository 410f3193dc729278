"""Compiles vector_add's add_kernel with Triton's JIT (fp32, BLOCK_SIZE 1024, 4 warps) on this GPU,
writes its cubin, and runs bench_launch_methods on it (the binary's path is the first argument)."""
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "vector_add"))
from vector_add import add_kernel  # noqa: E402

n = 1024
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
out = torch.empty_like(x)
compiled = add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024, num_warps=4)
cubin = Path(tempfile.mkdtemp()) / "add_kernel.cubin"
cubin.write_bytes(compiled.asm["cubin"])
subprocess.run([sys.argv[1], str(cubin), compiled.name, str(compiled.metadata.shared), "4"], check=True)
