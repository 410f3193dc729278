"""The vector_add module on every GPU of the host at once, one thread per GPU, each launching on
its device's current stream; and arrays of one GPU refused while another is current. Needs two
or more GPUs (`scripts/gpu.sh multi` runs it on such a machine; skipped with fewer)."""
import threading

import pytest

from gpu_modules import module_fixture, torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu(count=2)

va = None  # the generated module, set by vector_add_module
vector_add_module = module_fixture("examples/vector_add/vector_add.toml", bind="va")


def test_every_gpu_from_its_own_thread_at_once():
    count = torch.cuda.device_count()
    assert count >= 2, f"this test needs 2 or more GPUs, found {count}"
    barrier = threading.Barrier(count)
    failures = []

    def work(device):
        try:
            with torch.cuda.device(device):
                x = torch.randn((1 << 20) + 5, device=device)
                y = torch.randn_like(x)
                out = torch.empty_like(x)
                barrier.wait()  # first launches on every device at the same moment
                for i in range(200):
                    va.add_kernel(x, y, out, x.numel())
                    if i % 50 == 0:
                        y.add_(1)
                torch.cuda.synchronize(device)
                if not torch.equal(out, x + y):
                    failures.append(f"cuda:{device}: wrong result")
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(f"cuda:{device}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=work, args=(d,)) for d in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


def test_arrays_of_another_gpu_are_refused():
    with torch.cuda.device(1):
        x = torch.randn(1000, device="cuda:1")
        out = torch.empty_like(x)
    with torch.cuda.device(0):
        try:
            va.add_kernel(x, x, out, 1000)
            raise AssertionError("arrays on cuda:1 were launched on cuda:0")
        except ValueError as error:
            assert "the arrays are on cuda:1 (x_ptr) but the current CUDA device is cuda:0" in str(error), error
