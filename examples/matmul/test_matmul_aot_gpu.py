# GPU tests of the matmul example through the taot modules (aot.py; modules `matmul` and
# `matmul_fp8` that the build_module fixture of tests/gpu_modules.py builds from matmul.toml and
# matmul_fp8.toml): against the fp64 reference and the same kernel
# through Triton JIT, every compiled variant by index, the tiles of more than 100 KiB of shared
# memory by exact config keywords (and what the manifest says of their shared memory), the
# runtime's dispatch errors, CUDA graphs. Skipped without torch or an sm_90 GPU.
import json
import os
from pathlib import Path

import pytest

import configs
import test_matmul_gpu as base
from example_support import gpu_marks  # on sys.path through conftest.py
from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py
from test_matmul_gpu import SKIP_REASON

pytestmark = gpu_marks(SKIP_REASON)
HERE = Path(__file__).resolve().parent

if SKIP_REASON is None:
    import torch

    import aot
    import jit

library = None  # the generated module of matmul.toml, set by matmul_module
matmul_module = module_fixture(HERE / "matmul.toml", bind="library")
library_fp8 = None  # the generated module of matmul_fp8.toml, set by matmul_fp8_module
matmul_fp8_module = module_fixture(HERE / "matmul_fp8.toml", bind="library_fp8")


def module_for(kind):
    return library_fp8 if kind == "fp8" else library


def manifest_of(module):
    """The manifest.json the module was generated from: OUT/manifest.json for a module built into
    OUT/build (taot build SPEC -o OUT --python, CMake into OUT/build), or $TAOT_<LIB>_MANIFEST."""
    name = module.__name__
    path = Path(os.environ.get(f"TAOT_{name.upper()}_MANIFEST")
                or Path(module.__file__).resolve().parent.parent / "manifest.json")
    return json.loads(path.read_text()) if path.exists() else None


def manifest_kernel(manifest, name):
    return next(kernel for kernel in manifest["kernels"] if kernel["name"] == name)


def variant_inputs(variant):
    """(input kind, output dtype name) of a variant, from its description
    "a_ptr: fp16 align 16, b_ptr: ..., c_ptr: bf16 align 16, ..."."""
    specs = dict(part.strip().split(": ", 1) for part in variant["description"].split(";")[0].split(", "))
    a_type = specs["a_ptr"].split()[0]
    return "fp8" if a_type == "fp8e4nv" else a_type, specs["c_ptr"].split()[0]


@pytest.mark.parametrize("precision", base.PRECISIONS, ids=base.precision_id)
@pytest.mark.parametrize("shape", base.SHAPES, ids=base.shape_id)
def test_aot_shapes_and_jit(shape, precision):
    base.seed("aot shapes", shape, precision)
    a, b = base.make_operands(*shape, precision[0])
    c = base.run_with(aot.matmul, a, b, precision)
    base.check(c, a, b, precision, f"aot {base.shape_id(shape)} {base.precision_id(precision)}")
    c_jit = base.run_with(jit.matmul_jit, a, b, precision)
    print(f"[aot vs jit] {base.shape_id(shape)} {base.precision_id(precision)}: bitwise equal {torch.equal(c, c_jit)}, "
          f"relative difference {base.ref.relative_error(c, c_jit):.2e}")
    assert base.ref.relative_error(c, c_jit) < base.tolerance(precision)


def test_every_variant():
    """Each compiled variant of both modules, launched by index: those of the tuned kernels on the
    aligned ragged shape in their layout, those of the generic kernels on misaligned operands with N
    and K not multiples of 16."""
    count = 0
    for module in (library, library_fp8):
        for generic in (False, True):
            name = module.__name__ + ("_generic" if generic else "")
            for variant in getattr(module, name + "_variants")():
                kind, out_name = variant_inputs(variant)
                precision = (kind, out_name, bool(variant["config"].get("FAST_ACCUM")))
                base.seed("variant", variant["id"])
                if generic:
                    M, N, K = 99, 101, 97
                    a = base.make_operands(M, N, K + 1, kind)[0][:, 1:]
                    b = base.make_operands(M, N, K, kind)[1]
                else:
                    M, N, K = base.ALIGNED_RAGGED
                    a, b = base.make_operands(M, N, K, kind)
                c = base.poisoned(M, N, out_name)
                getattr(module, name)(a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                      c.stride(0), c.stride(1), variant=variant["index"])
                torch.cuda.synchronize()
                base.check(c, a, b, precision, variant["id"])
                count += 1
    assert count == 2 * (len(configs.TUNED["fp16"]) + 1) + 2 * (len(configs.TUNED["fp8"]) + 1)


