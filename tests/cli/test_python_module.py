"""The generated Python module, built here without a GPU: import, variant listing, and errors that
name the problem (no driver, wrong dtype, host memory, not an array, wrong count, bad keyword)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "vector_add" / "vector_add.toml"


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory, taot_bin):
    out = tmp_path_factory.mktemp("vector_add_python")
    result = subprocess.run([str(taot_bin), "build", str(SPEC), "-o", str(out), "--target", "sm_90", "--python",
                             "--build-library", "-j", str(os.cpu_count() or 2), "--quiet"],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (out / "vector_add_python.cpp").exists()
    return out / "build"


def run_python(module_dir, code):
    env = {**os.environ, "PYTHONPATH": str(module_dir)}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)


PRELUDE = """
    import vector_add as va

    class CudaArray:
        def __init__(self, address, typestr):
            self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": (1024,),
                                             "version": 3}

    class HostArray:
        __array_interface__ = {"data": (0, False), "typestr": "<f4", "shape": (1024,), "version": 3}

    x = CudaArray(0x7f0000001000, "<f4")

    def error_of(call):
        try:
            call()
        except Exception as error:
            return f"{type(error).__name__}: {error}"
        return "no error"
"""


def check(module_dir, body):
    result = run_python(module_dir, PRELUDE + textwrap.indent(textwrap.dedent(body), "    "))
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_imports_and_lists_variants(module_dir):
    out = check(module_dir, """
        variants = va.add_kernel_variants()
        print(len(variants), variants[0]["config"], variants[0]["id"])
        print(va.add_kernel.__doc__)
    """)
    assert out.startswith("192 {'BLOCK_SIZE': 256, 'num_warps': 4, 'num_stages': 3} add_kernel_fp32a16")
    assert "config keywords: BLOCK_SIZE num_warps num_stages" in out


def test_torch_ops_need_torch(module_dir):
    out = check(module_dir, "print(error_of(va.register_torch_ops))")
    assert out.startswith("ModuleNotFoundError: No module named 'torch'"), out


def test_no_driver_is_a_runtime_error_naming_libcuda(module_dir):
    out = check(module_dir, "print(error_of(lambda: va.add_kernel(x, x, x, 1024)))")
    assert out.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), out


def test_wrong_dtype_names_the_argument(module_dir):
    out = check(module_dir, "print(error_of(lambda: va.add_kernel(CudaArray(0x7f0000001000, '<f8'), x, x, 1024)))")
    assert out.startswith("ValueError: vector_add::add_kernel: no compiled variant accepts x_ptr = fp64 pointer"), out
    assert "fp32 align 16" in out


def test_host_memory_and_non_arrays_are_refused(module_dir):
    out = check(module_dir, """
        print(error_of(lambda: va.add_kernel(x, x, HostArray(), 1024)))
        print(error_of(lambda: va.add_kernel(x, object(), x, 1024)))
    """)
    host, other = out.splitlines()
    assert host.startswith("ValueError: vector_add.add_kernel: output_ptr: a __main__.HostArray in host memory"), host
    assert other.startswith("TypeError: vector_add.add_kernel: y_ptr: expected a CUDA tensor"), other


def test_none_pointer_needs_an_argument_of_one_dtype(module_dir):
    out = check(module_dir, "print(error_of(lambda: va.add_kernel(None, x, x, 1024)))")
    assert out.strip() == ("TypeError: vector_add.add_kernel: x_ptr: None is accepted only for pointers of one dtype; "
                           "this one takes fp32, fp16, bf16"), out


def test_wrong_count_keyword_and_scalar_type(module_dir):
    out = check(module_dir, """
        print(error_of(lambda: va.add_kernel(x, x, 1024)))
        print(error_of(lambda: va.add_kernel(x, x, x, 1024, BLOCK=256)))
        print(error_of(lambda: va.add_kernel(x, x, x, 1024, BLOCK_SIZE=512)))
        print(error_of(lambda: va.add_kernel(x, x, x, "1024")))
        print(error_of(lambda: va.add_kernel(x, x, x, 0)))
    """)
    count, keyword, value, scalar, empty = out.splitlines()
    assert count == "TypeError: vector_add.add_kernel() takes 4 arguments, got 3"
    assert keyword.startswith("TypeError: vector_add.add_kernel(): unknown keyword 'BLOCK'; the keywords are: stream,")
    assert value == "ValueError: vector_add::add_kernel: config BLOCK_SIZE=512 was not compiled; compiled values: 256, 1024"
    assert scalar == "TypeError: vector_add.add_kernel: n_elements: expected an int, got str"
    assert empty == "no error"  # an empty grid launches nothing, even without a driver
