# GPU tests: every kernel of the corpus, launched by its own project (the project's Python launcher,
# e.g. liger's swiglu_forward, run as its users call it, through Triton's JIT), then the same launch
# replayed through the spec's taot module (jit.py records it), compared bit for bit: every tensor
# argument, inputs written in place included. Ragged shapes: row counts and widths that are not
# multiples of the block or of 16, where the spec's values allow. The projects' packages come from
# build/corpus-site ($TAOT_CORPUS_SITE; scripts/corpus_env.sh), put on sys.path by conftest.py.
# Skipped without torch or a GPU.
import dataclasses
from typing import Callable

import pytest

import corpus
from gpu_modules import torch_if_installed  # tests/gpu_modules.py, through the repo's conftest.py

torch = torch_if_installed()

if torch is not None:
    import triton

    import jit

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}


def dtype(name):
    return getattr(torch, DTYPES[name])


def randn(*shape, name="bf16"):
    return torch.randn(*shape, device="cuda").to(dtype(name))


@dataclasses.dataclass
class Case:
    spec: str                  # the spec's stem
    kernel: str                # its kernel's name
    shapes: list               # what `call` takes, one test per entry
    call: Callable             # (shape, dtype name) -> runs the project's launcher, or returns a function
                               # that does (after a forward pass the backward needs)
    launch_args: Callable = lambda launch: ()   # (jit.Launch) -> the spec's launch-only arguments
    dtypes: tuple = ("bf16",)


def rows(launch):
    return (launch.grid_values()[0],)


# ---- Liger-Kernel ----

def liger(name):
    import importlib
    return importlib.import_module(f"liger_kernel.ops.{name}")


def liger_swiglu_fwd(shape, name):
    liger("swiglu").swiglu_forward(randn(*shape), randn(*shape))


def liger_swiglu_bwd(shape, name):
    liger("swiglu").swiglu_backward(randn(*shape), randn(*shape), randn(*shape))


def liger_geglu_fwd(shape, name):
    liger("geglu").geglu_forward(randn(*shape), randn(*shape))


def liger_geglu_bwd(shape, name):
    liger("geglu").geglu_backward(randn(*shape), randn(*shape), randn(*shape))


def liger_rms_norm_fwd(shape, name):
    (n_rows, n_cols), weighted = shape
    weight = randn(n_cols, name=name) if weighted else None
    liger("rms_norm").rms_norm_forward(randn(n_rows, n_cols, name=name), weight, 1e-6, 0.0, "llama", None)


def liger_rms_norm_bwd(shape, name):
    n_rows, n_cols = shape
    rms_norm = liger("rms_norm")
    x, weight = randn(n_rows, n_cols), randn(n_cols)
    _, x, rstd, block, warps, mode = rms_norm.rms_norm_forward(x, weight, 1e-6, 0.0, "llama", None)
    return lambda: rms_norm.rms_norm_backward(randn(n_rows, n_cols), x, weight, rstd, 0.0, mode, block, warps,
                                              False, None)


def liger_layer_norm_fwd(shape, name):
    n_rows, n_cols = shape
    liger("layer_norm").layer_norm_forward(randn(n_rows, n_cols, name=name), randn(n_cols, name=name),
                                           randn(n_cols, name=name), 1e-5)


def liger_softmax_fwd(shape, name):
    liger("softmax")._softmax_forward(randn(*shape, name=name))


def liger_dyt_fwd(shape, name):
    n_rows, n_cols = shape
    liger("dyt").liger_dyt_fwd(randn(n_rows, n_cols), randn(1), randn(n_cols), randn(n_cols))


# ---- xformers ----

def xformers_kernels(name):
    import importlib
    return importlib.import_module(f"xformers.ops._triton.{name}")


def xformers_rms_norm(shape, name):
    (n_rows, n_cols), weighted = shape
    xformers_kernels("rmsnorm_kernels")._rms_norm_forward(randn(n_rows, n_cols), randn(n_cols) if weighted else None,
                                                          1e-6)


def xformers_rms_norm_add(shape, name):
    (n_rows, n_cols), weighted = shape
    xformers_kernels("rmsnorm_kernels")._rms_norm_add_forward(randn(n_rows, n_cols), randn(n_rows, n_cols),
                                                              randn(n_cols) if weighted else None, 1e-6)


def index(count, limit):
    return torch.randperm(limit, device="cuda")[:count]


