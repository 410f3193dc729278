"""The axpy module that a project outside the tree built with the installed taot (taot_add_library,
`scripts/gpu.sh install WHEEL`) launches on the GPU and agrees with torch."""
import axpy
import torch

n = (1 << 20) + 3
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
out = torch.full_like(x, float("nan"))
axpy.axpy(x, y, out, 2.5, n)
torch.cuda.synchronize()
expected = 2.5 * x + y
difference = (out - expected).abs().max().item()
assert torch.allclose(out, expected, rtol=1e-6, atol=1e-6), difference
print(f"axpy through the installed taot on {torch.cuda.get_device_name()}: {n} elements, max abs difference "
      f"{difference:.3g} from torch")
