"""GPU tests of the generated Python module of vector_add, with torch: every dtype against
torch's x + y, misaligned views, exact configs and variants, the current stream, CUDA graph
capture and torch.compile, arrays given through __dlpack__ and torch read without its DLPack
exchange table. The module is built by the build_module fixture (tests/gpu_modules.py)."""
import os
import subprocess
import sys
import textwrap

import pytest

from gpu_modules import module_fixture, torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu
SIZES = (1, 17, 1024, (1 << 20) + 3)
DTYPES = (torch.float32, torch.float16, torch.bfloat16) if torch is not None else ()

va = None  # the generated module, set by vector_add_module
vector_add_module = module_fixture("examples/vector_add/vector_add.toml", bind="va")


def check_add(x, y, out):
    expected = (x.float() + y.float()).to(x.dtype)
    assert torch.equal(out, expected), (out - expected).abs().max().item()


def fresh(n, dtype, offset=0):
    x = torch.randn(n + offset, device="cuda", dtype=dtype)[offset:]
    y = torch.randn(n + offset, device="cuda", dtype=dtype)[offset:]
    out = torch.full((n + offset,), float("nan"), device="cuda", dtype=dtype)[offset:]
    return x, y, out


def test_every_dtype_and_size_automatic():
    for dtype in DTYPES:
        for n in SIZES:
            x, y, out = fresh(n, dtype)
            va.add_kernel(x, y, out, n)
            torch.cuda.synchronize()
            check_add(x, y, out)


def test_misaligned_views():
    for dtype in DTYPES:
        for n in SIZES:
            x, y, out = fresh(n, dtype, offset=1)
            assert x.data_ptr() % 16 != 0
            va.add_kernel(x, y, out, n)
            torch.cuda.synchronize()
            check_add(x, y, out)


def test_exact_config_and_variant():
    x, y, out = fresh(5000, torch.float16)
    va.add_kernel(x, y, out, 5000, BLOCK_SIZE=256, num_warps=8)
    torch.cuda.synchronize()
    check_add(x, y, out)
    unaligned = [v for v in va.add_kernel_variants() if v["id"].startswith("add_kernel_fp16_fp16_fp16_i32_BS256")]
    assert unaligned, "no unaligned fp16 variant"
    x, y, out = fresh(333, torch.float16)
    va.add_kernel(x, y, out, 333, variant=unaligned[0]["index"])
    torch.cuda.synchronize()
    check_add(x, y, out)


def test_runs_on_the_current_torch_stream():
    stream = torch.cuda.Stream()
    x, y, out = fresh((1 << 22) + 1, torch.float32)
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        va.add_kernel(x, y, out, x.numel())
        result = out.clone()  # ordered after the kernel only if it ran on `stream`
    stream.synchronize()
    check_add(x, y, result)


def test_cuda_graph_capture_and_replay():
    x, y, out = fresh(100000, torch.bfloat16)
    va.add_kernel(x, y, out, x.numel())  # warm up: modules load outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        va.add_kernel(x, y, out, x.numel())
    x.copy_(torch.randn_like(x))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    check_add(x, y, out)


def test_under_torch_compile():
    def add(a, b, c):
        va.add_kernel(a, b, c, a.numel())
        return c

    compiled = torch.compile(add)
    x, y, out = fresh(4096, torch.float32)
    compiled(x, y, out)
    torch.cuda.synchronize()
    check_add(x, y, out)


def test_host_tensor_and_wrong_dtype_are_refused():
    x, y, out = fresh(64, torch.float32)
    try:
        va.add_kernel(x.cpu(), y, out, 64)
        raise AssertionError("a host tensor was accepted")
    except ValueError as error:
        assert "x_ptr: the array is in host memory" in str(error)
    try:
        va.add_kernel(x.double(), y.double(), out.double(), 64)
        raise AssertionError("fp64 was accepted")
    except ValueError as error:
        assert "x_ptr = fp64 pointer" in str(error)


def test_torch_custom_op_under_torch_compile_fullgraph():
    def add(a, b, c):
        torch.ops.vector_add.add_kernel(a, b, c, a.numel(), BLOCK_SIZE=256)
        return c * 2

    compiled = torch.compile(add, fullgraph=True)
    x, y, out = fresh(10000, torch.float16)
    doubled = compiled(x, y, out)
    torch.cuda.synchronize()
    check_add(x, y, out)
    assert torch.equal(doubled, out * 2)


def test_torch_custom_op_in_a_cuda_graph():
    x, y, out = fresh(4096, torch.float32)
    torch.ops.vector_add.add_kernel(x, y, out, x.numel())
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        torch.ops.vector_add.add_kernel(x, y, out, x.numel())
    y.copy_(torch.randn_like(y))
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    check_add(x, y, out)


class DLPackOnly:
    """A CUDA array known only through the DLPack protocol (what CuPy, JAX or NumPy-like arrays
    offer); remembers the streams it was asked to order its work before."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.streams = []

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()

    def __dlpack__(self, stream=None, **kwargs):
        self.streams.append(stream)
        return self.tensor.__dlpack__(stream=stream, **kwargs)


def test_dlpack_objects_on_the_current_stream():
    for dtype in DTYPES:
        x, y, out = fresh(5001, dtype, offset=1)
        wrapped = DLPackOnly(y)
        va.add_kernel(x, wrapped, out, 5001)  # torch's current stream, which y is told to order before
        torch.cuda.synchronize()
        check_add(x, y, out)
        assert wrapped.streams == [torch.cuda.current_stream().cuda_stream or 1], wrapped.streams
    x, y, out = fresh(777, torch.float32)
    va.add_kernel(DLPackOnly(x), DLPackOnly(y), DLPackOnly(out), 777)  # no torch tensor: the null stream
    torch.cuda.synchronize()
    check_add(x, y, out)


def test_wrong_rank_is_refused():
    x, y, out = fresh(64, torch.float32)
    try:
        va.add_kernel(x.view(8, 8), y, out, 64)
        raise AssertionError("a 2-D tensor was accepted")
    except ValueError as error:
        assert "x_ptr: expected a 1-D array, got shape (8, 8)" in str(error), error


def test_torch_without_the_exchange_table(vector_add_module):
    """torch before 2.10 has no __dlpack_c_exchange_api__: tensors are read through their
    attributes and the stream from torch._C. Run in a fresh process with the table removed."""
    code = textwrap.dedent("""
        import torch
        del torch.Tensor.__dlpack_c_exchange_api__
        import vector_add as va
        x, y = torch.randn(3000, device="cuda"), torch.randn(3000, device="cuda")
        out = torch.empty_like(x)
        stream = torch.cuda.Stream()
        torch.cuda.synchronize()
        with torch.cuda.stream(stream):
            va.add_kernel(x, y, out, 3000)
            result = out.clone()
        stream.synchronize()
        assert torch.equal(result, x + y)
        try:
            va.add_kernel(x.view(30, 100), y, out, 3000)
            raise AssertionError("a 2-D tensor was accepted")
        except ValueError as error:
            assert "x_ptr: expected a 1-D array, got shape (30, 100)" in str(error), error
        print("attribute path ok")
    """)
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(vector_add_module.module_dir), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=300)
    assert result.returncode == 0 and "attribute path ok" in result.stdout, result.stdout + result.stderr