def xformers_index_select_cat_fwd(shape, name):
    num_rows, num_indices, num_cols = shape
    source = randn(num_rows, num_cols, name=name)
    output = torch.empty(num_indices, num_cols, device="cuda", dtype=dtype(name))
    xformers_kernels("k_index_select_cat").index_select_cat_fwd(output, source, index(num_indices, num_rows))


def xformers_index_select_cat_bwd(shape, name):
    num_rows, num_indices, num_cols = shape
    grad_source = torch.zeros(num_rows, num_cols, device="cuda", dtype=dtype(name))
    xformers_kernels("k_index_select_cat").index_select_cat_bwd(grad_source, index(num_indices, num_rows),
                                                                randn(num_indices, num_cols, name=name))


def xformers_scaled_index_add_fwd(shape, name):
    (num_inp, num_src, num_rows, num_cols), scaled = shape
    x, source = randn(num_inp, num_rows, num_cols), randn(num_src, num_rows, num_cols)
    scaling = randn(num_cols) if scaled else None
    xformers_kernels("k_scaled_index_add").scaled_index_add_fwd(x, index(num_src, num_inp), source, scaling, 0.5)


# ---- bitsandbytes (its Triton backend) ----

def bnb_kernels(name):
    import importlib
    return importlib.import_module(f"bitsandbytes.backends.triton.{name}")


def bnb_code():
    return torch.linspace(-1, 1, 256, device="cuda")  # a sorted 8-bit code, as create_dynamic_map makes one


def bnb_quantize_8bit(shape, name):
    n, block = shape
    bnb_kernels("kernels_8bit_quant").quantize_blockwise_triton(randn(n, name=name), bnb_code(), block)


def bnb_dequant_8bit(shape, name):
    n, block = shape
    codes = torch.randint(0, 256, (n,), device="cuda", dtype=torch.uint8)
    absmax = torch.rand(triton.cdiv(n, block), device="cuda").to(dtype(name))
    bnb_kernels("kernels_8bit_quant").dequant_8bit_blockwise(codes, absmax, bnb_code(), block, dtype=dtype(name))


