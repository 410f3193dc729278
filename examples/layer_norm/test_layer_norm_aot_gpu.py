# GPU tests of the layer norm example through the taot module (aot.py, module `layer_norm` that the
# build_module fixture of tests/gpu_modules.py builds from layer_norm.toml): against the
# fp64 reference, against the same kernel through Triton JIT, automatic selection for every row
# length from 1 to the largest block (the config Triton's heuristics give, a correct result) and the
# error past it, every compiled variant by index, the runtime's dispatch errors, CUDA graphs. Skipped
# without torch or a GPU.
from pathlib import Path

import pytest

import test_layer_norm_gpu as base
from example_support import RowSweep, chosen, gpu_marks  # on sys.path through conftest.py
from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py
from test_layer_norm_gpu import SKIP_REASON

pytestmark = gpu_marks(SKIP_REASON)
HERE = Path(__file__).resolve().parent

if SKIP_REASON is None:
    import torch

    import aot
    import jit

library = None  # the generated module, set by layer_norm_module
layer_norm_module = module_fixture(HERE / "layer_norm.toml", bind="library")


def variant_launch(index):
    def launch(*args, **config):
        library.layer_norm_fwd(*args, variant=index)
    return launch


def automatic_choice(x, y, w, b, mean, rstd):
    """(config, step) of the module's launch without a config on 2-d x and y."""
    return chosen(library.layer_norm_fwd, x, y, w, b, mean, rstd, x.shape[0], x.shape[1], x.stride(0), y.stride(0),
                  base.EPS)


def variant_inputs(variant):
    """(dtype name, aligned) of a variant, from its description "x_ptr: fp16 align 16, ..."."""
    x_spec = variant["description"].split(",")[0]
    return x_spec.split()[1], "align 16" in x_spec


