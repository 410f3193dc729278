# The pieces of `taot from-ir` that need no library: reading a cubin's kernels, naming an edited
# file's stage and kernel, rebuilding in a child process, the signature check, MLIR without locations.
import gzip
import hashlib
import json
import struct
import textwrap

import pytest

from conftest import REPO  # also puts python/ on sys.path
from taot.errors import RebuildError, SignatureMismatch
from taot.workbench import cubin, rebuild
from taot.workbench.cache_swap import without_locations

KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask), mask=mask)
''')


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """copy_kernel compiled for sm_90 with 8 warps: asm (stages and cubin) and metadata."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from taot.compile.jobs import json_safe
    from taot.triton_api.compiler import private_cache as private_triton_cache
    from taot.spec.pyfile import import_file
    folder = tmp_path_factory.mktemp("rebuild_kernel")
    (folder / "kernels.py").write_text(KERNEL)
    module = import_file(folder / "kernels.py", "rebuild_test_kernels")
    source = ASTSource(module.copy_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": 256}, {(0,): [["tt.divisibility", 16]]})
    with private_triton_cache():
        result = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
    return folder, dict(result.asm), json_safe(result.metadata._asdict())


def reference(compiled):
    _, asm, metadata = compiled
    return rebuild.Reference(label="the compiled copy_kernel", arch=90, metadata=metadata, cubin=asm["cubin"],
                             stages={stage: asm[stage] for stage in ("ttir", "ttgir", "llir", "ptx")},
                             parameter_names=("x_ptr", "out_ptr", "n", "global_scratch", "profile_scratch"))


def test_a_cubin_names_its_kernel_parameter_sizes_threads_and_sm(compiled):
    read = cubin.read(compiled[1]["cubin"])
    assert (read.sm, read.target) == (90, "sm_90a")  # Triton compiles capability 90 for sm_90a
    assert read.kernels == {"copy_kernel": cubin.Kernel("copy_kernel", (8, 8, 4, 8, 8), (256, 1, 1))}


CUBIN_TARGETS = REPO / "tests" / "unit" / "codegen" / "data" / "cubin_targets.json"


@pytest.mark.parametrize("row", json.loads(CUBIN_TARGETS.read_text())["cubins"], ids=lambda row: row["file"])
def test_the_target_of_real_cubins_of_each_triton_and_ptxas(row):
    """The table codegen/src/cubin.cpp's reader is tested with too (tests/unit/codegen/cubin_test.cpp):
    e_flags of ELF ABI 7 and 8, and ptxas 13's "a" kept in .nv.compat only."""
    read = cubin.read((CUBIN_TARGETS.parent / row["file"]).read_bytes())
    assert read.target == row["target"], row["made_by"]


def test_what_is_not_a_cubin_is_named():
    with pytest.raises(cubin.CubinError, match="not an ELF file"):
        cubin.read(b"PTX text, not ELF" * 8)
    elf = bytearray(64)
    elf[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<H", elf, 18, 62)  # x86-64
    with pytest.raises(cubin.CubinError, match="machine 62, not CUDA"):
        cubin.read(bytes(elf))


def test_an_amd_code_object_names_its_kernel_parameter_sizes_and_gfx(tmp_path):
    """A gfx942 code object, read from its NT_AMDGPU_METADATA note: the kernel, the sizes of its
    arguments (the two scratch pointers last) and the target; without the note, or with the note cut,
    it is named as such."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from taot.spec.pyfile import import_file
    from taot.triton_api.compiler import private_cache as private_triton_cache
    (tmp_path / "kernels.py").write_text(KERNEL)
    module = import_file(tmp_path / "kernels.py", "rebuild_test_amd_kernels")
    source = ASTSource(module.copy_kernel, {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                       {"BLOCK": 256})
    with private_triton_cache():
        hsaco = triton.compile(source, target=GPUTarget("hip", "gfx942", 64), options={"num_warps": 4}).asm["hsaco"]
    read = cubin.read(hsaco)
    assert (read.gfx, read.target) == ("gfx942", "gfx942")
    assert read.kernels == {"copy_kernel": cubin.Kernel("copy_kernel", (8, 8, 4, 8, 8), ())}
    (tmp_path / "k.hsaco").write_bytes(hsaco)
    assert rebuild.stage_of(tmp_path / "k.hsaco") == "hsaco" and rebuild.kernel_name(tmp_path / "k.hsaco") == "copy_kernel"
    assert rebuild.target_named_in(tmp_path / "k.hsaco") == "gfx942"
    without_notes = bytearray(hsaco)
    sections, = struct.unpack_from("<Q", hsaco, 40)
    size, count = struct.unpack_from("<HH", hsaco, 58)
    for index in range(count):  # every SHT_NOTE becomes SHT_PROGBITS
        if struct.unpack_from("<I", hsaco, sections + index * size + 4)[0] == 7:
            struct.pack_into("<I", without_notes, sections + index * size + 4, 1)
    with pytest.raises(cubin.CubinError, match="without the metadata note"):
        cubin.read(bytes(without_notes))


def test_stage_and_kernel_name_of_an_edited_file(tmp_path, compiled):
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        path = tmp_path / f"copy_kernel.{stage}"
        path.write_text(compiled[1][stage])
        assert rebuild.stage_of(path) == stage
        assert rebuild.kernel_name(path) == "copy_kernel"
    packed = tmp_path / "k.ttgir.gz"
    packed.write_bytes(gzip.compress(compiled[1]["ttgir"].encode()))
    assert rebuild.read_edited(packed) == ("ttgir", compiled[1]["ttgir"].encode())
    (tmp_path / "k.cubin").write_bytes(compiled[1]["cubin"])
    assert rebuild.kernel_name(tmp_path / "k.cubin") == "copy_kernel"
    with pytest.raises(RebuildError, match=r"k\.mlir: expected a \.ttir, \.ttgir, .*got suffix '\.mlir'"):
        rebuild.stage_of(tmp_path / "k.mlir")


def test_each_stage_rebuilds_the_compiled_kernel(tmp_path, compiled):
    """Unchanged stages give the compiled cubin back, with the metadata Triton computed."""
    _, asm, metadata = compiled
    expected = hashlib.sha256(asm["cubin"]).hexdigest()
    for stage in ("ttir", "ttgir", "llir", "ptx", "cubin"):
        path = tmp_path / f"copy_kernel.{stage}"
        path.write_bytes(asm[stage] if stage == "cubin" else asm[stage].encode())
        rebuilt = rebuild.rebuild(path, reference(compiled))
        rebuild.check_signature(rebuilt, reference(compiled))
        assert hashlib.sha256(rebuilt.cubin).hexdigest() == expected, stage
        assert rebuilt.metadata["num_warps"] == 8 and rebuilt.metadata["name"] == "copy_kernel"
        assert rebuild.changes(rebuilt, reference(compiled)) == [], stage
        assert (rebuilt.ptxas is None) == (stage == "cubin")
        assert set(rebuilt.stages) == set(("ttir", "ttgir", "llir", "ptx")[("ttir", "ttgir", "llir", "ptx",
                                                                            "cubin").index(stage):])
        assert bool(rebuilt.carried) == (stage in ("llir", "ptx", "cubin"))
        assert "num_warps" not in rebuilt.carried  # read back from .reqntid / REQNTID


def test_a_ptx_thread_count_sets_num_warps_and_a_renamed_kernel_is_refused(tmp_path, compiled):
    ptx = compiled[1]["ptx"]
    assert ".reqntid 256" in ptx
    (tmp_path / "k.ptx").write_text(ptx.replace(".reqntid 256", ".reqntid 128"))
    rebuilt = rebuild.rebuild(tmp_path / "k.ptx", reference(compiled))
    assert rebuild.changes(rebuilt, reference(compiled)) == ["num_warps 8 -> 4"]
    (tmp_path / "renamed.ptx").write_text(ptx.replace("copy_kernel", "other_kernel"))
    rebuilt = rebuild.rebuild(tmp_path / "renamed.ptx", reference(compiled))
    with pytest.raises(SignatureMismatch, match="its kernel is named other_kernel, expected copy_kernel"):
        rebuild.check_signature(rebuilt, reference(compiled))


def test_mlir_without_locations():
    text = textwrap.dedent('''\
        #loc = loc("/a/k.py":5:0)
        module {
          tt.func public @k(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32} loc("x"(#loc))) {
            tt.return loc(#loc1)
          } loc(#loc)
        }
        #loc1 = loc("/a/k.py":8:4)
    ''')
    assert without_locations(text) == textwrap.dedent('''\
        module {
          tt.func public @k(%x: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {
            tt.return
          }
        }''')
