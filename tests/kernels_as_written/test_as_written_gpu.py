# GPU tests: every kernel of kernels.py through the taot module `as_written` (kernels.toml, built by
# the build_module fixture of tests/gpu_modules.py) against the same kernel through Triton's JIT, launched as
# its users launch it (jit.py), bitwise, over ragged shapes. The spec specializes pointers and ints as
# the JIT does (16-byte aligned tensors, %16 strides where they are): a variant compiled without the
# alignment can round a reduction differently. A module compiled by another Triton release than the
# JIT's is compared within rounding instead (`scripts/gpu.sh versions`). Skipped without torch or a GPU.
import pytest

from gpu_modules import module_fixture, torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()
pytestmark = pytest.mark.gpu

if torch is not None:
    import triton

    import jit
    import kernels

as_written = None  # the generated module, set by as_written_module
as_written_module = module_fixture("tests/kernels_as_written/kernels.toml", bind="as_written")

DTYPES = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32"}


def dtype(name):
    return getattr(torch, DTYPES[name])


def _release(version):
    return tuple(version.split(".")[:2])


def _library_triton():
    """The Triton that compiled the module's images (`scripts/gpu.sh versions` runs libraries compiled by
    other releases against this machine's JIT)."""
    listing = next(name for name in dir(as_written) if name.endswith("_variants"))
    return getattr(as_written, listing)()[0]["images"][0]["triton_version"]


def same(aot, reference, label):
    """Bitwise equal when one Triton release compiled both; else as close as two compilers' roundings
    (torch.testing's tolerances for the dtype: a few units in the last place)."""
    equal = torch.equal(aot, reference)
    if not equal:
        difference = (aot.double() - reference.double()).abs().max().item()
        print(f"[as written] {label}: NOT bitwise equal, max difference {difference:.3g}")
    if _release(_library_triton()) == _release(triton.__version__):
        assert equal, label
    else:
        torch.testing.assert_close(aot, reference, msg=lambda text: f"{label}: {text}")


def seed(*parts):
    torch.manual_seed(hash(parts) % (2 ** 31))


# ---- @triton.autotune matmul ----

MATMUL_SHAPES = [(1, 1, 1), (17, 33, 65), (64, 128, 64), (300, 129, 255), (1000, 513, 999)]


