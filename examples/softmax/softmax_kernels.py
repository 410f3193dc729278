# Row-wise softmax as a Triton kernel, compiled ahead of time by taot (softmax.toml): each program
# normalizes BLOCK_ROWS whole rows held in registers (BLOCK_SIZE >= n_cols), reading x once and
# writing y once. Imports only triton.
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
                   BLOCK_SIZE: tl.constexpr, BLOCK_ROWS: tl.constexpr):
    """y[r, :] = exp(x[r, :] - max x[r, :]) / sum exp(x[r, :] - max x[r, :]) for the BLOCK_ROWS rows
    of program `pid`; arithmetic in fp32, y stored in y's element type. Columns are contiguous (unit
    stride); needs BLOCK_SIZE >= n_cols."""
    pid = tl.program_id(axis=0)
    rows = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    row_in = rows < n_rows
    col_in = cols < n_cols
    # Rows past the end (last program only) re-read the last row instead of loading under a row mask,
    # which keeps them finite; they are never stored.
    safe_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
    x = tl.load(x_ptr + safe_rows[:, None] * x_row_stride + cols[None, :], mask=col_in[None, :],
                other=float("-inf")).to(tl.float32)
    shifted = x - tl.max(x, axis=1)[:, None]            # <= 0; padding columns stay -inf
    numerator = tl.exp2(shifted * 1.4426950408889634)   # exp(t) = 2^(t log2 e); exp(-inf) = 0
    denominator = tl.sum(numerator, axis=1)
    y = numerator * (1.0 / denominator)[:, None]
    tl.store(y_ptr + safe_rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty),
             mask=row_in[:, None] & col_in[None, :])
