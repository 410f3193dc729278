"""Bench file of the sanitize test's kernel: n * 4 bytes a multiple of 512, so torch's allocation is
exactly `out` and the store past its end reaches memcheck's padding."""
KERNEL = "oob_double"
DIMS = ("n",)
SHAPES = [4096]
OUTPUTS = ["out_ptr"]


def make_args(shape, device):
    import torch
    x = torch.arange(shape["n"], dtype=torch.float32, device=device)
    return x, torch.empty_like(x), shape["n"]


def reference(x, out, n):
    return x * 2
