# softmax(x) through the taot library built from softmax.toml (`taot build softmax.toml -o OUT --python`,
# then CMake; the module `softmax` on PYTHONPATH): the host side of the example. jit.py runs the same
# code with Triton's JIT launch in place of the module. Needs torch; no Triton at run time.
import math

import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def module_launch(module):
    """The launch of the generated module: softmax(x, y, n_rows, n_cols, x_row_stride, y_row_stride,
    **config), on torch's current stream; the grid comes from the spec. Without config keywords the
    runtime computes the config from n_rows and n_cols with the kernel's heuristics."""
    return module.softmax


def softmax(x, dim=-1, out=None, config=None, module=None, launch=None):
    """torch.softmax(x, dim) for fp32 / fp16 / bf16 x, result in x's dtype (fp32 arithmetic).

    out: an optional result tensor shaped like x (its dimension `dim` of unit stride); config: None
    (the kernel's heuristics choose: the smallest block that holds a row, and so on), or config
    fields to ask for (BLOCK_SIZE, BLOCK_ROWS, num_warps: through the module, the heuristics compute
    the ones left out; through the JIT, give all three); module: the generated module (`import
    softmax` by default); launch: a callable taking the kernel's arguments and config keywords, in
    place of the module (jit.py passes Triton's). Rows longer than the largest compiled block fail
    in the module's call (ValueError naming the block the heuristics asked for)."""
    if x.dtype not in DTYPES:
        raise TypeError(f"softmax: x must be fp32, fp16 or bf16, got {x.dtype}")
    if launch is None:
        if module is None:
            import softmax as module  # the generated module
        launch = module_launch(module)
    dim = dim % max(x.dim(), 1)
    if out is not None and (out.shape != x.shape or out.dtype != x.dtype or out.device != x.device):
        raise ValueError(f"softmax: out must be a {x.dtype} tensor of shape {tuple(x.shape)} on {x.device}")
    last = x.dim() == 0 or dim == x.dim() - 1
    src = x if last else x.movedim(dim, -1)
    n_cols = src.shape[-1] if src.dim() else 1
    n_rows = math.prod(src.shape[:-1])
    rows_in = src.reshape(n_rows, n_cols)                  # a view when the layout allows it
    if rows_in.stride(1) != 1 and n_cols > 1:
        rows_in = rows_in.contiguous()
    in_place = out is not None and last and out.is_contiguous()      # write straight into out
    rows_out = out.view(n_rows, n_cols) if in_place else torch.empty(n_rows, n_cols, dtype=x.dtype, device=x.device)
    if n_rows and n_cols:
        launch(rows_in, rows_out, n_rows, n_cols, rows_in.stride(0), rows_out.stride(0), **(config or {}))
    if in_place:
        return out
    result = rows_out.view(src.shape)
    result = result if last else result.movedim(-1, dim)
    return result if out is None else out.copy_(result)
