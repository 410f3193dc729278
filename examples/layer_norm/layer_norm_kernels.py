# Layer normalization (forward) as a Triton kernel, compiled ahead of time by taot (layer_norm.toml):
# each program normalizes BLOCK_ROWS whole rows held in registers (BLOCK_SIZE >= n_cols), reading x
# once and writing y once, plus each row's mean and 1/std for a backward pass. Imports only triton.
import triton
import triton.language as tl


@triton.jit
def layer_norm_fwd_kernel(x_ptr, y_ptr, w_ptr, b_ptr, mean_ptr, rstd_ptr, n_rows, n_cols, x_row_stride,
                          y_row_stride, eps, BLOCK_SIZE: tl.constexpr, BLOCK_ROWS: tl.constexpr):
    """For each of the BLOCK_ROWS rows r of program `pid`:
        mean[r] = sum_j x[r, j] / n_cols,  var = sum_j (x[r, j] - mean[r])^2 / n_cols (biased),
        rstd[r] = 1 / sqrt(var + eps),     y[r, j] = (x[r, j] - mean[r]) * rstd[r] * w[j] + b[j].
    Arithmetic in fp32; y in y's element type, mean and rstd fp32. Columns are contiguous (unit
    stride); needs BLOCK_SIZE >= n_cols."""
    pid = tl.program_id(axis=0)
    rows = pid * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
    cols = tl.arange(0, BLOCK_SIZE)
    row_in = rows < n_rows
    col_in = cols < n_cols
    # Rows past the end (last program only) re-read the last row; they are never stored.
    safe_rows = tl.minimum(rows, n_rows - 1).to(tl.int64)
    x = tl.load(x_ptr + safe_rows[:, None] * x_row_stride + cols[None, :], mask=col_in[None, :],
                other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    centered = tl.where(col_in[None, :], x - mean[:, None], 0.0)      # two passes over registers
    variance = tl.sum(centered * centered, axis=1) / n_cols
    rstd = tl.rsqrt(variance + eps)
    w = tl.load(w_ptr + cols, mask=col_in, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_in, other=0.0).to(tl.float32)
    y = centered * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + safe_rows[:, None] * y_row_stride + cols[None, :], y.to(y_ptr.dtype.element_ty),
             mask=row_in[:, None] & col_in[None, :])
    tl.store(mean_ptr + rows, mean, mask=row_in)
    tl.store(rstd_ptr + rows, rstd, mask=row_in)
