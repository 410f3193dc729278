# No GPU needed: the Gluon example's spec reads its kernels as Gluon kernels and their
# @triton.heuristics as launch-time rules; the matmul configs aot.py lists are the ones the spec
# compiles; the spec builds for sm_90 with the installed Triton, each cubin byte-equal to what
# triton.compile gives for the same kernel compiled directly (Triton's GluonASTSource, descriptor
# types as Triton's JIT mangles a Gluon TensorDescriptor), with the stages Triton produced
# (ttgir, llir, ptx: a Gluon compile has no ttir) kept and shown by `taot inspect`; and on every
# other installed Triton release (scripts/triton_envs.sh) each kernel builds where its Gluon API
# exists (gluon_kernels.WRITTEN_FOR) and elsewhere fails with a message that names the release.
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import aot
import gluon_kernels

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PYTHON_FRONT_END = REPO / "python"
sys.path.insert(0, str(PYTHON_FRONT_END))                  # the taot front end of this checkout
SPEC = HERE / "gluon_examples.toml"
FUNCTIONS = {"softmax": "softmax_kernel", "matmul": "matmul_kernel"}


def environment(python=None):
    paths = [str(PYTHON_FRONT_END), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, paths)))
    if python is not None:
        env["TAOT_PYTHON"] = str(python)
    return env


def minor(version):
    return tuple(int(part) for part in version.split(".")[:2])


def written_for(function, version):
    oldest, newest = gluon_kernels.WRITTEN_FOR[function]
    return oldest <= minor(version) <= newest


def load_spec():
    from taot.spec.validate import load_spec as load
    return load(SPEC)


def test_kernels_are_read_as_gluon_kernels():
    from taot.spec.source import find_kernel, import_source
    from taot.triton_api import gluon
    module = import_source(HERE / "gluon_kernels.py")
    for function in FUNCTIONS.values():
        decorated = find_kernel(module, function, "gluon_kernels.py")
        assert gluon.is_gluon(decorated.jit), function
    softmax = find_kernel(module, "softmax_kernel", "gluon_kernels.py")
    assert softmax.layers == ("heuristics",)                  # @triton.heuristics around @gluon.jit
    assert [rule.field for rule in softmax.heuristics] == ["BLOCK_COLS", "ROWS", "num_warps"]


