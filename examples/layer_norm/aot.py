# layer_norm(x, weight, bias, eps) through the taot library built from layer_norm.toml (`taot build
# layer_norm.toml -o OUT --python`, then CMake; the module `layer_norm` on PYTHONPATH): the host side
# of the example. jit.py runs the same code with Triton's JIT launch in place of the module. Needs
# torch; no Triton at run time.
import math

import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def module_launch(module):
    """The launch of the generated module: layer_norm_fwd(x, y, w, b, mean, rstd, n_rows, n_cols,
    x_row_stride, y_row_stride, eps, **config), on torch's current stream; the grid from the spec.
    Without config keywords the runtime computes the config from n_rows and n_cols with the
    kernel's heuristics."""
    return module.layer_norm_fwd


def layer_norm(x, weight=None, bias=None, eps=1e-5, config=None, module=None, launch=None):
    """(y, mean, rstd): torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps) for fp32 /
    fp16 / bf16 x, y in x's dtype; mean and rstd = 1 / sqrt(var + eps) fp32, shaped x.shape[:-1]
    (what a backward pass needs). weight and bias: [n_cols] in x's dtype, or None (ones / zeros).

    config: None (the kernel's heuristics choose: the smallest block that holds a row, and so on), or
    config fields to ask for (BLOCK_SIZE, BLOCK_ROWS, num_warps: through the module, the heuristics
    compute the ones left out; through the JIT, give all three); module: the generated module
    (`import layer_norm` by default); launch: a callable taking the kernel's arguments and config
    keywords, in place of the module (jit.py passes Triton's). Rows longer than the largest compiled
    block fail in the module's call (ValueError naming the block the heuristics asked for)."""
    if x.dtype not in DTYPES:
        raise TypeError(f"layer_norm: x must be fp32, fp16 or bf16, got {x.dtype}")
    if x.dim() == 0:
        raise ValueError("layer_norm: x needs at least one dimension")
    if launch is None:
        if module is None:
            import layer_norm as module  # the generated module
        launch = module_launch(module)
    n_cols = x.shape[-1]
    weight = torch.ones(n_cols, dtype=x.dtype, device=x.device) if weight is None else weight
    bias = torch.zeros(n_cols, dtype=x.dtype, device=x.device) if bias is None else bias
    for name, t in (("weight", weight), ("bias", bias)):
        if t.shape != (n_cols,) or t.dtype != x.dtype or t.device != x.device:
            raise ValueError(f"layer_norm: {name} must be a {x.dtype} tensor of shape ({n_cols},) on {x.device}")
    weight, bias = weight.contiguous(), bias.contiguous()
    n_rows = math.prod(x.shape[:-1])
    rows_in = x.reshape(n_rows, n_cols)                    # a view when the layout allows it
    if rows_in.stride(1) != 1 and n_cols > 1:
        rows_in = rows_in.contiguous()
    y = torch.empty(n_rows, n_cols, dtype=x.dtype, device=x.device)
    mean = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    rstd = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    if n_rows and n_cols:
        launch(rows_in, y, weight, bias, mean, rstd, n_rows, n_cols, rows_in.stride(0), y.stride(0), float(eps),
               **(config or {}))
    elif n_rows:
        mean.fill_(float("nan"))                           # statistics of empty rows, as torch has them
        rstd.fill_(float("nan"))
    return y.view(x.shape), mean.view(x.shape[:-1]), rstd.view(x.shape[:-1])
