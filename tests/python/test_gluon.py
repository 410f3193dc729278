# Gluon kernels (@gluon.jit) in the front end, on every supported Triton release (each has Gluon):
# read from a spec, alone and under @triton.autotune; compiled through Triton's GluonASTSource with
# the descriptor types Triton's JIT gives a Gluon TensorDescriptor; keyed as Triton's JIT keys them;
# their stages (no ttir) kept; and the num_warps rule's failure explained. The kernels use only API
# that Triton 3.5 to 3.9 share (no gl.num_warps(), which 3.5 lacks).
import json
import subprocess
import sys

import pytest

from conftest import REPO, to_toml

GLUON_SOURCE = '''\
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma


@gluon.jit
def double_kernel(x_ptr, out_ptr, n, BLOCK: gl.constexpr, WARPS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [WARPS], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offsets < n
    gl.store(out_ptr + offsets, gl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


@triton.autotune(configs=[triton.Config({"BLOCK": 256, "WARPS": 4}, num_warps=4),
                          triton.Config({"BLOCK": 1024, "WARPS": 8}, num_warps=8)], key=["n"])
@gluon.jit
def tuned_double_kernel(x_ptr, out_ptr, n, BLOCK: gl.constexpr, WARPS: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [WARPS], [0])
    offsets = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout=layout)
    mask = offsets < n
    gl.store(out_ptr + offsets, gl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)


@gluon.jit
def tile_load_kernel(in_desc, n):
    tile = gl.allocate_shared_memory(in_desc.dtype, in_desc.block_type.shape, in_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(in_desc, [0, 0], bar, tile)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)


@triton.jit
def plain_kernel(x_ptr):
    pass
'''


def double_spec(**kernel):
    entry = {"name": "double_kernel", "source": "gluon_kernel.py", "grid": ["cdiv(n, BLOCK)"],
             "args": {"x_ptr": {"type": "*fp32", "align": 16}, "out_ptr": {"type": "*fp32", "align": 16}, "n": "i32",
                      "BLOCK": {"constexpr": [256, 1024]}, "WARPS": {"constexpr": 4}},
             "options": {"num_warps": 4}, "default": {"BLOCK": 1024}}
    entry.update(kernel)
    return {"library": {"name": "gluon_double", "targets": ["sm_90"]}, "kernel": [entry]}


@pytest.fixture
def module(tmp_path):
    (tmp_path / "gluon_kernel.py").write_text(GLUON_SOURCE)
    from taot.spec.source import import_source
    return import_source(tmp_path / "gluon_kernel.py")


def compile_spec(tmp_path, spec):
    path = tmp_path / "spec.toml"
    path.write_text(to_toml(spec))
    return subprocess.run([sys.executable, "-m", "taot", "compile", str(path), "-o", str(tmp_path / "out"), "-j", "1"],
                          capture_output=True, text=True, timeout=600)


def test_gluon_functions_are_told_apart(module):
    from taot.triton_api import gluon
    from taot.triton_api.kernels import is_jit_function
    assert gluon.available()
    assert gluon.is_gluon(module.double_kernel) and is_jit_function(module.double_kernel)
    assert not gluon.is_gluon(module.plain_kernel)
    assert not gluon.is_gluon(module.tuned_double_kernel)   # the Autotuner; the function inside it is
    assert gluon.is_gluon(module.tuned_double_kernel.fn)


def test_the_source_is_tritons_gluon_source_with_the_jits_hash(module):
    """taot compiles what Triton's JIT compiles: a GluonASTSource (first stage ttgir), whose hash is
    the JIT's for the same specialization."""
    from triton.experimental.gluon._runtime import GluonASTSource
    from taot.triton_api import gluon, jit
    specialization = jit.specialize(module.double_kernel, 90, {"x_ptr": jit.stand_in("*fp32", True),
                                                               "out_ptr": jit.stand_in("*fp32", True),
                                                               "n": jit.stand_in("i32", False),
                                                               "BLOCK": 256, "WARPS": 4})
    source = jit.source(module.double_kernel, specialization)
    assert type(source) is GluonASTSource
    direct = GluonASTSource(module.double_kernel, dict(specialization.signature), dict(specialization.constexprs),
                            dict(specialization.attrs))
    assert jit.source_hash(module.double_kernel, specialization) == direct.hash()
    plain = gluon.source(module.plain_kernel, {"x_ptr": "*fp32"}, {}, {})
    assert type(plain).__name__ == "ASTSource"


