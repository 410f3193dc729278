# Shared helpers for the front-end tests: put python/ on sys.path, write kernels and specs to tmp dirs.
import copy
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

KERNEL_SOURCE = '''\
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr, ACC: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask).to(ACC)
    tl.store(out_ptr + offsets, (x * scale).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def other_kernel(x_ptr):
    pass


def plain_function(x):
    return x
'''

# 2 dtypes x 2 aligns x 2 hints x 2 BLOCKs x 2 num_warps = 32 variants.
BASE_SPEC = {
    "library": {"name": "scale", "targets": ["sm_90"]},
    "kernel": [{
        "name": "scale_kernel",
        "source": "kernel.py",
        "grid": ["cdiv(n, BLOCK)"],
        "types": {"T": ["fp32", "fp16"]},
        "args": {
            "x_ptr": {"type": "*T", "align": [16, "any"]},
            "out_ptr": "*T",
            "n": {"type": "i32", "hint": [16, "none"]},
            "scale": {"type": "fp32"},
            "BLOCK": {"constexpr": [64, 128]},
            "ACC": {"dtype": ["fp32"]},
        },
        "options": {"num_warps": [4, 8]},
        "default": {"BLOCK": 128, "num_warps": 4},
    }],
}


def base_spec():
    return copy.deepcopy(BASE_SPEC)


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return "{ " + ", ".join(f"{json.dumps(key)} = {toml_value(item)}" for key, item in value.items()) + " }"


def to_toml(spec):
    """TOML text for a spec dict: [library] and [[kernel]] tables whose entries are inline values."""
    lines = []
    for name, value in spec.items():
        tables = value if isinstance(value, list) and value and isinstance(value[0], dict) else None
        if tables is not None:
            for table in tables:
                lines.append(f"[[{name}]]")
                lines += [f"{json.dumps(key)} = {toml_value(item)}" for key, item in table.items()]
        elif isinstance(value, dict):
            lines.append(f"[{name}]")
            lines += [f"{json.dumps(key)} = {toml_value(item)}" for key, item in value.items()]
        else:
            lines.insert(0, f"{json.dumps(name)} = {toml_value(value)}")
    return "\n".join(lines) + "\n"


class Project:
    """A temporary folder holding kernel.py and spec files."""

    def __init__(self, root):
        self.root = root
        (root / "kernel.py").write_text(KERNEL_SOURCE)

    def write_spec(self, spec, name="spec.toml"):
        path = self.root / name
        path.write_text(to_toml(spec) if isinstance(spec, dict) else spec)
        return path

    def load(self, spec, name="spec.toml"):
        from taot.spec.validate import load_spec
        path = self.write_spec(spec, name)
        return load_spec(path, label=name)


@pytest.fixture
def project(tmp_path):
    return Project(tmp_path)
