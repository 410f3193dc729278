"""Tensor-descriptor arguments of a generated Python module, built here without a GPU (the
launch_features library of tests/gpu): what the module accepts as a descriptor (Triton
TensorDescriptor-like objects, arrays with __cuda_array_interface__ or a DLPack exchange table)
gets as far as the driver; everything else is refused naming the argument and the problem."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "tests" / "gpu" / "launch_features" / "launch_features.toml"


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory, taot_bin):
    out = tmp_path_factory.mktemp("launch_features_python")
    result = subprocess.run([str(taot_bin), "build", str(SPEC), "-o", str(out), "--python", "--build-library",
                             "-j", str(os.cpu_count() or 2), "--quiet"],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out / "build"


PRELUDE = """
    import launch_features as lf
    from dlpack_fakes import ExchangeTensor

    class CudaArray:
        def __init__(self, address, typestr, shape, strides=None):
            self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": shape,
                                             "strides": strides, "version": 3}

    class HostArray:
        __array_interface__ = {"data": (0, False), "typestr": "<f2", "shape": (64, 32), "version": 3}

    class Descriptor:  # the attributes of triton.tools.tensor_descriptor.TensorDescriptor
        def __init__(self, base, shape, strides, block_shape, padding="zero"):
            self.base, self.shape, self.strides = base, shape, strides
            self.block_shape, self.padding = block_shape, padding

    x = CudaArray(0x7f0000001000, "<f2", (64, 32))
    out = CudaArray(0x7f0000002000, "<f2", (64, 32))

    def error_of(call):
        try:
            call()
        except Exception as error:
            return f"{type(error).__name__}: {error}"
        return "no error"
"""


def check(module_dir, body):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(module_dir), str(Path(__file__).parent),
                                                        os.environ["PYTHONPATH"]])}
    code = textwrap.dedent(PRELUDE) + textwrap.dedent(body)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def test_variants_describe_the_descriptor_blocks(module_dir):
    lines = check(module_dir, """
        for variant in lf.host_descriptor_scale_variants():
            print(variant["description"])
    """)
    assert lines[0] == ("in_desc: fp16 block [64, 32], out_desc: fp16 block [64, 32], M: i32, N: i32; BM=64 BN=32; "
                        "sm_90"), lines


def test_accepted_descriptors_reach_the_driver(module_dir):
    lines = check(module_dir, """
        calls = [
            lambda: lf.host_descriptor_scale(x, out, 64, 32),
            lambda: lf.host_descriptor_scale(Descriptor(x, [64, 32], [32, 1], [128, 32]), out, 64, 32),
            lambda: lf.host_descriptor_scale(ExchangeTensor(0x7f0000003000, "fp16", (64, 32)), out, 64, 32),
            lambda: lf.host_descriptor_scale(CudaArray(0x7f0000001000, "<f2", (64, 32), (128, 2)), out, 64, 32),
        ]
        for call in calls:
            print(error_of(call))
    """)
    assert len(lines) == 4
    for line in lines:
        assert line.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), line


@pytest.mark.parametrize("call, expected", [
    ("lf.host_descriptor_scale(3, out, 64, 32)",
     "TypeError: launch_features.host_descriptor_scale: in_desc: expected a tensor descriptor (an object with base, "
     "shape, strides and block_shape, such as triton.tools.tensor_descriptor.TensorDescriptor) or a CUDA array "
     "(a torch tensor or an object with __cuda_array_interface__), got int"),
    ("lf.host_descriptor_scale(x, CudaArray(0x7f0000002000, '<f2', (2048,)), 64, 32)",
     "ValueError: launch_features.host_descriptor_scale: out_desc: expected a 2-D array (the descriptor's rank), "
     "got shape (2048,)"),
    ("lf.host_descriptor_scale(HostArray(), out, 64, 32)",
     "TypeError: launch_features.host_descriptor_scale: in_desc: expected a tensor descriptor"),
    ("lf.host_descriptor_scale(Descriptor(HostArray(), [64, 32], [32, 1], [64, 32]), out, 64, 32)",
     "TypeError: launch_features.host_descriptor_scale: in_desc: expected a tensor descriptor"),
    ("lf.host_descriptor_scale(Descriptor(x, [64, 32], [32, 1], [64]), out, 64, 32)",
     "ValueError: launch_features.host_descriptor_scale: in_desc: the descriptor's block_shape has 1 entries; the "
     "kernel takes a rank 2 descriptor"),
    ("lf.host_descriptor_scale(Descriptor(x, [64, 32, 1], [32, 1, 1], [64, 32]), out, 64, 32)",
     "ValueError: launch_features.host_descriptor_scale: in_desc: the descriptor's shape has 3 entries"),
    ("lf.host_descriptor_scale(Descriptor(x, [64, 32], [32, 1], [64, 32], 'inf'), out, 64, 32)",
     'ValueError: launch_features.host_descriptor_scale: in_desc: padding "inf"; expected "zero" or "nan"'),
    ("lf.host_descriptor_scale(CudaArray(0x7f0000001000, '<f2', (64, 32), (65, 2)), out, 64, 32)",
     "ValueError: launch_features.host_descriptor_scale: in_desc: a stride of 65 bytes is not a whole number of "
     "elements"),
    ("lf.host_descriptor_scale(ExchangeTensor(0x7f0000003000, 'fp16', (64, 32), (1, 0)), out, 64, 32)",
     "ValueError: launch_features.host_descriptor_scale: in_desc: the array is in host memory"),
])
def test_refused_descriptors_name_the_argument(module_dir, call, expected):
    lines = check(module_dir, f"print(error_of(lambda: {call}))")
    assert lines[0].startswith(expected), lines
