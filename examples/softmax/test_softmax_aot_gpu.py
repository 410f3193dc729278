# GPU tests of the softmax example through the taot module (aot.py, module `softmax` that the
# build_module fixture of tests/gpu_modules.py builds from softmax.toml): against the
# fp64 reference, against the same kernel through Triton JIT, automatic selection for every row
# length from 1 to the largest block (the config Triton's heuristics give, a correct result) and the
# error past it, every compiled variant by index, the runtime's dispatch errors, streams and CUDA
# graphs. Skipped without torch or a GPU.
from pathlib import Path

import pytest

import test_softmax_gpu as base
from example_support import RowSweep, chosen, gpu_marks  # on sys.path through conftest.py
from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py
from test_softmax_gpu import SKIP_REASON

pytestmark = gpu_marks(SKIP_REASON)
HERE = Path(__file__).resolve().parent

if SKIP_REASON is None:
    import torch

    import aot
    import jit

library = None  # the generated module, set by softmax_module
softmax_module = module_fixture(HERE / "softmax.toml", bind="library")


def variant_launch(index):
    def launch(*args, **config):
        library.softmax(*args, variant=index)
    return launch


def automatic_choice(x, y):
    """(config, step) of the module's launch without a config on 2-d x and y."""
    return chosen(library.softmax, x, y, x.shape[0], x.shape[1], x.stride(0), y.stride(0))


def variant_inputs(variant):
    """(dtype name, aligned) of a variant, from its description "x_ptr: fp16 align 16, ..."."""
    x_spec = variant["description"].split(",")[0]
    return x_spec.split()[1], "align 16" in x_spec


