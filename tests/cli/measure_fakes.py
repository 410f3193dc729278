"""A library for the measuring commands' tests without a GPU or a build: a manifest.json and an
importable module `fakeadd` and the kernel's source beside it (the way `taot bench fakeadd` finds a generated module on
sys.path), whose kernel add_kernel lists two variants. Nothing in it launches: the tests stop at the
checks made before any GPU work."""
import json
import textwrap

MODULE = '''
class _Kernel:
    def variants(self):
        return [{"index": 0, "id": "add_kernel_BS512", "config": {"BLOCK_SIZE": 512}},
                {"index": 1, "id": "add_kernel_BS1024", "config": {"BLOCK_SIZE": 1024}}]

    def choose(self, *args, variant=None):
        raise AssertionError("the fake library launches nothing")

    __call__ = time = choose


add_kernel = _Kernel()
'''

KERNELS = '''
import triton
import triton.language as tl


@triton.jit
def add_kernel(x_ptr, out_ptr, n, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
'''

BENCH = '''
LIBRARY = {library!r}
KERNEL = {kernel!r}
DIMS = ("n",)
SHAPES = [1024, 4096]


def make_args(shape, device):
{make_args}


def reference(x, out, n):
    return x
'''


def fake_library(folder):
    """Writes the library into `folder` (a PYTHONPATH entry); returns its name."""
    manifest = {"schema": "taot.manifest", "schema_version": 2, "library": "fakeadd", "kernels": [{
        "name": "add_kernel", "function": "add_kernel", "source": "kernels.py",
        "args": [{"name": "x_ptr", "kind": "pointer", "dtypes": ["fp32"]},
                 {"name": "out_ptr", "kind": "pointer", "dtypes": ["fp32"], "output": True},
                 {"name": "n", "kind": "int", "types": ["i32"]},
                 {"name": "BLOCK_SIZE", "kind": "constexpr"}],
        "config": [{"name": "BLOCK_SIZE", "kind": "int", "values": [512, 1024], "default": 1024}],
        "variants": [{"id": "add_kernel_BS512", "grid": ["n"]}, {"id": "add_kernel_BS1024", "grid": ["n"]}]}]}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "fakeadd.py").write_text(MODULE)
    (folder / "kernels.py").write_text(KERNELS)
    return "fakeadd"


MAKE_ARGS = """import torch
x = torch.rand(shape["n"], device=device)
return x, torch.empty_like(x), shape["n"]"""


def bench_file(path, *, library="fakeadd", kernel="add_kernel", make_args=MAKE_ARGS):
    """Writes a bench file for the fake library; `make_args` is its body."""
    path.write_text(BENCH.format(library=library, kernel=kernel, make_args=textwrap.indent(make_args, "    ")))
    return path


# What `import torch` meets in a Python without torch: the error Python raises for a module that is
# not installed (ModuleNotFoundError naming "torch"), whatever the Python running the tests has.
NO_TORCH = '''raise ModuleNotFoundError("No module named 'torch'", name="torch")
'''

# torch on a machine without a GPU: it sees no device, and making a CUDA tensor fails as torch's does.
TORCH_WITHOUT_GPU = '''__version__ = "2.0.fake"


class cuda:
    @staticmethod
    def is_available():
        return False


def rand(*shape, device=None, **options):
    raise RuntimeError("Found no NVIDIA driver on your system.")
'''


def torch_stand_in(folder, text):
    """Writes `text` as folder/torch.py, which shadows any installed torch when `folder` is first on
    PYTHONPATH; returns the folder."""
    folder.mkdir(exist_ok=True)
    (folder / "torch.py").write_text(text)
    return folder