def test_descriptor_types_are_what_the_jit_gives_a_gluon_tensor_descriptor(module):
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from taot.triton_api import gluon, jit
    for dtype, triton_type, block in (("fp16", gl.float16, [64, 64]), ("bf16", gl.bfloat16, [128, 32]),
                                      ("fp32", gl.float32, [8, 16])):
        layout = gl.NVMMASharedLayout.get_default_for(block, triton_type)
        descriptor = TensorDescriptor(jit.StandInPointer(triton_type, True), [256, 256], [256, 1], block, layout)
        specialization = jit.specialize(module.tile_load_kernel, 90, {"in_desc": descriptor, "n": 17})
        written = {"in_desc": f"tensordesc<{dtype}[{block[0]}, {block[1]}]>", "n": "i32"}
        assert gluon.signature(module.tile_load_kernel, written) == specialization.signature, dtype
    plain = {"x_ptr": "tensordesc<fp16[64, 64]>"}
    assert gluon.signature(module.plain_kernel, plain) == plain          # a tl kernel's descriptors stay as written


def test_a_gluon_kernel_compiles_with_its_stages(tmp_path):
    (tmp_path / "gluon_kernel.py").write_text(GLUON_SOURCE)
    result = compile_spec(tmp_path, double_spec())
    assert result.returncode == 0, result.stderr[-3000:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    variants = manifest["kernels"][0]["variants"]
    assert len(variants) == 2
    for variant in variants:
        image = variant["images"][0]
        assert sorted(image["artifacts"]) == ["llir", "metadata", "ptx", "ttgir"], variant["id"]   # no ttir
        assert image["num_warps"] == 4


def test_autotune_around_a_gluon_kernel(tmp_path):
    (tmp_path / "gluon_kernel.py").write_text(GLUON_SOURCE)
    spec = double_spec(name="tuned", function="tuned_double_kernel")
    del spec["kernel"][0]["options"], spec["kernel"][0]["default"]
    for name in ("BLOCK", "WARPS"):
        del spec["kernel"][0]["args"][name]
    result = compile_spec(tmp_path, spec)
    assert result.returncode == 0, result.stderr[-3000:]
    variants = json.loads((tmp_path / "out" / "manifest.json").read_text())["kernels"][0]["variants"]
    assert sorted((v["config"]["BLOCK"], v["config"]["WARPS"], v["config"]["num_warps"]) for v in variants) == \
        [(256, 4, 4), (1024, 8, 8)]


def test_layouts_of_another_warp_count_are_explained(tmp_path):
    (tmp_path / "gluon_kernel.py").write_text(GLUON_SOURCE)
    result = compile_spec(tmp_path, double_spec(options={"num_warps": 8}))
    assert result.returncode == 1
    assert "Layout has 4 warps per CTA, but the context requires 8 warps per CTA" in result.stderr
    assert ("hint: a Gluon kernel's layouts fix its warp count: this variant compiles with num_warps = 8 and a "
            "layout of the kernel spans 4 warps") in result.stderr


def test_a_gluon_builtin_the_release_lacks_names_the_release(tmp_path):
    import triton
    source = GLUON_SOURCE.replace("gl.store(out_ptr + offsets, gl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)",
                                  "gl.no_such_builtin(offsets)", 1)
    (tmp_path / "gluon_kernel.py").write_text(source)
    result = compile_spec(tmp_path, double_spec())
    assert result.returncode == 1
    assert "no_such_builtin" in result.stderr
    assert f"hint: Gluon's API changes between Triton releases and this is Triton {triton.__version__}" in result.stderr


def test_the_example_says_which_releases_it_is_written_for():
    """examples/gluon's kernels name the releases they compile on; its tests check each release."""
    sys.path.insert(0, str(REPO / "examples" / "gluon"))
    try:
        import gluon_kernels
    finally:
        sys.path.remove(str(REPO / "examples" / "gluon"))
    from taot.triton_api import versions
    for oldest, newest in gluon_kernels.WRITTEN_FOR.values():
        assert versions.OLDEST <= oldest <= newest <= versions.NEWEST
