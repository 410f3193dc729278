# Before anything compiles: the manifest a build will write, less its images (a plan), checked by
# `taot gen --plan`, the code generator's own reader, so that whatever it would refuse (a name, a
# default, a key, a rule) is reported seconds after the spec is read instead of after the compile.
import re
import subprocess
import tempfile
from pathlib import Path

from ..compile import jobs
from ..errors import TaotError
from .manifest import build_manifest, render

_KERNEL_PATH = re.compile(r"\bkernels\[(\d+)\]")


def check_plan(library, taot_binary):
    """Runs `taot_binary gen --plan` over the library's plan. TaotError with gen's message, the
    spec file named and its first kernels[N] followed by the kernel's name."""
    hashes = {variant.id: jobs.variant_hash(jobs.variant_inputs(kernel, variant))
              for kernel in library.kernels for variant in library.variants[kernel.name]}
    with tempfile.TemporaryDirectory(prefix="taot-plan-") as folder:
        path = Path(folder) / "manifest.json"
        path.write_text(render(build_manifest(library, folder, hashes, images=False)))
        result = subprocess.run([str(taot_binary), "gen", "--plan", str(path)], capture_output=True, text=True)
    if result.returncode == 0:
        return
    message = result.stderr.strip().removeprefix("error: ").replace(f"{path}: ", "", 1) or \
        f"{taot_binary} gen --plan ended with exit status {result.returncode} and printed nothing"
    names = [kernel.name for kernel in library.kernels]
    message = _KERNEL_PATH.sub(lambda match: f"{match.group(0)} ({names[int(match.group(1))]})"
                               if int(match.group(1)) < len(names) else match.group(0), message, count=1)
    raise TaotError(f"{library.label}: taot gen would refuse the manifest this spec makes (checked before "
                    f"compiling): {message}")
