# Row-wise softmax as a Triton kernel, compiled ahead of time by taot (softmax.toml): each program
# normalizes BLOCK_ROWS whole rows held in registers (BLOCK_SIZE >= n_cols), reading x once and
# writing y once. Its config comes from the call (@triton.heuristics below): Triton's JIT computes it
# at each launch, and taot reads the same rules into the library, whose runtime computes it in C++.
# Imports only triton.
import triton
import triton.language as tl

MIN_BLOCK_SIZE = 128      # the smallest block compiled (softmax.toml); shorter rows use it
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