@pytest.mark.parametrize("dtype_name", base.DTYPE_NAMES)
@pytest.mark.parametrize("shape", base.SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_aot_shapes_and_jit(shape, dtype_name):
    base.seed("aot shapes", shape, dtype_name)
    x = base.make_input(*shape, dtype_name)
    config, step = automatic_choice(x, x)
    assert (config, step) == (base.heuristic_config(*shape), "heuristics")
    y = aot.softmax(x, module=library)
    base.check(y, x, dtype_name, label=f"{shape} {dtype_name}")
    y_jit = jit.softmax_jit(x)
    difference = (y.double() - y_jit.double()).abs().max().item()
    print(f"[aot vs jit] {shape[0]}x{shape[1]} {dtype_name} {config}: "
          f"bitwise equal {torch.equal(y, y_jit)}, max difference {difference:.3g}")
    rtol, atol = base.TOLERANCES[dtype_name]
    torch.testing.assert_close(y, y_jit, rtol=rtol, atol=atol)


def test_every_variant():
    """Each of the compiled variants, launched by index on inputs it accepts: the aligned ones on
    16-byte aligned rows with n_cols and strides multiples of 16, the generic ones on rows one element
    into a padded buffer with a ragged n_cols."""
    variants = library.softmax_variants()
    assert len(variants) == 3 * 2 * len(base.CONFIGS)
    seen = set()
    for variant in variants:
        config = variant["config"]
        dtype_name, aligned = variant_inputs(variant)
        seen.add((dtype_name, aligned, tuple(sorted(config.items()))))
        n_rows = 2 * config["BLOCK_ROWS"] + 1
        n_cols = base.aligned_cols(config) if aligned else config["BLOCK_SIZE"] - 45
        base.seed("variant", variant["id"])
        x, y, untouched = base.run_padded(variant_launch(variant["index"]), n_rows, n_cols, dtype_name, config,
                                          aligned)
        base.check(y, x, dtype_name, label=variant["id"])
        assert untouched, f"{variant['id']} wrote outside the rows"
    assert len(seen) == len(variants)


@pytest.mark.parametrize("dtype_name", base.DTYPE_NAMES)
@pytest.mark.parametrize("n_cols", [1, 100, 1000, 3000])
def test_aot_misaligned_views(n_cols, dtype_name):
    """Automatic dispatch picks the generic variant for rows that are not 16-byte aligned."""
    base.seed("aot views", n_cols, dtype_name)
    launch = aot.module_launch(library)
    x, y, untouched = base.run_padded(launch, 5, n_cols, dtype_name, {}, aligned=False)
    base.check(y, x, dtype_name, label=f"view {n_cols}")
    assert untouched


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_aot_other_dims_and_out(dim):
    base.seed("aot dims", dim)
    x = base.make_input(12, 300, "bf16").view(12, 30, 10)
    base.check(aot.softmax(x, dim=dim, module=library), x, "bf16", dim=dim, label=f"dim {dim}")
    out = torch.full_like(x, float("nan"))
    assert aot.softmax(x, dim=dim, out=out, module=library) is out
    base.check(out, x, "bf16", dim=dim, label=f"dim {dim} out=")


SWEEP_ROWS = 3          # rows per launch in the sweep over every n_cols
PACKED_ROWS = 8197      # rows enough to pack every block below 2048 (512 programs of 16 rows), last one ragged
PAD = 16                # NaN columns after each row, which must stay NaN


@pytest.mark.parametrize("dtype_name", base.DTYPE_NAMES)
def test_automatic_selection_for_every_row_length(dtype_name):
    """The module called without a config for every n_cols from 1 to the largest block (3 rows
    each), and again for n_cols up to 1024 with 8197 rows (multi-row tiles): the runtime chooses the
    config Triton's heuristics give (step "heuristics"), and the result is within the dtype's
    tolerance of the fp64 reference with nothing written past the row. Rows lie in wider buffers
    (row stride MAX_COLS + 16): n_cols a multiple of 16 takes the aligned variants, others the
    generic ones. One synchronization at the end; about 34,000 launches per dtype."""
    base.seed("every n_cols", dtype_name)
    dtype = base.torch_dtype(dtype_name)
    rtol, atol = base.TOLERANCES[dtype_name]
    cases = [(SWEEP_ROWS, n_cols) for n_cols in range(1, base.MAX_COLS + 1)] + \
            [(PACKED_ROWS, n_cols) for n_cols in range(1, 1025)]
    buffers = {rows: ((torch.randn(rows, width + PAD, device="cuda") * 4).to(dtype),
                      torch.empty(rows, width + PAD, dtype=dtype, device="cuda"))
               for rows, width in ((SWEEP_ROWS, base.MAX_COLS), (PACKED_ROWS, 1024))}
    sweep = RowSweep()
    for n_rows, n_cols in cases:
        x_buffer, y_buffer = buffers[n_rows]
        x, y = x_buffer[:, :n_cols], y_buffer[:, :n_cols]
        y_buffer[:, :n_cols + PAD].fill_(float("nan"))
        choice = automatic_choice(x, y)
        library.softmax(x, y, n_rows, n_cols, x.stride(0), y.stride(0))
        expected = base.ref.softmax_reference(x)
        sweep.add((n_rows, n_cols), choice, (base.heuristic_config(n_rows, n_cols), "heuristics"),
                  ((y.double() - expected).abs() - (atol + rtol * expected.abs())).amax(),
                  ~y_buffer[:, n_cols:n_cols + PAD].isnan().all())
    sweep.check()


def test_rows_longer_than_the_largest_block_are_refused():
    """n_cols = 32769: the heuristics ask for BLOCK_SIZE 65536, which was not compiled; the call
    fails naming it, and writes nothing."""
    x = torch.zeros(2, base.MAX_COLS + 1, device="cuda")
    y = torch.full_like(x, float("nan"))
    with pytest.raises(ValueError, match="BLOCK_SIZE") as error:
        library.softmax(x, y, 2, x.shape[1], x.stride(0), y.stride(0))
    print(f"[refused] n_cols {x.shape[1]}: {error.value}")
    assert "65536" in str(error.value) and "32768" in str(error.value), str(error.value)
    with pytest.raises(ValueError, match="BLOCK_SIZE"):
        aot.softmax(x, module=library)
    torch.cuda.synchronize()
    assert y.isnan().all()


def test_asked_configs_keep_to_the_requirement():
    """A config the caller asks for is used as asked (step "config") when its block holds the row,
    and refused naming the rule when it does not."""
    x = torch.randn(4, 1000, device="cuda")
    y = torch.empty_like(x)
    config = {"BLOCK_SIZE": 2048, "BLOCK_ROWS": 1, "num_warps": 4}
    assert chosen(library.softmax, x, y, 4, 1000, 1000, 1000, **config) == (config, "config")
    library.softmax(x, y, 4, 1000, 1000, 1000, **config)
    torch.cuda.synchronize()
    base.check(y, x, "fp32", label="asked for BLOCK_SIZE 2048")
    with pytest.raises(ValueError, match="n_cols <= BLOCK_SIZE") as error:
        library.softmax(x, y, 4, 1000, 1000, 1000, BLOCK_SIZE=512, BLOCK_ROWS=1, num_warps=2)
    print(f"[refused] BLOCK_SIZE 512 for 1000 columns: {error.value}")


def test_dispatch_errors_name_the_problem():
    x = torch.randn(4, 64, device="cuda")
    y = torch.empty_like(x)
    with pytest.raises(ValueError, match="config BLOCK_SIZE=64 was not compiled"):
        library.softmax(x, y, 4, 64, 64, 64, BLOCK_SIZE=64)
    with pytest.raises(ValueError, match="no compiled variant accepts x_ptr = fp64 pointer"):
        library.softmax(x.double(), y.double(), 4, 64, 64, 64, BLOCK_SIZE=128, BLOCK_ROWS=1, num_warps=2)
    with pytest.raises(TypeError, match="fp32, fp16 or bf16"):
        aot.softmax(x.double(), module=library)


def test_stream_and_cuda_graph():
    """Launches go to torch's current stream, and can be captured in a CUDA graph."""
    base.seed("graph")
    x = base.make_input(256, 1000, "fp16")
    out = torch.full_like(x, float("nan"))
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        aot.softmax(x, out=out, module=library)          # warm-up: loads the module outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            aot.softmax(x, out=out, module=library)
    torch.cuda.current_stream().wait_stream(stream)
    out.fill_(float("nan"))
    x.copy_(base.make_input(256, 1000, "fp16"))
    graph.replay()
    torch.cuda.synchronize()
    base.check(out, x, "fp16", label="graph replay")
