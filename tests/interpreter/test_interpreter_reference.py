"""The reference `taot check --against interpreter` computes (taot.check.interpret: Triton's interpreter in
a child process, on CPU tensors) equals torch on the CPU, for vector_add and matmul. Needs no GPU."""
import math

import pytest

from taot.debug.check import _interpreter_caveat, interpret

NUM_SMS = 132  # any count: these kernels' grids do not use it


def general_variant(manifest_kernel, dtype, **config):
    """The variant for `dtype` whose config has `config`, promising least about its arguments (the
    smallest alignments and hints), so that it takes any inputs of that dtype."""
    matches = [v for v in manifest_kernel["variants"] if v["specialization"][0]["dtype"] == dtype
               and all(v["config"][name] == value for name, value in config.items())]
    assert matches, f"{manifest_kernel['name']} has no {dtype} variant with {config}"
    return min(matches, key=lambda v: sum(s.get("align", 0) + s.get("hint", 0) for s in v["specialization"]))


def interpreter_outputs(library, kernel_name, variant, args):
    """The kernel's outputs as the interpreter computes them, the way `taot check` asks for them."""
    manifest_kernel = library.kernel(kernel_name)
    call_args = [a for a in manifest_kernel["args"] if a["kind"] != "constexpr"]
    outputs = [i for i, a in enumerate(call_args) if a.get("output")]
    return interpret(library.folder, manifest_kernel, variant["id"], variant["config"], args, outputs, NUM_SMS)


@pytest.mark.parametrize("dtype, n, block", [("fp32", 1000, 256), ("fp16", 4099, 1024)])
def test_vector_add_equals_torch(torch, example_library, dtype, n, block):
    library = example_library("vector_add")
    variant = general_variant(library.kernel("add_kernel"), dtype, BLOCK_SIZE=block)
    torch_dtype = {"fp32": torch.float32, "fp16": torch.float16}[dtype]
    generator = torch.Generator().manual_seed(n)
    x, y = (torch.rand(n, generator=generator).to(torch_dtype) for _ in range(2))
    out = torch.full_like(x, math.nan)  # an output the interpreter leaves alone cannot pass
    (got,) = interpreter_outputs(library, "add_kernel", variant, [x, y, out, n])
    assert torch.equal(got, x + y)  # one rounding of x + y either way: bitwise equal


# kernel, tile, (M, N, K), B column-major. `matmul` takes N, K and strides multiple of 16, unit inner strides.
MATMUL_CASES = [
    ("matmul", dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=256), (20, 48, 80), False),  # one partial K step
    ("matmul", dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64), (70, 96, 160), False),  # 2 x 2 tiles, 3 K steps
    ("matmul_generic", {}, (33, 50, 45), True),                                  # ragged, B a transposed view
]


@pytest.mark.parametrize("kernel_name, tile, sizes, b_column_major", MATMUL_CASES)
def test_fp16_matmul_matches_torch(torch, example_library, kernel_name, tile, sizes, b_column_major):
    library = example_library("matmul")
    variant = general_variant(library.kernel(kernel_name), "fp16", **tile)
    M, N, K = sizes
    generator = torch.Generator().manual_seed(M)
    a = torch.randn(M, K, generator=generator).half()
    b = (torch.randn(N, K, generator=generator).t() if b_column_major else
         torch.randn(K, N, generator=generator)).mul(K ** -0.5).half()
    c = torch.full((M, N), math.nan, dtype=torch.float16)
    args = [a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1)]
    (got,) = interpreter_outputs(library, kernel_name, variant, args)
    want = (a.float() @ b.float()).half()
    # fp32 accumulation in another order, then one fp16 rounding each: at most an fp16 ulp apart
    # (a relative 2^-10 ~ 1e-3), |C| about 1.
    torch.testing.assert_close(got, want, atol=2e-3, rtol=2e-3)


def test_a_bf16_mismatch_says_the_interpreter_computes_on_bit_patterns(torch, example_library):
    """Triton 3.6's interpreter keeps bf16 as uint16 and adds the bit patterns: `taot check` says so
    when a bf16 variant mismatches against it."""
    library = example_library("vector_add")
    variant = general_variant(library.kernel("add_kernel"), "bf16", BLOCK_SIZE=256)
    x = torch.tensor([2.5, 1.0, 0.5, 3.0], dtype=torch.bfloat16)
    y = torch.tensor([2.0, 1.0, 0.25, -1.0], dtype=torch.bfloat16)
    args = [x, y, torch.empty_like(x), 4]
    (got,) = interpreter_outputs(library, "add_kernel", variant, args)
    assert not torch.equal(got, x + y), "Triton's interpreter now adds bf16 right: drop taot.debug.check._interpreter_caveat"
    caveat = _interpreter_caveat(args)
    assert "bit patterns" in caveat and "--against jit or reference" in caveat
    assert _interpreter_caveat([x.half(), y.half(), x.half(), 4]) == ""
