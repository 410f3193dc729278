# GPU tests of first-call autotuning (docs/runtime.md): kernels.py's autotuned kernels through the
# module `first_call` (autotune.toml), called with no config as Triton users call them. The first
# call of each key times the configs and launches the fastest; its result is bitwise the JIT's
# with that config; later calls say "autotuned at first call"; the split-K kernel that accumulates
# with atomics (reset_to_zero) gives the result of one launch; warmup() tunes ahead of a CUDA graph
# capture; results persist to the autotune folder. Speed is measured by bench/first_call_autotune.py,
# not here. Skipped without torch or a GPU.
import json
import math

import pytest

from gpu_modules import module_fixture, torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu

if torch is not None:
    import kernels

first_call = None  # the generated module, set by first_call_module
first_call_module = module_fixture("tests/autotune/autotune.toml", bind="first_call")

SHAPES = [(7, 1000, 4096), (333, 517, 129), (1024, 1024, 1024), (64, 2048, 512)]


def variant_config(kernel, index):
    """The config of variant `index` of a module kernel: constexpr and option values by name."""
    return dict(kernel.variants()[index]["config"])


def gemm_args(a, b, c):
    M, K = a.shape
    N = b.shape[1]
    return (a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))


def inputs(shape, seed):
    torch.manual_seed(seed)
    M, N, K = shape
    return torch.randn(M, K, device="cuda", dtype=torch.float16), torch.randn(K, N, device="cuda", dtype=torch.float16)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_first_call_tunes_and_matches_the_jit_with_the_config_it_chose(shape):
    a, b = inputs(shape, 1)
    c = torch.empty(shape[0], shape[1], device="cuda", dtype=torch.float16)
    args = gemm_args(a, b, c)
    assert first_call.matmul.choose(*args)[1] != "autotuned at first call"
    first_call.matmul(*args)
    index, step = first_call.matmul.choose(*args)
    assert step == "autotuned at first call"
    config = variant_config(first_call.matmul, index)
    # The JIT function under the autotuner, launched with the config taot chose.
    reference = torch.empty_like(c)
    M, N, K = shape
    grid = (math.ceil(M / config["BLOCK_M"]) * math.ceil(N / config["BLOCK_N"]),)
    kernels.matmul.fn[grid](*gemm_args(a, b, reference), **config)
    torch.cuda.synchronize()
    assert torch.equal(c, reference), f"{shape}: {config}"
    torch.testing.assert_close(c.float(), (a.float() @ b.float()), rtol=2e-2, atol=2e-1)


def test_an_accumulating_kernel_gives_the_result_of_one_launch_after_its_first_call():
    shape = (256, 384, 2048)
    a, b = inputs(shape, 2)
    expected = a.float() @ b.float()
    c = torch.zeros(shape[0], shape[1], device="cuda", dtype=torch.float32)
    first_call.split_k_matmul(*gemm_args(a, b, c))
    assert first_call.split_k_matmul.choose(*gemm_args(a, b, c))[1] == "autotuned at first call"
    torch.testing.assert_close(c, expected, rtol=1e-3, atol=1e-2)
    c.zero_()
    first_call.split_k_matmul(*gemm_args(a, b, c))  # a tuned key: one launch
    torch.testing.assert_close(c, expected, rtol=1e-3, atol=1e-2)


def test_warmup_tunes_ahead_of_a_cuda_graph_capture():
    n_ctx, heads = 1024, 2
    torch.manual_seed(3)
    q, k, v = (torch.randn(heads, n_ctx, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    args = (q, k, v, o, 0.125, n_ctx, q.stride(0), q.stride(1), heads)
    index, step = first_call.attention.warmup(*args)
    assert step == "autotuned at first call"
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        first_call.attention(*args, stream=stream)
    o.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    reference = torch.softmax((q.float() @ k.float().transpose(1, 2)) * 0.125, dim=-1) @ v.float()
    torch.testing.assert_close(o.float(), reference, rtol=2e-2, atol=2e-2)
    assert first_call.attention.choose(*args) == (index, "autotuned at first call")


def test_a_capture_before_any_tuning_takes_the_default_and_tunes_nothing():
    n_ctx, heads = 333, 1
    q, k, v = (torch.randn(heads, n_ctx, 64, device="cuda", dtype=torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    args = (q, k, v, o, 0.125, n_ctx, q.stride(0), q.stride(1), heads)
    stream = torch.cuda.Stream()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        first_call.attention(*args, stream=stream)
    graph.replay()
    torch.cuda.synchronize()
    assert first_call.attention.choose(*args)[1] == "default"  # still untuned: the next call outside tunes it


def test_results_persist_where_the_autotune_folder_says(tmp_path):
    first_call.set_autotune_dir(str(tmp_path))
    try:
        first_call.matmul.reset_autotune()
        shape = (96, 160, 320)
        a, b = inputs(shape, 4)
        c = torch.empty(shape[0], shape[1], device="cuda", dtype=torch.float16)
        first_call.matmul(*gemm_args(a, b, c))
    finally:
        first_call.set_autotune_dir("")
    files = list((tmp_path / "first_call" / "matmul").glob("*.json"))
    assert len(files) == 1, files
    table = json.loads(files[0].read_text())
    assert table["schema"] == "taot.tuning" and table["library"] == "first_call"
    assert table["device"] == torch.cuda.get_device_name()
    assert [entry["key"] for entry in table["entries"]] == [[96, 160, 320]]


def test_switched_off_a_call_takes_the_default():
    shape = (48, 80, 112)
    a, b = inputs(shape, 5)
    c = torch.empty(shape[0], shape[1], device="cuda", dtype=torch.float16)
    first_call.matmul.set_autotune(False)
    try:
        first_call.matmul(*gemm_args(a, b, c))
        assert first_call.matmul.choose(*gemm_args(a, b, c))[1] == "default"
    finally:
        first_call.matmul.set_autotune(None)