def test_large_shared_memory_config_by_exact_keywords():
    """128 x 256 x 64 tiles, 4 stages, 8 warps, fp16: 192 KiB of shared memory per block on sm_90,
    above the 48 KiB a launch gets without opting in. Selected by its exact config keywords; the
    manifest (and the variant list, if it reports shared memory) must say > 100 KiB."""
    M, N, K = 4096, 4096, 4096
    base.seed("exact large")
    a, b = base.make_operands(M, N, K, "fp16")
    c = base.poisoned(M, N, "fp16")
    library.matmul(a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                   BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_SIZE_M=8, num_stages=4, num_warps=8)
    torch.cuda.synchronize()
    base.check(c, a, b, ("fp16", "fp16", False), "exact 128x256x64 s4 w8")

    wanted = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_SIZE_M=8, FAST_ACCUM=False, num_stages=4, num_warps=8)
    matches = [v for v in library.matmul_variants()
               if v["config"] == wanted and variant_inputs(v) == ("fp16", "fp16")]
    assert len(matches) == 1, f"expected one fp16 tuned variant with {wanted}, found {len(matches)}"
    variant = matches[0]
    limit = configs.SHARED_LIMIT_KIB * 1024
    if "shared" in variant:                               # the variant list reports it
        assert variant["shared"] > limit, variant
    manifest = manifest_of(library)
    if manifest is None:
        if "shared" not in variant:
            pytest.skip("the variant list does not report shared memory and no manifest.json is beside the module")
        return
    entry = next(v for v in manifest_kernel(manifest, "matmul")["variants"] if v["id"] == variant["id"])
    shared = {image["target"]: image["shared"] for image in entry["images"]}
    print(f"[shared memory] {variant['id']}: {shared}")
    assert shared["sm_90"] > limit, shared


@pytest.mark.parametrize("precision", base.PRECISIONS, ids=base.precision_id)
def test_every_large_shared_memory_tile_by_config(precision):
    """Every tile above 100 KiB per the manifest, launched with its config on a ragged aligned shape."""
    kind = precision[0]
    module = module_for(kind)
    manifest = manifest_of(module)
    limit = configs.SHARED_LIMIT_KIB * 1024
    if manifest is not None:
        large = [v["config"] for v in manifest_kernel(manifest, module.__name__)["variants"]
                 if v["images"][-1]["shared"] > limit]
        assert large, "no variant above 100 KiB of shared memory"
        for config in base.large_shared_tiles(precision):
            assert config in large, f"{config} is not above 100 KiB in the manifest"
    base.seed("large by config", precision)
    a, b = base.make_operands(*base.ALIGNED_RAGGED, kind)
    for config in base.large_shared_tiles(precision):
        c = base.run_with(aot.matmul, a, b, precision, config)
        base.check(c, a, b, precision, f"aot {base.config_id(config)} {base.precision_id(precision)}")


@pytest.mark.parametrize("precision", base.PRECISIONS, ids=base.precision_id)
def test_aot_strided_and_transposed_operands(precision):
    kind = precision[0]
    base.seed("aot views", precision)
    M, N, K = 200, 272, 208
    a = torch.randn(M, K + 8, device="cuda").to(base.torch_dtype(kind))[:, 1:K + 1]
    w = torch.randn(N, K, device="cuda")
    b = w.to(base.torch_dtype(kind)).t() if kind != "fp8" else w.t().contiguous().to(torch.float8_e4m3fn)
    c = base.run_with(aot.matmul, a, b, precision)
    base.check(c, a, b, precision, f"aot views {base.precision_id(precision)}")


def test_dispatch_errors_name_the_problem():
    a = torch.randn(64, 64, device="cuda", dtype=torch.float16)
    b_t = torch.randn(64, 64, device="cuda", dtype=torch.float16).t()            # stride_bk == 1
    c = torch.empty(64, 64, device="cuda", dtype=torch.float16)
    args = (a, b_t, c, 64, 64, 64, a.stride(0), a.stride(1), b_t.stride(0), b_t.stride(1), c.stride(0), c.stride(1))
    with pytest.raises(ValueError, match="no compiled variant accepts stride_bk = 1"):
        library.matmul(*args, **configs.TUNED["fp16"][0])
    with pytest.raises(ValueError, match="config BLOCK_K=512 was not compiled"):
        library.matmul(*args, BLOCK_K=512)
    aot.matmul(a, b_t, out=c, module=library)                  # the generic kernel takes it
    torch.cuda.synchronize()
    base.check(c, a, b_t, ("fp16", "fp16", False), "transposed b, generic kernel")
    with pytest.raises(ValueError, match="no compiled variant accepts a_ptr = fp8e4nv pointer"):
        library.matmul(a.to(torch.float8_e4m3fn), *args[1:])


def test_cuda_graph():
    base.seed("graph")
    a, b = base.make_operands(512, 1024, 2048, "fp8")
    out = base.poisoned(512, 1024, "bf16")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        aot.matmul(a, b, out=out)                           # warm-up: loads the module outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            aot.matmul(a, b, out=out)
    torch.cuda.current_stream().wait_stream(stream)
    out.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    base.check(out, a, b, ("fp8", "bf16", False), "graph replay")
