# Kernels whose launch depends on the device, on every GPU of the host at once, one thread per GPU:
# bias_act (variants with images for different targets: selection by the device's arch) and
# persistent_scale (its grid reads each device's multiprocessor count), against torch. Needs two or
# more GPUs (`scripts/gpu.sh multi` runs it); skipped otherwise.
import threading

import pytest

from gpu_modules import module_fixture, torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu(count=2)

as_written = None  # the generated module, set by as_written_module
as_written_module = module_fixture("tests/kernels_as_written/kernels.toml", bind="as_written")


def test_device_dependent_kernels_on_every_gpu_at_once():
    count = torch.cuda.device_count()
    barrier = threading.Barrier(count)
    failures = []

    def work(device):
        try:
            with torch.cuda.device(device):
                x = torch.randn(4097, 333, device=device)
                bias = torch.randn(333, device=device)
                out, scaled = torch.empty_like(x), torch.empty_like(x)
                barrier.wait()  # the first launches, and the first device queries, at the same moment
                for i in range(100):
                    as_written.bias_act(x, bias if i % 2 else None, out, x.numel(), 333, ACTIVATION="relu")
                    as_written.persistent_scale(x, scaled, x.numel(), 2.0)
                torch.cuda.synchronize(device)
                if not torch.equal(out, torch.relu(x + bias)):
                    failures.append(f"cuda:{device}: bias_act wrong")
                if not torch.equal(scaled, x * 2.0):
                    failures.append(f"cuda:{device}: persistent_scale wrong")
        except Exception as error:  # noqa: BLE001 - reported below
            failures.append(f"cuda:{device}: {type(error).__name__}: {error}")

    threads = [threading.Thread(target=work, args=(device,)) for device in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures
