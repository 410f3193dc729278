"""For the example benchmarks: torch on a CUDA GPU, or a "skipped: ..." line and exit status 0 where
there is none (so the scripts run anywhere, and say why they measured nothing)."""


def torch_on_gpu(benchmark, min_capability=None, why_capability=""):
    """The torch module when a CUDA GPU (of at least `min_capability`) is present; else exits 0."""
    try:
        import torch
    except ImportError:
        skip(f"the {benchmark} benchmark needs torch")
    if not torch.cuda.is_available():
        skip(f"the {benchmark} benchmark needs a CUDA GPU")
    if min_capability is not None and torch.cuda.get_device_capability() < min_capability:
        skip(f"the {benchmark} benchmark {why_capability}")
    return torch


def skip(reason):
    print(f"skipped: {reason}")
    raise SystemExit(0)
