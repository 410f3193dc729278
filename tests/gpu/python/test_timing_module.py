"""GPU tests of time() on the generated vector_add module, with torch: the summary it returns
(quantiles as torch.quantile computes them), a plausible bandwidth in plain and CUDA-graph mode on
torch's default stream and on a side stream, config keywords and bound launchers, errors that name
the keyword, a capturing stream refused, and the GIL released while it times. Needs the module on
the build_module fixture (tests/gpu_modules.py) builds the module."""
import threading
import time

import pytest

from gpu_modules import module_fixture, torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu

va = None  # the generated module, set by vector_add_module
vector_add_module = module_fixture("examples/vector_add/vector_add.toml", bind="va")

SUMMARY = ("ms", "min", "p20", "median", "p80", "max", "mean", "reps", "warmup_reps", "warmup_ms",
           "flush_bytes", "variant", "step")


def vectors(n):
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    return x, y, torch.empty_like(x)


def gbps(n, ms):
    return 3 * 4 * n / (ms * 1e-3) / 1e9


def test_plain_and_graph_timings_are_plausible_and_the_output_right():
    n = 1 << 24
    x, y, out = vectors(n)
    for graph in (False, True):
        result = va.add_kernel.time(x, y, out, n, graph=graph)
        assert set(SUMMARY) <= set(result), result.keys()
        assert len(result["ms"]) == result["reps"] >= 1
        assert result["min"] <= result["p20"] <= result["median"] <= result["p80"] <= result["max"]
        assert result["warmup_ms"] >= 25
        assert 1000 < gbps(n, result["median"]) < 5000, (graph, result["median"])
        torch.cuda.synchronize()
        assert torch.equal(out, x + y)


def test_quantiles_are_torch_quantiles_of_the_samples():
    x, y, out = vectors(1 << 16)
    result = va.add_kernel.time(x, y, out, x.numel(), warmup_ms=2, reps=101)
    samples = torch.tensor(result["ms"], dtype=torch.float64)
    for key, q in (("p20", 0.2), ("median", 0.5), ("p80", 0.8)):
        assert abs(torch.quantile(samples, q).item() - result[key]) < 1e-12, key
    assert abs(samples.mean().item() - result["mean"]) < 1e-12


def test_times_on_the_current_torch_stream_in_graph_mode_too():
    x, y, out = vectors(1 << 20)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for graph in (False, True):
            result = va.add_kernel.time(x, y, out, x.numel(), graph=graph, warmup_ms=2, rep_ms=5)
            assert result["reps"] >= 1
    result = va.add_kernel.time(x, y, out, x.numel(), graph=True, stream=side, warmup_ms=2, reps=3)
    assert result["reps"] == 3


def test_config_keywords_and_bound_launchers():
    x, y, out = vectors(5000)
    result = va.add_kernel.time(x, y, out, 5000, BLOCK_SIZE=256, num_warps=8, warmup_ms=1, reps=5,
                                launches_per_rep=3, flush_l2=False)
    assert result["reps"] == 5 and result["step"] == "config" and result["flush_bytes"] == 0
    assert va.add_kernel_variants()[result["variant"]]["config"]["BLOCK_SIZE"] == 256
    bound = va.add_kernel.bind(BLOCK_SIZE=256)
    assert bound.time(x, y, out, 5000, warmup_ms=1, reps=4)["reps"] == 4


def test_errors_name_the_keyword():
    x, y, out = vectors(16)
    for keywords, error, text in ((dict(warmup=1), TypeError, "warmup_ms"),
                                  (dict(reps="many"), TypeError, "reps="),
                                  (dict(launches_per_rep=0), ValueError, "launches_per_rep")):
        try:
            va.add_kernel.time(x, y, out, 16, **keywords)
        except error as caught:
            assert text in str(caught), str(caught)
        else:
            raise AssertionError(f"{keywords} was accepted")


def test_a_capturing_stream_is_refused():
    x, y, out = vectors(1024)
    va.add_kernel(x, y, out, 1024)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    refused = None
    with torch.cuda.graph(graph):
        try:
            va.add_kernel.time(x, y, out, 1024)
        except ValueError as caught:
            refused = str(caught)
        va.add_kernel(x, y, out, 1024)  # the capture goes on as before
    assert refused is not None and "capturing a CUDA graph" in refused, refused
    graph.replay()
    torch.cuda.synchronize()


def test_the_gil_is_released_while_timing():
    x, y, out = vectors(1 << 20)
    count = 0
    done = threading.Event()

    def spin():
        nonlocal count
        while not done.is_set():
            count += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        time.sleep(0.01)
        before = count
        time.sleep(0.05)  # how far the spinner gets in 50 ms with the GIL free
        calibration = count - before
        before = count
        va.add_kernel.time(x, y, out, x.numel(), warmup_ms=50, rep_ms=200)  # 250 ms or more
        during = count - before
    finally:
        done.set()
        spinner.join()
    # Holding the GIL would have stopped the spinner for the whole call but a switch interval (5 ms).
    assert during > calibration, (during, calibration)
