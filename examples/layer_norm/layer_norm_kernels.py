# Layer normalization (forward) as a Triton kernel, compiled ahead of time by taot (layer_norm.toml):
# each program normalizes BLOCK_ROWS whole rows held in registers (BLOCK_SIZE >= n_cols), reading x
# once and writing y once, plus each row's mean and 1/std for a backward pass. Its config comes from
# the call (@triton.heuristics below): Triton's JIT computes it at each launch, and taot reads the same
# rules into the library, whose runtime computes it in C++. Imports only triton.
import triton
import triton.language as tl

MIN_BLOCK_SIZE = 256      # the smallest block compiled (layer_norm.toml); shorter rows use it
MULTI_ROW_TILE = 2048     # rows of a shorter block share a program: BLOCK_ROWS * BLOCK_SIZE == 2048 ...
MIN_PROGRAMS = 512        # ... when that still leaves at least this many programs


# The config for a call, in order (each rule sees the ones before it): the smallest block that holds
# a row; short rows packed into 2048-element tiles when there are rows enough for MIN_PROGRAMS
# programs of them; the warp count of the tile. Rows longer than the largest compiled block get a
# block taot did not compile, and the library's call fails naming it (Triton's JIT compiles it).
@triton.heuristics(values={
    "BLOCK_SIZE": lambda args: max(MIN_BLOCK_SIZE, triton.next_power_of_2(args["n_cols"])),
    "BLOCK_ROWS": lambda args: (MULTI_ROW_TILE // args["BLOCK_SIZE"]
                                if args["BLOCK_SIZE"] < MULTI_ROW_TILE
                                and args["n_rows"] >= MIN_PROGRAMS * (MULTI_ROW_TILE // args["BLOCK_SIZE"])
                                else 1),
    "num_warps": lambda args: (2 if args["BLOCK_ROWS"] * args["BLOCK_SIZE"] <= 1024
                               else 4 if args["BLOCK_ROWS"] * args["BLOCK_SIZE"] <= 2048
                               else 8 if args["BLOCK_ROWS"] * args["BLOCK_SIZE"] <= 8192
                               else 16),
})
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
