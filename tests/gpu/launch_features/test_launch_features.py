"""GPU tests of launches beyond cuLaunchKernel, through the generated module of
launch_features.toml (built by the build_module fixture, tests/gpu_modules.py): global scratch from the
per-stream pool (also inside a captured CUDA graph, with and without a reservation), a cluster
kernel, programmatic dependent launch, a cooperative grid (including one too large), and host-side
tensor descriptors (TMA maps from whole tensors, views and Triton's TensorDescriptor objects,
zero and NaN padding, rank 3, errors, graph capture)."""
import re

import pytest

from gpu_modules import module_fixture, torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu

lf = None  # the generated module, set by launch_features_module
launch_features_module = module_fixture("tests/gpu/launch_features/launch_features.toml", bind="lf")


def test_device_descriptors_get_global_scratch():
    for m, n in ((64, 64), (200, 144), (1000, 528)):  # N % 16 == 0, as compiled
        x = torch.randn(m, n, device="cuda", dtype=torch.float16)
        out = torch.zeros_like(x)
        lf.descriptor_scale(x, out, m, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x * 2), (m, n)


def test_scratch_on_several_streams_at_once():
    streams = [torch.cuda.Stream() for _ in range(4)]
    pairs = []
    for i, stream in enumerate(streams):
        with torch.cuda.stream(stream):
            x = torch.randn(512 + 64 * i, 256, device="cuda", dtype=torch.float16)
            out = torch.empty_like(x)
            for _ in range(20):
                lf.descriptor_scale(x, out, x.shape[0], x.shape[1])
            pairs.append((x, out))
    torch.cuda.synchronize()
    for x, out in pairs:
        assert torch.equal(out, x * 2)


def test_graph_capture_needs_a_reservation_and_replays_with_one():
    x = torch.randn(256, 256, device="cuda", dtype=torch.float16)
    out = torch.zeros_like(x)
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    message = ""
    with torch.cuda.graph(graph, stream=stream):
        try:
            lf.descriptor_scale(x, out, 256, 256)
        except RuntimeError as error:
            message = str(error)
    assert "which is capturing a CUDA graph" in message, message
    needed = int(re.search(r"reserve_scratch\((\d+), stream=", message).group(1))
    assert needed == 16 * 256  # 4 x 4 programs, two descriptors of 128 bytes each

    lf.reserve_scratch(needed, stream=stream.cuda_stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        lf.descriptor_scale(x, out, 256, 256)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, x * 2)


def test_cluster_kernel():
    for n in (1, 1000, 4096, (1 << 20) + 7):
        x = torch.randn(n, device="cuda")
        out = torch.empty_like(x)
        lf.add_one_cluster(x, out, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x + 1), n


def test_programmatic_dependent_launch_chain():
    n = (1 << 22) + 3
    x = torch.randn(n, device="cuda")
    a, b = torch.empty_like(x), torch.empty_like(x)
    for _ in range(50):  # each launch reads what the previous one wrote
        lf.add_one_pdl(x, a, n)
        lf.add_one_pdl(a, b, n)
        lf.add_one_pdl(b, a, n)
    torch.cuda.synchronize()
    assert torch.allclose(a, x + 3)


def test_cooperative_grid_barrier():
    programs = torch.cuda.get_device_properties(0).multi_processor_count * 2
    counter = torch.zeros(1, device="cuda", dtype=torch.int32)
    out = torch.zeros(programs, device="cuda", dtype=torch.int32)
    lf.grid_barrier(counter, out, programs)
    torch.cuda.synchronize()
    assert counter.item() == programs
    assert torch.all(out >= programs), out


def test_cooperative_grid_too_large_is_a_named_error():
    counter = torch.zeros(1, device="cuda", dtype=torch.int32)
    out = torch.zeros(1 << 20, device="cuda", dtype=torch.int32)
    try:
        lf.grid_barrier(counter, out, 1 << 20)
        raise AssertionError("a cooperative grid of 2^20 programs was launched")
    except RuntimeError as error:
        assert "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE" in str(error), error
        assert "grid_barrier" in str(error), error
    torch.cuda.synchronize()  # the context is still usable
    x = torch.randn(100, device="cuda")
    y = torch.empty_like(x)
    lf.add_one_cluster(x, y, 100)
    torch.cuda.synchronize()
    assert torch.equal(y, x + 1)


# ---- host-side tensor descriptors (TMA maps encoded by the runtime at launch) ----