@pytest.mark.parametrize("dtype_name", base.DTYPE_NAMES)
@pytest.mark.parametrize("shape", base.SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_aot_shapes_and_jit(shape, dtype_name):
    base.seed("aot shapes", shape, dtype_name)
    x, w, b = base.make_inputs(*shape, dtype_name)
    stats = torch.empty(shape[0], device="cuda")
    config, step = automatic_choice(x, x, w, b, stats, stats)
    assert (config, step) == (base.heuristic_config(*shape), "heuristics")
    result = aot.layer_norm(x, w, b, base.EPS, module=library)
    base.check(result, x, w, b, dtype_name, label=f"{shape} {dtype_name}")
    y_jit, mean_jit, rstd_jit = jit.layer_norm_jit(x, w, b, base.EPS)
    y, mean, rstd = result
    difference = (y.double() - y_jit.double()).abs().max().item()
    print(f"[aot vs jit] {shape[0]}x{shape[1]} {dtype_name} {config}: "
          f"bitwise equal {torch.equal(y, y_jit) and torch.equal(mean, mean_jit) and torch.equal(rstd, rstd_jit)}, "
          f"max difference of y {difference:.3g}")
    rtol, atol = base.TOLERANCES[dtype_name]
    torch.testing.assert_close(y, y_jit, rtol=rtol, atol=atol)
    torch.testing.assert_close(rstd, rstd_jit, rtol=1e-5, atol=0)


def test_every_variant():
    """Each of the compiled variants, launched by index on inputs it accepts: the aligned ones on
    16-byte aligned rows with n_cols and strides multiples of 16, the generic ones on rows one element
    into a padded buffer with a ragged n_cols."""
    variants = library.layer_norm_fwd_variants()
    assert len(variants) == 3 * 2 * len(base.CONFIGS)
    seen = set()
    for variant in variants:
        config = variant["config"]
        dtype_name, aligned = variant_inputs(variant)
        seen.add((dtype_name, aligned, tuple(sorted(config.items()))))
        n_rows = 2 * config["BLOCK_ROWS"] + 1
        n_cols = base.aligned_cols(config) if aligned else config["BLOCK_SIZE"] - 45
        base.seed("variant", variant["id"])
        result, x, w, b, untouched = base.run_padded(variant_launch(variant["index"]), n_rows, n_cols, dtype_name,
                                                     config, aligned)
        base.check(result, x, w, b, dtype_name, label=variant["id"])
        assert untouched, f"{variant['id']} wrote outside the rows"
    assert len(seen) == len(variants)


@pytest.mark.parametrize("dtype_name", base.DTYPE_NAMES)
@pytest.mark.parametrize("n_cols", [1, 100, 1000, 3000])
def test_aot_misaligned_views(n_cols, dtype_name):
    """Automatic dispatch picks the generic variant for rows that are not 16-byte aligned."""
    base.seed("aot views", n_cols, dtype_name)
    result, x, w, b, untouched = base.run_padded(aot.module_launch(library), 5, n_cols, dtype_name, {},
                                                 aligned=False)
    base.check(result, x, w, b, dtype_name, label=f"view {n_cols}")
    assert untouched


SWEEP_ROWS = 3          # rows per launch in the sweep over every n_cols
PACKED_ROWS = 4101      # rows enough to pack every block below 2048 (512 programs of 8 rows), last one ragged
PAD = 16                # NaN columns after each row, which must stay NaN


@pytest.mark.parametrize("dtype_name", base.DTYPE_NAMES)
def test_automatic_selection_for_every_row_length(dtype_name):
    """The module called without a config for every n_cols from 1 to the largest block (3 rows
    each), and again for n_cols up to 1024 with 4101 rows (multi-row tiles): the runtime chooses the
    config Triton's heuristics give (step "heuristics"); y within the dtype's tolerance of the fp64
    reference, mean within 1e-5 of the row's scale, rstd within 1e-4, nothing written past the row.
    Rows lie in wider buffers (row stride MAX_COLS + 16; weight and bias slices of longer vectors):
    n_cols a multiple of 16 takes the aligned variants, others the generic ones. One synchronization
    at the end; about 17,400 launches per dtype."""
    base.seed("every n_cols", dtype_name)
    dtype = base.torch_dtype(dtype_name)
    rtol, atol = base.TOLERANCES[dtype_name]
    cases = [(SWEEP_ROWS, n_cols) for n_cols in range(1, base.MAX_COLS + 1)] + \
            [(PACKED_ROWS, n_cols) for n_cols in range(1, 1025)]
    buffers = {rows: base.make_inputs(rows, width + PAD, dtype_name) + (
                   torch.empty(rows, width + PAD, dtype=dtype, device="cuda"),
                   torch.empty(rows, device="cuda"), torch.empty(rows, device="cuda"))
               for rows, width in ((SWEEP_ROWS, base.MAX_COLS), (PACKED_ROWS, 1024))}
    sweep = RowSweep()
    for n_rows, n_cols in cases:
        x_buffer, w_buffer, b_buffer, y_buffer, mean, rstd = buffers[n_rows]
        x, w, b, y = x_buffer[:, :n_cols], w_buffer[:n_cols], b_buffer[:n_cols], y_buffer[:, :n_cols]
        y_buffer[:, :n_cols + PAD].fill_(float("nan"))
        mean.fill_(float("nan"))
        rstd.fill_(float("nan"))
        choice = automatic_choice(x, y, w, b, mean, rstd)
        library.layer_norm_fwd(x, y, w, b, mean, rstd, n_rows, n_cols, x.stride(0), y.stride(0), base.EPS)
        ry, rmean, rrstd = base.ref.layer_norm_reference(x, w, b, base.EPS)
        scale = x.double().abs().amax(dim=-1).clamp(min=1)
        excess = torch.stack([((y.double() - ry).abs() - (atol + rtol * ry.abs())).amax(),       # y, mean, rstd
                              ((mean.double() - rmean).abs() / scale).amax() - 1e-5,
                              ((rstd.double() - rrstd).abs() - 1e-4 * rrstd.abs()).amax()]).amax()
        sweep.add((n_rows, n_cols), choice, (base.heuristic_config(n_rows, n_cols), "heuristics"), excess,
                  ~y_buffer[:, n_cols:n_cols + PAD].isnan().all())
    sweep.check()


def test_rows_longer_than_the_largest_block_are_refused():
    """n_cols = 16385: the heuristics ask for BLOCK_SIZE 32768, which was not compiled; the call
    fails naming it, and writes nothing."""
    n_cols = base.MAX_COLS + 1
    x, w, b = base.make_inputs(2, n_cols, "fp32")
    y = torch.full_like(x, float("nan"))
    stats = torch.full((2,), float("nan"), device="cuda")
    with pytest.raises(ValueError, match="BLOCK_SIZE") as error:
        library.layer_norm_fwd(x, y, w, b, stats, stats, 2, n_cols, x.stride(0), y.stride(0), base.EPS)
    print(f"[refused] n_cols {n_cols}: {error.value}")
    assert "32768" in str(error.value) and "16384" in str(error.value), str(error.value)
    with pytest.raises(ValueError, match="BLOCK_SIZE"):
        aot.layer_norm(x, w, b, base.EPS, module=library)
    torch.cuda.synchronize()
    assert y.isnan().all() and stats.isnan().all()


def test_asked_configs_keep_to_the_requirement():
    """A config the caller asks for is used as asked (step "config") when its block holds the row,
    and refused naming the rule when it does not."""
    x, w, b = base.make_inputs(4, 1000, "fp32")
    y, mean, rstd = torch.empty_like(x), torch.empty(4, device="cuda"), torch.empty(4, device="cuda")
    args = (x, y, w, b, mean, rstd, 4, 1000, 1000, 1000, base.EPS)
    config = {"BLOCK_SIZE": 2048, "BLOCK_ROWS": 1, "num_warps": 4}
    assert chosen(library.layer_norm_fwd, *args, **config) == (config, "config")
    library.layer_norm_fwd(*args, **config)
    torch.cuda.synchronize()
    base.check((y, mean, rstd), x, w, b, "fp32", label="asked for BLOCK_SIZE 2048")
    with pytest.raises(ValueError, match="n_cols <= BLOCK_SIZE") as error:
        library.layer_norm_fwd(*args, BLOCK_SIZE=512, BLOCK_ROWS=1, num_warps=2)
    print(f"[refused] BLOCK_SIZE 512 for 1000 columns: {error.value}")


def test_dispatch_errors_name_the_problem():
    x = torch.randn(4, 64, device="cuda")
    w, b, stats = torch.ones(64, device="cuda"), torch.zeros(64, device="cuda"), torch.empty(4, device="cuda")
    with pytest.raises(ValueError, match="config BLOCK_SIZE=128 was not compiled"):
        library.layer_norm_fwd(x, x, w, b, stats, stats, 4, 64, 64, 64, 1e-5, BLOCK_SIZE=128)
    with pytest.raises(ValueError, match="no compiled variant accepts w_ptr = fp16 pointer"):
        library.layer_norm_fwd(x, x, w.half(), b, stats, stats, 4, 64, 64, 64, 1e-5)


def test_cuda_graph():
    base.seed("graph")
    x, w, b = base.make_inputs(256, 1000, "fp16")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        aot.layer_norm(x, w, b, base.EPS, module=library)          # warm-up outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            result = aot.layer_norm(x, w, b, base.EPS, module=library)
    torch.cuda.current_stream().wait_stream(stream)
    x.copy_(base.make_inputs(256, 1000, "fp16")[0])
    graph.replay()
    torch.cuda.synchronize()
    base.check(result, x, w, b, "fp16", label="graph replay")