def bnb_quantize_4bit(quant_type):
    def call(shape, name):
        n, block = shape
        blocks = triton.cdiv(n, block)
        absmax = torch.empty(blocks, device="cuda")
        packed = torch.empty((n + 1) // 2, device="cuda", dtype=torch.uint8)
        bnb_kernels("kernels_4bit").quantize_4bit_blockwise_triton(randn(n, name=name), block, quant_type, blocks,
                                                                   absmax, n, packed)
    return call


def bnb_dequant_4bit(quant_type):
    def call(shape, name):
        n, block = shape
        packed = torch.randint(0, 256, ((n + 1) // 2,), device="cuda", dtype=torch.uint8)
        absmax = torch.rand(triton.cdiv(n, block), device="cuda")
        out = torch.empty(n, device="cuda", dtype=dtype(name))
        bnb_kernels("kernels_4bit").dequantize_4bit_impl(packed, absmax, block, quant_type, dtype(name), out)
    return call


def blocks(launch):
    return (triton.cdiv(launch.arguments["n_elements"], launch.arguments["BLOCK_SIZE"]),)


# ---- torchao ----

def int8(*shape):
    return torch.randint(-128, 128, shape, device="cuda", dtype=torch.int8)


def spec_configs(kernel):
    """The config list the spec gives `kernel` (torchao's int_matmul takes its config from the caller)."""
    import tomllib
    entry = next(k for k in tomllib.loads((corpus.HERE / "torchao.toml").read_text())["kernel"] if k["name"] == kernel)
    options = ("num_warps", "num_stages")
    return [triton.Config({key: value for key, value in config.items() if key not in options},
                          **{key: config[key] for key in options}) for config in entry["configs"]]


def torchao_int_matmul(shape, name):
    from torchao.kernel import intmm_triton
    M, N, K = shape
    a, b = int8(M, K), int8(K, N)
    for config in spec_configs("int_matmul"):
        intmm_triton.int_matmul_kernel(a, b, torch.empty(M, N, device="cuda", dtype=torch.int32), config)


def torchao_int_scaled_matmul(shape, name):
    from torchao.kernel import intmm_triton
    M, N, K = shape
    a, b, scales = int8(M, K), int8(K, N), torch.rand(M, 1, device="cuda").to(torch.bfloat16)
    for config in spec_configs("int_scaled_matmul"):
        intmm_triton.int_scaled_matmul_kernel(a, b, scales, torch.empty(M, N, device="cuda", dtype=torch.bfloat16),
                                              config)


SCALED_INT8_MM_TILES = {(64, 64, 32, 2, 4), (128, 128, 32, 2, 8), (128, 64, 32, 3, 4)}  # torchao.toml's where


def torchao_scaled_int8_mm(shape, name):
    """The autotuner times the tiles the library has (the spec's `where`), as a user of the library
    gets them, and launches its choice."""
    from torchao.prototype.quantized_training import int8_mm
    M, N, K = shape
    autotuner = jit.tuner(int8_mm._scaled_int8_mm_kernel)
    configs = autotuner.configs
    autotuner.configs = [config for config in configs if (config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"],
                         config.kwargs["BLOCK_K"], config.num_stages, config.num_warps) in SCALED_INT8_MM_TILES]
    autotuner.cache.clear()
    try:
        int8_mm.scaled_int8_mm_cuda(int8(M, K), int8(K, N), torch.rand(M, device="cuda").to(torch.bfloat16),
                                    torch.rand(N, device="cuda").to(torch.bfloat16))
    finally:
        autotuner.configs = configs
        autotuner.cache.clear()


# ---- flash-linear-attention ----

def fla_l2norm_fwd(shape, name):
    from fla.modules.norm import l2norm
    l2norm.l2norm_fwd(randn(*shape), 1e-6)


def fla_l2norm_bwd(shape, name):
    from fla.modules.norm import l2norm
    y, rstd = l2norm.l2norm_fwd(randn(*shape), 1e-6)
    return lambda: l2norm.l2norm_bwd(y, rstd, randn(*shape), 1e-6)


def fla_sigmoid_fwd(shape, name):
    from fla.modules.activations import ops
    ops.sigmoid_fwd(randn(*shape))


def fla_chunk_local_cumsum(shape, name):
    from fla.ops.utils import cumsum
    (batch, length, heads), reverse, scale = shape
    cumsum.chunk_local_cumsum_scalar(torch.randn(batch, length, heads, device="cuda"), 64, reverse=reverse,
                                     scale=scale)


ROWS = [(1, 1000), (7, 4096), (333, 1000), (2, 3, 4096)]
NORM_ROWS = [(1, 700), (7, 1000), (64, 4096), (3, 5000), (300, 1000)]
CASES = [
    Case("liger_kernel", "swiglu_fwd", ROWS, liger_swiglu_fwd, rows),
    Case("liger_kernel", "swiglu_bwd", ROWS, liger_swiglu_bwd, rows),
    Case("liger_kernel", "geglu_fwd", ROWS, liger_geglu_fwd, rows),
    Case("liger_kernel", "geglu_bwd", ROWS, liger_geglu_bwd, rows),
    Case("liger_kernel", "rms_norm_fwd", [(shape, weighted) for shape in NORM_ROWS for weighted in (True, False)],
         liger_rms_norm_fwd, rows, ("bf16", "fp32")),
    Case("liger_kernel", "rms_norm_bwd", [(1, 700), (7, 1000), (200, 4096), (1000, 3000)], liger_rms_norm_bwd),
    Case("liger_kernel", "layer_norm_fwd", [(1, 700), (7, 1000), (64, 4096), (300, 3000)], liger_layer_norm_fwd,
         rows, ("bf16", "fp32")),
    Case("liger_kernel", "softmax_fwd", [(1, 700), (7, 1000), (64, 4096), (300, 3000)], liger_softmax_fwd, rows,
         ("bf16", "fp32")),
    Case("liger_kernel", "dyt_fwd", [(1, 1000), (77, 1000)], liger_dyt_fwd, lambda launch: (launch.grid_values()[1],)),
    Case("xformers", "rms_norm", [(shape, weighted) for shape in [(1, 1000), (33, 4096), (300, 1000)]
                                  for weighted in (True, False)], xformers_rms_norm, rows),
    Case("xformers", "rms_norm_add", [(shape, weighted) for shape in [(1, 1000), (33, 4096), (300, 1000)]
                                      for weighted in (True, False)], xformers_rms_norm_add, rows),
    Case("xformers", "index_select_cat_fwd", [(2, 1, 7), (100, 33, 1000), (4096, 1000, 512)],
         xformers_index_select_cat_fwd, dtypes=("bf16", "fp32")),
    Case("xformers", "index_select_cat_bwd", [(2, 1, 7), (100, 33, 1000), (4096, 1000, 512)],
         xformers_index_select_cat_bwd, dtypes=("bf16", "fp32")),
    Case("xformers", "scaled_index_add_fwd", [(shape, scaled) for shape in [(2, 1, 3, 7), (50, 17, 5, 1000)]
                                              for scaled in (True, False)], xformers_scaled_index_add_fwd),
    Case("bitsandbytes", "quantize_8bit_blockwise", [(1, 64), (1000, 64), (4097, 256), (100_000, 256)],
         bnb_quantize_8bit, dtypes=("bf16", "fp32")),
    Case("bitsandbytes", "dequant_8bit_blockwise", [(1, 64), (1000, 64), (4097, 256), (100_000, 256)],
         bnb_dequant_8bit, dtypes=("bf16", "fp32")),
    Case("bitsandbytes", "quantize_nf4", [(64, 64), (1000, 64), (4098, 128), (100_000, 128)],
         bnb_quantize_4bit("nf4"), blocks, ("bf16", "fp32")),
    Case("bitsandbytes", "quantize_fp4", [(64, 64), (1000, 64), (4098, 128), (100_000, 128)],
         bnb_quantize_4bit("fp4"), blocks, ("bf16", "fp32")),
    Case("bitsandbytes", "dequant_nf4", [(64, 64), (1000, 64), (4098, 128), (100_000, 128)],
         bnb_dequant_4bit("nf4"), dtypes=("bf16", "fp32")),
    Case("bitsandbytes", "dequant_fp4", [(64, 64), (1000, 64), (4098, 128), (100_000, 128)],
         bnb_dequant_4bit("fp4"), dtypes=("bf16", "fp32")),
    Case("torchao", "int_matmul", [(1, 16, 16), (17, 48, 96), (300, 129, 255), (512, 512, 512)], torchao_int_matmul),
    # The launcher's EVEN_K is K % 2 == 0, and the kernel then loads BLOCK_K columns unmasked: an even K
    # must be a multiple of BLOCK_K (64 here), else it reads past the rows (torchao's contract).
    Case("torchao", "int_scaled_matmul", [(1, 16, 64), (17, 48, 128), (300, 129, 255), (512, 512, 512)],
         torchao_int_scaled_matmul),
    Case("torchao", "scaled_int8_mm", [(17, 48, 96), (300, 128, 256), (512, 512, 512)], torchao_scaled_int8_mm),
    Case("fla", "l2norm_fwd_row", [(1, 600), (33, 1000), (300, 1024)], fla_l2norm_fwd, rows),
    Case("fla", "l2norm_bwd_row", [(1, 600), (33, 1000), (300, 1024)], fla_l2norm_bwd, rows),
    Case("fla", "l2norm_fwd", [(1, 128), (1000, 128), (4097, 128)], fla_l2norm_fwd),
    Case("fla", "sigmoid_fwd", [(1, 1000), (7, 1000), (3, 5, 1000)], fla_sigmoid_fwd),
    Case("fla", "chunk_local_cumsum_scalar", [((2, length, 4), reverse, scale) for length in (1, 100, 1000)
                                              for reverse in (False, True) for scale in (None, 0.5)],
         fla_chunk_local_cumsum),
]


def test_every_kernel_of_the_corpus_has_a_case():
    """(Runs without a GPU.)"""
    listed = {(spec.stem, name) for spec in corpus.SPECS for name, _ in corpus.kernels(spec)}
    assert listed == {(case.spec, case.kernel) for case in CASES}


_modules = {}


def taot_kernel(build_module, case):
    if case.spec not in _modules:
        _modules[case.spec] = build_module(corpus.HERE / f"{case.spec}.toml").load()
    return getattr(_modules[case.spec], case.kernel)


def function_of(case):
    return dict(corpus.kernels(corpus.HERE / f"{case.spec}.toml"))[case.kernel]


PARAMS = [pytest.param(case, shape, name, id=f"{case.spec}-{case.kernel}-{shape}-{name}".replace(" ", ""))
          for case in CASES for shape in case.shapes for name in case.dtypes]


@pytest.mark.gpu
@pytest.mark.parametrize("case, shape, name", PARAMS)
def test_matches_the_projects_jit_launch(build_module, case, shape, name):
    torch.manual_seed(hash((case.kernel, str(shape), name)) % (2 ** 31))
    kernel = taot_kernel(build_module, case)

    def launcher():  # a backward's own forward pass launches another kernel, not recorded
        backward = case.call(shape, name)
        if callable(backward):
            backward()

    _, launches = jit.record(function_of(case), launcher)
    assert launches, f"{case.kernel}: the project's launcher did not launch {function_of(case)}"
    for launch in launches:
        replayed = jit.replay(launch, kernel, case.launch_args(launch))
        different = jit.differences(launch, replayed)
        assert not different, f"{case.spec}.{case.kernel} {shape} {name}: not bitwise equal: {', '.join(different)}"
