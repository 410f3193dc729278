# GPU tests of the layer norm example through the taot module (aot.py, module `layer_norm` from
# `taot build layer_norm.toml --python` on PYTHONPATH; scripts/gpu_examples.sh builds it): against the
# fp64 reference, against the same kernel through Triton JIT, every compiled variant by index, the
# runtime's dispatch errors, CUDA graphs. Skipped without torch or a GPU.
import pytest

import configs
import test_layer_norm_gpu as base
from example_support import gpu_marks  # on sys.path through conftest.py
from test_layer_norm_gpu import SKIP_REASON

pytestmark = gpu_marks(SKIP_REASON)

if SKIP_REASON is None:
    import torch

    import aot
    import jit
    import layer_norm as library  # the generated module


def variant_launch(index):
    def launch(*args, **config):
        library.layer_norm_fwd(*args, variant=index)
    return launch


def variant_inputs(variant):
    """(dtype name, aligned) of a variant, from its description "x_ptr: fp16 align 16, ..."."""
    x_spec = variant["description"].split(",")[0]
    return x_spec.split()[1], "align 16" in x_spec


@pytest.mark.parametrize("dtype_name", base.DTYPE_NAMES)
@pytest.mark.parametrize("shape", base.SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_aot_shapes_and_jit(shape, dtype_name):
    base.seed("aot shapes", shape, dtype_name)
    x, w, b = base.make_inputs(*shape, dtype_name)
    result = aot.layer_norm(x, w, b, base.EPS, module=library)
    base.check(result, x, w, b, dtype_name, label=f"{shape} {dtype_name}")
    y_jit, mean_jit, rstd_jit = jit.layer_norm_jit(x, w, b, base.EPS)
    y, mean, rstd = result
    difference = (y.double() - y_jit.double()).abs().max().item()
    print(f"[aot vs jit] {shape[0]}x{shape[1]} {dtype_name} {configs.pick_config(*shape)}: "
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
    assert len(variants) == 3 * 2 * len(configs.CONFIGS)
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
    result, x, w, b, untouched = base.run_padded(aot.module_launch(library), 5, n_cols, dtype_name,
                                                 configs.pick_config(5, n_cols), aligned=False)
    base.check(result, x, w, b, dtype_name, label=f"view {n_cols}")
    assert untouched


@pytest.mark.parametrize("n_cols", [7, 12000])
def test_automatic_selection_without_config(n_cols):
    """A call without a config gets the spec's default (the largest block): correct for any row length."""
    base.seed("automatic", n_cols)
    x, w, b = base.make_inputs(33, n_cols, "bf16")
    y = torch.full_like(x, float("nan"))
    mean, rstd = torch.empty(33, device="cuda"), torch.empty(33, device="cuda")
    library.layer_norm_fwd(x, y, w, b, mean, rstd, 33, n_cols, x.stride(0), y.stride(0), base.EPS)
    torch.cuda.synchronize()
    base.check((y, mean, rstd), x, w, b, "bf16", label=f"automatic {n_cols}")


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
