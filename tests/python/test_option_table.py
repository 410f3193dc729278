"""Triton's compile options as taot knows them are one table (python/taot/triton_api/options.py):
the spec's option kinds and defaults, variant-id letters, triton.Config's options, the .ttgir
attributes passes reads and the options import-cache always lists all come from it."""
from taot.spec import validate, variants
from taot.triton_api import compiler, kernels, options
from taot.workbench import cache_import, passes


def test_the_installed_triton_has_every_option_but_those_its_release_lacks():
    missing = {option.name for option in options.OPTIONS
               if option.name not in compiler.option_fields(option.vendor or "nvidia")}
    assert missing <= {"enable_reflect_ftz"}, missing  # 3.5 has no enable_reflect_ftz
    amd = {option.name for option in options.OPTIONS if option.vendor == "amd"}
    assert amd == {"waves_per_eu", "matrix_instr_nonkdim", "kpack"} and not amd & compiler.option_fields("nvidia")
    assert amd <= compiler.option_fields("amd")
    assert set(validate.OPTION_KINDS) == {option.name for option in options.OPTIONS} - missing


def test_the_other_tables_are_the_option_tables():
    assert list(validate.OPTION_KINDS) == [option.name for option in options.OPTIONS if option.name in
                                           validate.OPTION_KINDS], "config fields follow the table's order"
    assert kernels.CONFIG_OPTIONS == passes.TUNABLE_OPTIONS == ("num_warps", "num_stages", "num_ctas", "maxnreg")
    assert set(passes._IR_OPTION_ATTRIBUTES) <= set(kernels.CONFIG_OPTIONS)
    assert set(cache_import.ALWAYS_OPTIONS) <= set(kernels.CONFIG_OPTIONS)
    abbreviations = [option.abbreviation for option in options.OPTIONS]
    assert len(set(abbreviations)) == len(abbreviations), "variant ids tell every option apart"
    assert variants.ABBREVIATIONS is options.ABBREVIATIONS


def test_a_triton_built_without_its_amd_backend_still_serves_nvidia_targets():
    """A source build of Triton may leave the AMD backend out (TRITON_CODEGEN_BACKENDS=nvidia): taot
    then has no AMD options and refuses AMD targets, and everything NVIDIA works as before."""
    import subprocess
    import sys
    code = """
import sys
import triton.backends
triton.backends.backends.pop("amd", None)
sys.modules["triton.backends.amd"] = sys.modules["triton.backends.amd.compiler"] = None  # import fails
from taot.spec import validate
from taot.triton_api import compiler
assert compiler.option_fields("amd") == set() and compiler.option_default("kpack", "amd") is None
assert "waves_per_eu" not in validate.OPTION_KINDS and validate.OPTION_KINDS["num_warps"] == "int"
assert not compiler.has_amd_backend()
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
