# taot.triton_api.ir against the installed Triton: every binding it reaches resolves, and each of its
# functions does what it says on a kernel compiled here for sm_90 (no GPU needed; ptxas is Triton's own).
import pytest
import triton
import triton.language as tl
from triton._C import libtriton

from conftest import REPO  # noqa: F401 (puts python/ on sys.path)
from taot.triton_api import RELEASE, compiler, ir


@triton.jit
def triple_kernel(x, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x + offsets, tl.load(x + offsets, mask=mask) * 3.0, mask=mask)


# What ir.py reaches in Triton, by owner: a test of the names alone, so that a release that renames
# one fails here first, naming it, rather than in the middle of a command.
BINDINGS = {
    "ir": ("context", "load_dialects", "parse_mlir_module", "pass_manager", "module", "operation"),
    "ir.module": ("str", "str_nodebug", "walk", "get_int_attr", "get_operation", "get_tensordesc_metadata"),
    "ir.operation": ("get_str_attr",),
    "ir.pass_manager": ("enable_debug", "run", "get_pipeline_str"),
    "llvm": ("init_targets",),
    "backend": ("load_dialects", "parse_options", "add_stages", "make_ptx", "make_cubin"),
}


def owner(name):
    return {"ir": libtriton.ir, "ir.module": libtriton.ir.module, "ir.operation": libtriton.ir.operation,
            "ir.pass_manager": libtriton.ir.pass_manager, "llvm": libtriton.llvm,
            "backend": compiler.backend(90)}[name]


@pytest.mark.parametrize("owner_name, names", BINDINGS.items())
def test_every_binding_it_uses_resolves(owner_name, names):
    missing = [name for name in names if not callable(getattr(owner(owner_name), name, None))]
    assert missing == [], f"Triton {triton.__version__}'s {owner_name} lacks {missing}"


def test_compile_from_python_and_ir_files_agree(tmp_path):
    """compile_file of the TTIR and TTGIR Triton made, llir_to_ptx of its LLVM IR and ptx_to_cubin of its
    PTX each give the cubin Triton's own compile gave, byte for byte."""
    compiled = compiler.compile_source(triple_kernel, {"x": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                                       {"BLOCK": 128}, {}, 90, {"num_warps": 4})
    options = {"num_warps": 4, "enable_fp_fusion": compiled.metadata.enable_fp_fusion}
    for stage in ("ttir", "ttgir"):
        path = tmp_path / f"k.{stage}"
        path.write_text(compiled.asm[stage])
        later, cubin, metadata = ir.compile_file(path, 90, options)
        assert cubin == compiled.asm["cubin"], stage
        assert later["ptx"] == compiled.asm["ptx"] and metadata["name"] == "triple_kernel"
        function = ir.read_function(path, 90)
        assert function.name == "triple_kernel" and function.parameter_types == ("*f32", "i32")
        assert (function.tensordesc_meta is None) == (stage == "ttir")
    metadata = {}
    assert ir.llir_to_ptx(compiled.asm["llir"], metadata, 90, options) == compiled.asm["ptx"]
    assert ir.ptx_to_cubin(compiled.asm["ptx"], metadata, 90, options) == compiled.asm["cubin"]


@pytest.fixture(scope="module")
def ttgir(tmp_path_factory):
    compiled = compiler.compile_source(triple_kernel, {"x": "*fp32", "n": "i32", "BLOCK": "constexpr"},
                                       {"BLOCK": 128}, {}, 90, {"num_warps": 4})
    path = tmp_path_factory.mktemp("ir") / "k.ttgir"
    path.write_text(compiled.asm["ttgir"])
    return path


def test_a_module_parses_prints_and_counts(ttgir):
    module = ir.Module.parse(ttgir, ir.new_context(90))
    assert "tt.func public @triple_kernel" in module.text() and "loc(" in module.text()
    assert "tt.func public @triple_kernel" in module.text_without_locations()
    assert "loc(" not in module.text_without_locations()
    assert module.operation_count() > 5
    assert module.int_attribute("ttg.num-warps") == 4 and module.int_attribute("ttg.maxnreg") is None
    assert module.string_attribute("ttg.target") == "cuda:90"
    assert module.string_attribute("no.such") is None


def test_a_file_mlir_refuses_is_parse_failed(tmp_path):
    bad = tmp_path / "bad.ttir"
    bad.write_text("module {\n  tt.func @f() {\n    %0 = arith.bogus 1\n  }\n}\n")
    with pytest.raises(ir.ParseFailed):
        ir.Module.parse(bad, ir.new_context(90))


def test_a_stages_passes_are_recorded_then_run_one_by_one(ttgir):
    module = ir.Module.parse(ttgir, ir.new_context(90))
    options, stages = ir.stages(90, {"num_warps": 4})
    assert {"ttir", "ttgir", "llir", "ptx", "cubin"} <= set(stages) and options["num_warps"] == 4
    real_pass_manager = libtriton.ir.pass_manager
    calls = stages["llir"].passes(module)
    assert libtriton.ir.pass_manager is real_pass_manager  # the recording stand-in is gone again
    functions = [call.function for call in calls]
    assert "nvidia.passes.ttgpuir.add_to_llvmir" in functions
    for call in calls:  # each names an add function of libtriton that is in place again
        *path, name = call.function.split(".")
        module_of = libtriton
        for part in path:
            module_of = getattr(module_of, part)
        assert getattr(module_of, name) is call.add
        assert call.pipeline_text(module.context)
    for call in calls:
        call.run(module, call.function)
    assert "llvm.func" in module.text()
    metadata = {}
    llvm_ir = stages["llir"].finish(module, metadata)
    assert "define ptx_kernel void @triple_kernel" in llvm_ir and "shared" in metadata


def test_the_pass_managers_run_takes_what_the_release_row_says(ttgir):
    """Release.pass_manager_run_takes_name against the installed binding: the other arity is refused."""
    module = ir.Module.parse(ttgir, ir.new_context(90))
    pass_manager = libtriton.ir.pass_manager(module.context)
    wrong = (module.handle,) if RELEASE.pass_manager_run_takes_name else (module.handle, "name")
    with pytest.raises(TypeError):
        pass_manager.run(*wrong)
    right = (module.handle, "name") if RELEASE.pass_manager_run_takes_name else (module.handle,)
    pass_manager.run(*right)


def test_a_stage_that_runs_no_pass_manager_records_none(ttgir):
    module = ir.Module.parse(ttgir, ir.new_context(90))
    assert ir.Stage("none", lambda handle, metadata: handle).passes(module) is None
