"""GPU tests of launches beyond cuLaunchKernel, through the generated module of
launch_features.toml (on PYTHONPATH; scripts/gpu_suite.sh builds it): global scratch from the
per-stream pool (also inside a captured CUDA graph, with and without a reservation), a cluster
kernel, programmatic dependent launch, and a cooperative grid (including one too large)."""
import re

import torch

import launch_features as lf


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
