"""A small library for the workbench tests (taot inspect, taot diff): a row softmax whose 8192-wide
variant spills under maxnreg 32, with a helper function that Triton inlines; 2 block sizes x 2
register caps x 2 targets = 8 images. And the NVIDIA tools Triton ships, as references."""
import re
import subprocess
import textwrap
from pathlib import Path

KERNEL_FILE = "workbench_kernels.py"
KERNEL_SOURCE = textwrap.dedent('''\
    # Row softmax over one block: every element stays live across two reductions, so a small maxnreg
    # makes ptxas spill.
    import triton
    import triton.language as tl


    @triton.jit
    def _exp_shifted(x, shift):
        return tl.exp(x - shift)


    @triton.jit
    def softmax_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask, other=-float("inf"))
        numerator = _exp_shifted(x, tl.max(x, axis=0))
        y = numerator / tl.sum(numerator, axis=0)
        tl.store(y_ptr + offsets, y, mask=mask)
    ''')

SPEC = textwrap.dedent(f'''\
    [library]
    name = "wb_softmax"
    targets = ["sm_80", "sm_90"]

    [[kernel]]
    name = "softmax_kernel"
    source = "{KERNEL_FILE}"
    grid = ["1"]

    [kernel.args]
    x_ptr = {{ type = "*fp32", align = 16 }}
    y_ptr = {{ type = "*fp32", align = 16 }}
    n = {{ type = "i32", hint = 16 }}
    BLOCK = {{ constexpr = [1024, 8192] }}

    [kernel.options]
    num_warps = [4]
    maxnreg = [32, 255]

    [kernel.default]
    BLOCK = 1024
    maxnreg = 255
    ''')


def source_line(number):
    """Line `number` (1-based) of the kernel file, stripped."""
    return KERNEL_SOURCE.splitlines()[number - 1].strip()


def build_library(taot_bin, root):
    """Writes the kernel and spec under `root` and builds the library into root/lib."""
    (root / KERNEL_FILE).write_text(KERNEL_SOURCE)
    (root / "spec.toml").write_text(SPEC)
    built = subprocess.run([str(taot_bin), "build", str(root / "spec.toml"), "-o", str(root / "lib"), "-q"],
                           capture_output=True, text=True, timeout=900)
    assert built.returncode == 0, built.stderr[-4000:]
    return root / "lib"


def triton_tool(name):
    import triton.backends.nvidia
    return Path(triton.backends.nvidia.__file__).parent / "bin" / name


_USAGE = re.compile(r"REG:(\d+) STACK:(\d+) SHARED:(\d+) LOCAL:(\d+)")


def cuobjdump_usage(cubin):
    """cuobjdump --dump-resource-usage of a one-kernel cubin: {"REG", "STACK", "SHARED", "LOCAL"}."""
    out = subprocess.run([str(triton_tool("cuobjdump")), "--dump-resource-usage", str(cubin)], capture_output=True,
                         text=True, check=True).stdout
    found = _USAGE.findall(out)
    assert len(found) == 1, out
    return dict(zip(("REG", "STACK", "SHARED", "LOCAL"), map(int, found[0])))


def images(manifest):
    """(variant id, config, image) for every image of the manifest (a dict)."""
    return [(variant["id"], variant["config"], image) for kernel in manifest["kernels"]
            for variant in kernel["variants"] for image in variant["images"]]