def spec_configs():
    """The decorator's configs and the one the spec adds."""
    return list(kernels.matmul_kernel.configs) + [
        triton.Config({"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1},
                      num_warps=2, num_stages=4)]


def aot_matmul(a, b, c, config, activation):
    M, K = a.shape
    N = b.shape[1]
    as_written.matmul(a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                      ACTIVATION=activation, num_warps=config.num_warps, num_stages=config.num_stages, **config.kwargs)


def matmul_inputs(shape, name):
    M, N, K = shape
    seed("matmul", shape, name)
    a = torch.randn(M, K, device="cuda").to(dtype(name))
    b = torch.randn(K, N, device="cuda").to(dtype(name))
    return a, b


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
@pytest.mark.parametrize("name", ["fp16", "bf16"])
@pytest.mark.parametrize("shape", MATMUL_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_every_config_matches_jit(shape, name, activation):
    a, b = matmul_inputs(shape, name)
    for config in spec_configs():
        c_jit = torch.full((shape[0], shape[1]), float("nan"), device="cuda", dtype=dtype(name))
        c_aot = c_jit.clone()
        jit.matmul_with_config(a, b, c_jit, config, activation)
        aot_matmul(a, b, c_aot, config, activation)
        same(c_aot, c_jit, f"matmul {shape} {name} {activation!r} {config}")


@pytest.mark.parametrize("shape", [(1, 1, 1), (300, 129, 255), (1000, 513, 999)], ids=lambda s: "x".join(map(str, s)))
def test_matmul_the_autotuners_choice_matches_jit(shape):
    a, b = matmul_inputs(shape, "fp16")
    c_jit = torch.empty(shape[0], shape[1], device="cuda", dtype=torch.float16)
    best = jit.matmul(a, b, c_jit)
    c_aot = torch.empty_like(c_jit)
    aot_matmul(a, b, c_aot, best, "")
    same(c_aot, c_jit, f"matmul {shape} autotuned {best}")


# ---- @triton.heuristics rms norm (launch-only row count) ----

@pytest.mark.parametrize("with_weight", [True, False])
@pytest.mark.parametrize("name", ["fp16", "fp32"])
@pytest.mark.parametrize("rows, cols", [(1, 129), (7, 500), (64, 1000), (3, 3000), (5, 8192)])
def test_rms_norm_matches_jit(rows, cols, name, with_weight):
    seed("rms", rows, cols, name, with_weight)
    x = torch.randn(rows, cols, device="cuda", dtype=dtype(name))
    weight = torch.randn(cols, device="cuda", dtype=dtype(name)) if with_weight else None
    out_jit, out_aot = torch.empty_like(x), torch.empty_like(x)
    jit.rms_norm(x, weight, out_jit)
    block = triton.next_power_of_2(cols)  # what the decorator's rules give, by hand until rules run at launch
    as_written.rms_norm(x, weight, out_aot, x.stride(0), out_aot.stride(0), cols, 1e-6, rows,
                        BLOCK_SIZE=block, HAS_WEIGHT=with_weight, num_warps=8 if block >= 2048 else 4)
    same(out_aot, out_jit, f"rms_norm {rows}x{cols} {name} weight={with_weight}")


# ---- string constexpr, None pointer, per-target num_stages ----

@pytest.mark.parametrize("activation", ["", "gelu", "relu"])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("name", ["fp16", "bf16", "fp32"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 1000), (129, 4097), (1024, 1024)], ids=lambda s: "x".join(map(str, s)))
def test_bias_act_matches_jit(shape, name, with_bias, activation):
    seed("bias_act", shape, name, with_bias, activation)
    x = torch.randn(*shape, device="cuda", dtype=dtype(name))
    bias = torch.randn(shape[1], device="cuda", dtype=dtype(name)) if with_bias else None
    out_jit, out_aot = torch.empty_like(x), torch.empty_like(x)
    jit.bias_act(x, bias, out_jit, activation)
    as_written.bias_act(x, bias, out_aot, x.numel(), shape[1], ACTIVATION=activation)  # automatic otherwise
    same(out_aot, out_jit, f"bias_act {shape} {name} bias={with_bias} {activation!r}")


def test_none_selects_the_none_variant_and_a_tensor_the_other():
    x = torch.randn(4, 64, device="cuda")
    out = torch.empty_like(x)
    as_written.bias_act(x, None, out, x.numel(), 64)
    torch.testing.assert_close(out, x, rtol=0, atol=0)
    bias = torch.ones(64, device="cuda")
    as_written.bias_act(x, bias, out, x.numel(), 64)
    torch.testing.assert_close(out, x + 1, rtol=0, atol=0)
    with pytest.raises((TypeError, ValueError)):
        as_written.bias_act(None, bias, out, x.numel(), 64)  # x_ptr has no None variants


# ---- persistent kernel: the grid reads num_sms; an explicit grid ----

@pytest.mark.parametrize("name", ["fp32", "bf16"])
@pytest.mark.parametrize("n", [1, 2047, 2049, 1_000_003, 2 ** 24 + 5])
def test_persistent_matches_jit(n, name):
    seed("persistent", n, name)
    x = torch.randn(n, device="cuda", dtype=dtype(name))
    out_jit, out_aot = torch.empty_like(x), torch.empty_like(x)
    jit.persistent_scale(x, out_jit, 1.5)
    as_written.persistent_scale(x, out_aot, n, 1.5)
    same(out_aot, out_jit, f"persistent {n} {name}")


def test_explicit_grid():
    n = 100_000
    x = torch.randn(n, device="cuda")
    out_jit = torch.empty_like(x)
    out_aot = torch.zeros_like(x)
    jit.persistent_scale(x, out_jit, 2.0, programs=3)
    as_written.persistent_scale(x, out_aot, n, 2.0, grid=(3,))
    same(out_aot, out_jit, "persistent on an explicit grid of 3")
    untouched = torch.zeros_like(x)
    as_written.persistent_scale(x, untouched, n, 2.0, grid=(0, 1, 1))
    torch.cuda.synchronize()
    assert not untouched.any()


# ---- one program per row, the row count launch-only ----

@pytest.mark.parametrize("name", ["fp16", "bf16"])
@pytest.mark.parametrize("rows, cols", [(1, 1), (33, 100), (257, 256), (8, 1000), (3, 2049), (16, 4096)])
def test_layer_norm_matches_jit(rows, cols, name):
    seed("layer_norm", rows, cols, name)
    x = torch.randn(rows, cols, device="cuda", dtype=dtype(name))
    w = torch.randn(cols, device="cuda", dtype=dtype(name))
    b = torch.randn(cols, device="cuda", dtype=dtype(name))
    y_jit, y_aot = torch.empty_like(x), torch.empty_like(x)
    jit.layer_norm_fwd(x, y_jit, w, b)
    block = max(256, triton.next_power_of_2(cols))
    as_written.layer_norm_fwd(x, y_aot, w, b, x.stride(0), cols, 1e-5, rows, BLOCK_SIZE=block)
    same(y_aot, y_jit, f"layer_norm {rows}x{cols} {name}")


# ---- a constexpr named variant: variant= sets it, variant_= picks a compiled variant ----

@pytest.mark.parametrize("variant", [0, 1])
def test_a_field_named_variant_is_set_by_variant_keyword(variant):
    n = 5000
    x = torch.randn(n, device="cuda")
    out_jit, out_aot, out_index = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
    jit.affine(x, out_jit, variant)
    as_written.affine(x, out_aot, n, variant=variant)
    same(out_aot, out_jit, f"affine variant={variant}")
    index = next(i for i, v in enumerate(as_written.affine.variants()) if v["config"]["variant"] == variant)
    as_written.affine(x, out_index, n, variant_=index)
    same(out_index, out_jit, f"affine variant_={index}")


# ---- arguments by keyword, as Triton's callers pass them ----

def test_arguments_by_keyword_match_jit():
    n = 3001
    x = torch.randn(n, device="cuda")
    out_jit, out_aot, out_bound = torch.empty_like(x), torch.empty_like(x), torch.empty_like(x)
    jit.persistent_scale(x, out_jit, 1.5)
    as_written.persistent_scale(x, out_ptr=out_aot, scale=1.5, n_elements=n)
    same(out_aot, out_jit, "persistent_scale with arguments by keyword")
    as_written.persistent_scale.bind()(x_ptr=x, out_ptr=out_bound, n_elements=n, scale=1.5)
    same(out_bound, out_jit, "bound persistent_scale with arguments by keyword")


# ---- scalars in more than one form: None or a float, an int or a float ----

@pytest.mark.parametrize("softcap", [None, 0.75, 30.0])
@pytest.mark.parametrize("lower", [-128, 0, -448.0, 0.25])
@pytest.mark.parametrize("n", [1, 1000, 4097])
def test_scalar_forms_match_jit(n, lower, softcap):
    seed("softcap", n, lower, softcap)
    x = torch.randn(n, device="cuda") * 100
    out_jit, out_aot = torch.empty_like(x), torch.empty_like(x)
    jit.softcap_clamp(x, out_jit, softcap, lower)
    as_written.softcap_clamp(x, out_aot, n, softcap, lower)
    same(out_aot, out_jit, f"softcap_clamp n={n} lower={lower!r} softcap={softcap!r}")
    index, _ = as_written.softcap_clamp.choose(x, out_aot, n, softcap, lower)
    # the id's tokens after the three fixed arguments: softcap's form, then lower's
    forms = as_written.softcap_clamp.variants()[index]["id"].split("softcap_clamp_fp32a16_fp32a16_i32_")[1]
    assert forms.split("_")[:2] == ["none" if softcap is None else "fp32",
                                    "fp32" if isinstance(lower, float) else "i32"], forms