def test_variants_follow_the_heuristics_and_configs():
    spec = load_spec()
    assert sorted(spec.variants) == ["matmul", "softmax"]
    softmax = spec.variants["softmax"]
    assert len(softmax) == 3 * 7                              # dtypes x BLOCK_COLS, the rest follows
    for variant in softmax:
        config = variant.config
        assert config["ROWS"] == max(2048 // config["BLOCK_COLS"], 1), variant.id
        assert config["num_warps"] == (8 if config["BLOCK_COLS"] >= 4096 else 4), variant.id
    matmul = spec.variants["matmul"]
    for dtype in ("fp16", "bf16"):
        configs = [dict(v.config) for v in matmul if v.bindings[0].type == dtype]
        assert configs == aot.MATMUL_CONFIGS, dtype
    for variant in matmul:
        args = {binding.name: binding for binding in variant.bindings}
        config = variant.config
        assert args["a_desc"].block == (config["BLOCK_M"], config["BLOCK_K"]), variant.id
        assert args["b_desc"].block == (config["BLOCK_K"], config["BLOCK_N"]), variant.id
        assert args["c_desc"].block == (config["BLOCK_M"], config["BLOCK_N"]), variant.id


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The spec compiled for sm_90 with the installed Triton (taot's front end, this Python)."""
    pytest.importorskip("triton", reason="compiling the spec needs Triton")
    out = tmp_path_factory.mktemp("gluon") / "out"
    result = subprocess.run([sys.executable, "-m", "taot", "compile", str(SPEC), "-o", str(out), "--quiet",
                             "-j", str(os.cpu_count() or 2)], capture_output=True, text=True, env=environment(),
                            timeout=1200)
    assert result.returncode == 0, result.stderr[-3000:]
    return out, json.loads((out / "manifest.json").read_text())


def images(manifest, kernel):
    found = next(k for k in manifest["kernels"] if k["name"] == kernel)
    return [(variant, variant["images"][0]) for variant in found["variants"]]


def direct_compile(function, inputs):
    """triton.compile of the kernel as Triton's JIT would compile it, without taot: a GluonASTSource
    whose descriptor arguments have the type Triton's JIT mangles for a Gluon TensorDescriptor with the
    default NVMMA layout of the block."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from triton.runtime.jit import mangle_type

    class Base:  # what a TensorDescriptor reads of its tensor
        def __init__(self, dtype):
            self.dtype = dtype

        def data_ptr(self):
            return 0x10000

    dtypes = {"fp16": gl.float16, "bf16": gl.bfloat16}
    signature = {}
    for name, value in inputs["signature"].items():
        if value.startswith("tensordesc<"):
            dtype, block = value[len("tensordesc<"):-1].rstrip("]").split("[")
            block = [int(size) for size in block.split(",")]
            layout = gl.NVMMASharedLayout.get_default_for(block, dtypes[dtype])
            value = mangle_type(TensorDescriptor(Base(dtypes[dtype]), block, [block[-1], 1], block, layout))
        signature[name] = value
    constexprs = {(function.arg_names.index(name),): value for name, value in inputs["constexprs"].items()}
    attrs = {(int(index),): value for index, value in inputs["attrs"].items()}
    source = GluonASTSource(function, signature, constexprs, attrs)
    # A fresh cache: Triton's key leaves out the source's file name, which the cubin's line info keeps,
    # so a kernel cached from another checkout would come back with that checkout's path.
    from taot.triton_api.compiler import private_cache
    with private_cache():
        return triton.compile(source, target=GPUTarget("cuda", 90, 32), options=dict(inputs["options"]))


def test_cubins_equal_a_direct_triton_compile(built):
    out, manifest = built
    for kernel, function_name in FUNCTIONS.items():
        function = getattr(gluon_kernels, function_name)
        function = function if hasattr(function, "is_gluon") else function.fn   # out of @triton.heuristics
        chosen = images(manifest, kernel)
        for variant, image in (chosen[0], chosen[-1]):           # the first and the last variant
            folder = out / image["dir"]
            inputs = json.loads((folder / "inputs.json").read_text())["inputs"]
            compiled = direct_compile(function, inputs)
            assert (out / image["cubin"]).read_bytes() == compiled.asm["cubin"], variant["id"]
            assert compiled.metadata.num_warps == image["num_warps"], variant["id"]
            # the stages Triton produced, as taot kept them: no ttir for a Gluon kernel
            assert sorted(image["artifacts"]) == ["llir", "metadata", "ptx", "ttgir"], variant["id"]
            ttgir = gzip.decompress((out / image["artifacts"]["ttgir"]).read_bytes()).decode()
            assert ttgir == compiled.asm["ttgir"], variant["id"]


def test_matmul_images_have_a_tma_map_per_descriptor(built):
    _, manifest = built
    for variant, image in images(manifest, "matmul"):
        assert len(image["tensordesc_meta"]) == 3, variant["id"]
        assert all(entry["swizzle"] == 3 for entry in image["tensordesc_meta"]), variant["id"]   # 128-byte
        assert image["num_warps"] == variant["config"]["num_warps"], variant["id"]


def taot_binary():
    binary = Path(os.environ.get("TAOT_BIN") or REPO / "build" / "tools" / "taot" / "taot")
    if not binary.is_file():
        pytest.skip(f"needs the taot binary ({binary}: build it with scripts/build.sh, or set TAOT_BIN)")
    return binary


def test_inspect_shows_the_gluon_stages(built):
    out, manifest = built
    binary = taot_binary()
    table = subprocess.run([binary, "inspect", out, "--json"], capture_output=True, text=True, env=environment())
    assert table.returncode == 0, table.stderr
    variant = images(manifest, "matmul")[0][0]["id"]
    shown = subprocess.run([binary, "inspect", out, "--variant", variant, "--stage", "ttgir"], capture_output=True,
                           text=True, env=environment())
    assert shown.returncode == 0, shown.stderr
    assert "#ttg.nvidia_mma<{versionMajor = 3" in shown.stdout                    # the kernel's own wgmma layout
    assert "gluon_kernels.py:" in shown.stdout and "warpgroup_mma(" in shown.stdout  # with its source lines
    missing = subprocess.run([binary, "inspect", out, "--variant", variant, "--stage", "ttir"], capture_output=True,
                             text=True, env=environment())
    assert missing.returncode == 1
    assert "has no ttir kept (it has ttgir, llir, ptx and sass)" in missing.stderr


# ---- the other Triton releases ----

def other_releases():
    """(version, interpreter) of each environment scripts/triton_envs.sh made (build/triton-envs)."""
    found = []
    for python in sorted((REPO / "build" / "triton-envs").glob("*/bin/python")):
        found.append((python.parent.parent.name, python))
    return found


ONE_KERNEL_SPEC = """\
import tomllib

def taot_spec():
    with open({spec!r}, "rb") as file:
        spec = tomllib.load(file)
    spec["kernel"] = [kernel for kernel in spec["kernel"] if kernel["name"] == {kernel!r}]
    for kernel in spec["kernel"]:
        kernel["source"] = {folder!r} + "/" + kernel["source"]
    return spec
"""


@pytest.mark.parametrize("kernel", sorted(FUNCTIONS))
@pytest.mark.parametrize("release", other_releases() or [None], ids=lambda r: r[0] if r else "none")
def test_builds_on_the_releases_it_is_written_for(tmp_path, release, kernel):
    """Each kernel, alone in a spec, compiled for sm_90 by another Triton release: it builds where its
    Gluon API exists; elsewhere the build fails (status 1) naming the release (and the test is
    skipped saying so)."""
    if release is None:
        pytest.skip("no other Triton release is installed (scripts/triton_envs.sh makes build/triton-envs)")
    version, python = release
    spec = tmp_path / "one_kernel.py"
    spec.write_text(ONE_KERNEL_SPEC.format(spec=str(SPEC), kernel=kernel, folder=str(HERE)))
    result = subprocess.run([python, "-m", "taot", "compile", spec, "-o", tmp_path / "out", "--quiet", "--ir", "none",
                             "-j", str(os.cpu_count() or 2)], capture_output=True, text=True,
                            env=environment(python), timeout=1200)
    function = FUNCTIONS[kernel]
    if written_for(function, version):
        assert result.returncode == 0, f"Triton {version}: " + result.stderr[-3000:]
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert manifest["kernels"][0]["variants"], version
        return
    assert result.returncode == 1, f"Triton {version}: " + result.stderr[-3000:]
    assert f"this is Triton {version}" in result.stderr, result.stderr[-3000:]
    oldest, newest = gluon_kernels.WRITTEN_FOR[function]
    pytest.skip(f"{function} is written for the Gluon of Triton {oldest[0]}.{oldest[1]} to {newest[0]}.{newest[1]}; "
                f"Triton {version} cannot compile it, and the build says so naming the release")