def test_host_descriptors_from_whole_tensors_every_dtype_and_block():
    from triton.tools.tensor_descriptor import TensorDescriptor
    for dtype, block_m in ((torch.float16, 64), (torch.float16, 128), (torch.float32, 64)):
        for m, n in ((64, 32), (200, 96), (1000, 520)):  # edges: partial blocks are clipped by TMA
            x = torch.randn(m, n, device="cuda", dtype=dtype)
            out = torch.zeros_like(x)
            lf.host_descriptor_scale(x, out, m, n, BM=block_m)
            torch.cuda.synchronize()
            assert torch.equal(out, x * 2), (dtype, block_m, m, n)
            # The same through Triton's TensorDescriptor objects, whose block_shape selects the variant.
            out.zero_()
            lf.host_descriptor_scale(TensorDescriptor(x, x.shape, x.stride(), [block_m, 32]),
                                     TensorDescriptor(out, out.shape, out.stride(), [block_m, 32]), m, n)
            torch.cuda.synchronize()
            assert torch.equal(out, x * 2), (dtype, block_m, m, n)


def test_host_descriptor_over_a_strided_view():
    base = torch.randn(300, 256, device="cuda", dtype=torch.float16)
    x = base[10:210, 64:160]          # a view: row pitch 256 elements, offset base pointer
    out = torch.zeros(200, 96, device="cuda", dtype=torch.float16)
    lf.host_descriptor_scale(x, out, 200, 96)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2)


def test_padding_zero_and_nan_fill_reads_past_the_edge():
    from triton.tools.tensor_descriptor import TensorDescriptor
    x = torch.randn(10, 20, device="cuda", dtype=torch.float32)
    for padding in ("zero", "nan"):
        out = torch.full((16, 32), 7.0, device="cuda", dtype=torch.float32)
        lf.host_descriptor_block(TensorDescriptor(x, x.shape, x.stride(), [16, 32], padding=padding), out)
        torch.cuda.synchronize()
        assert torch.equal(out[:10, :20], x)
        outside = torch.cat([out[10:].flatten(), out[:10, 20:].flatten()])
        if padding == "zero":
            assert torch.equal(outside, torch.zeros_like(outside))
        else:
            assert torch.isnan(outside).all()


def test_rank_3_descriptor_over_a_permuted_tensor():
    t = torch.randn(16, 8, 4, device="cuda", dtype=torch.bfloat16)
    view = t.permute(2, 1, 0)         # shape (4, 8, 16), strides (1, 4, 32): innermost not contiguous
    contiguous = view.contiguous()
    out = torch.zeros(4, 8, device="cuda", dtype=torch.float32)
    lf.host_descriptor_sum3d(contiguous, out)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, contiguous.float().sum(dim=2), rtol=1e-3, atol=1e-3)
    try:
        lf.host_descriptor_sum3d(view, out)
        raise AssertionError("a descriptor whose innermost stride is not 1 was accepted")
    except ValueError as error:
        assert "strides[2] = 32; the innermost dim must be contiguous" in str(error), error


def test_host_descriptor_errors_are_named():
    from triton.tools.tensor_descriptor import TensorDescriptor
    x = torch.randn(64, 32, device="cuda", dtype=torch.float16)
    out = torch.zeros_like(x)
    checks = [
        (lambda: lf.host_descriptor_scale(x.flatten(), out, 64, 32), ValueError, "expected a 2-D array"),
        (lambda: lf.host_descriptor_scale(x.cpu(), out, 64, 32), ValueError, "host memory"),
        (lambda: lf.host_descriptor_scale(x.double(), out.double(), 64, 32), ValueError,
         "in_desc = a rank 2 fp64 descriptor"),
        (lambda: lf.host_descriptor_scale(TensorDescriptor(x, x.shape, x.stride(), [256, 32]), out, 64, 32),
         ValueError, "with block_shape [256, 32]"),
        (lambda: lf.host_descriptor_scale(torch.randn(64, 33, device="cuda", dtype=torch.float16)[:, :32], out, 64, 32),
         ValueError, "strides[0] = 33 elements of 2 bytes"),
    ]
    for call, error_type, text in checks:
        try:
            call()
        except error_type as error:
            assert text in str(error), (text, str(error))
        else:
            raise AssertionError(f"no error for: {text}")
    torch.cuda.synchronize()   # the context is still usable
    lf.host_descriptor_scale(x, out, 64, 32)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2)


def test_host_descriptors_inside_a_cuda_graph():
    x = torch.randn(256, 64, device="cuda", dtype=torch.float16)
    out = torch.zeros_like(x)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    with torch.cuda.graph(graph, stream=stream):
        lf.host_descriptor_scale(x, out, 256, 64)
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, x * 2)
