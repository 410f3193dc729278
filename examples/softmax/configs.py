# The softmax configs that softmax.toml compiles, and the one to use for a shape. Shared by aot.py (the
# taot module) and jit.py (Triton JIT), so that both paths launch the same kernel with the same
# config. Plain Python: no torch, no Triton.

BLOCK_SIZES = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
MAX_COLS = BLOCK_SIZES[-1]        # a row must fit one block (kept in registers)
MULTI_ROW_TILE = 2048             # rows shorter than this share a program: BLOCK_ROWS * BLOCK_SIZE == 2048
MIN_PROGRAMS = 512                # ... when that still leaves at least this many programs


def warp_choices(tile):
    """The two num_warps values compiled for a tile of `tile` = BLOCK_ROWS * BLOCK_SIZE elements
    (the first is the one pick_config uses)."""
    if tile <= 1024:
        return (2, 4)
    if tile == 2048:
        return (4, 8)
    if tile <= 8192:
        return (8, 16)
    return (16, 32)


def _row_counts(block_size):
    return (1,) if block_size >= MULTI_ROW_TILE else (1, MULTI_ROW_TILE // block_size)


# Every config of the spec, in its variant order (BLOCK_SIZE, then BLOCK_ROWS, then num_warps).
CONFIGS = [dict(BLOCK_SIZE=block, BLOCK_ROWS=rows, num_warps=warps)
           for block in BLOCK_SIZES for rows in _row_counts(block) for warps in warp_choices(block * rows)]


def next_power_of_2(n):
    return 1 << max(n - 1, 0).bit_length()


def pick_config(n_rows, n_cols, num_warps=None):
    """The config for an [n_rows, n_cols] softmax: the smallest block that holds a row; short rows
    packed into 2048-element tiles when that leaves at least MIN_PROGRAMS programs; the first warp
    count of the tile (or `num_warps`, which must be one of warp_choices(tile))."""
    if n_cols > MAX_COLS:
        raise ValueError(f"softmax: rows of {n_cols} columns are longer than the largest compiled block "
                         f"({MAX_COLS}); this example keeps a whole row in registers")
    block = max(BLOCK_SIZES[0], next_power_of_2(n_cols))
    rows = 1
    if block < MULTI_ROW_TILE and n_rows >= MIN_PROGRAMS * (MULTI_ROW_TILE // block):
        rows = MULTI_ROW_TILE // block
    choices = warp_choices(block * rows)
    if num_warps is None:
        num_warps = choices[0]
    elif num_warps not in choices:
        raise ValueError(f"softmax: num_warps={num_warps} is not compiled for BLOCK_SIZE={block} "
                         f"BLOCK_ROWS={rows}; choices: {choices}")
    return dict(BLOCK_SIZE=block, BLOCK_ROWS=rows, num_warps=num_warps)
