"""The generated Python module, built here without a GPU: import, variant listing, errors that name
the problem (no driver, wrong dtype, host memory, wrong rank, not an array, wrong count, bad
keyword), and arrays given through __dlpack__ or a DLPack C exchange table (tests/cli/dlpack_fakes.py)."""
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "vector_add" / "vector_add.toml"
IMAGE_FIELDS = REPO / "runtime" / "include" / "taot" / "image_fields.h"


def listed_python_keys():
    """The keys of variants()' image dicts by runtime/include/taot/image_fields.h: the manifest key
    of each member it marks copy or own for Python (own ones under their top-level key), and the
    driver the image needs."""
    rows = re.findall(r'X\(\w+, [^,]+, "([\w.]+)", \w+, (copy|own), "\w*"\)', IMAGE_FIELDS.read_text())
    assert rows
    return {key.split(".")[0] for key, _ in rows} | {"min_driver"}


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
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(module_dir), str(Path(__file__).parent),
                                                        os.environ["PYTHONPATH"]])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)


PRELUDE = """
    import vector_add as va

    class CudaArray:
        def __init__(self, address, typestr, shape=(1024,)):
            self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": shape,
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


def check(module_dir, body, prelude=""):
    body = textwrap.dedent(prelude) + textwrap.dedent(body)
    result = run_python(module_dir, PRELUDE + textwrap.indent(body, "    "))
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_imports_and_lists_variants(module_dir):
    out = check(module_dir, """
        variants = va.add_kernel_variants()
        print(len(variants), variants[0]["config"], variants[0]["id"])
        print(va.add_kernel.__doc__)
    """)
    assert out.startswith("192 {'BLOCK_SIZE': 256, 'num_warps': 4, 'num_stages': 3} add_kernel_fp32a16")
    images = check(module_dir, "print(va.add_kernel_variants()[0]['images'])")
    assert images.startswith("[{'target': 'sm_90', 'arch': 90, 'warp_size': 32, 'shared': 0, 'num_warps': 4, 'num_ctas': 1, 'global_scratch_size': 0,"), images
    import triton
    assert f"'triton_version': '{triton.__version__}', 'ptxas_version': '" in images, images
    assert "'vendor': 'nvidia'" in images, images  # the image's driver (docs/amd.md)
    layout = "3.5" if triton.__version__ < "3.7" else "3.7"
    assert f"'launch_abi': {{'tensordesc_layout': '{layout}', 'scratch_pointers': 2}}, 'min_driver': " in images, images
    keys = check(module_dir, "print(*va.add_kernel_variants()[0]['images'][0])").split()
    assert set(keys) == listed_python_keys(), keys
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
    assert other.startswith("TypeError: vector_add.add_kernel: y_ptr: expected a CUDA array (a torch tensor, or an "
                            "object with __dlpack__ or __cuda_array_interface__), got object"), other


def test_wrong_rank_names_the_argument_and_shape(module_dir):
    out = check(module_dir, """
        print(error_of(lambda: va.add_kernel(x, CudaArray(0x7f0000001000, '<f4', (32, 32)), x, 1024)))
    """)
    assert out.strip() == "ValueError: vector_add.add_kernel: y_ptr: expected a 1-D array, got shape (32, 32)", out


DLPACK_PRELUDE = """
    from dlpack_fakes import DLPackArray, ExchangeTensor, STREAM_QUERIES, K_DL_CPU, K_DL_CUDA
    address = 0x7f0000001000
"""


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "pre-1.0"])
def test_dlpack_objects_are_read_and_told_the_stream(module_dir, versioned):
    out = check(module_dir, prelude=DLPACK_PRELUDE, body=f"""
        a, b, c = (DLPackArray(address, versioned={versioned}) for _ in range(3))
        # Read through the protocol up to the launch, which needs the driver this machine lacks.
        print(error_of(lambda: va.add_kernel(a, b, c, 1024)))
        print(a.streams, c.streams)
        print(error_of(lambda: va.add_kernel(a, b, c, 1024, stream=0x1234)))
        print(a.streams[-1])
        print(error_of(lambda: va.add_kernel(a, DLPackArray(address, "fp64", versioned={versioned}), c, 1024)))
        print(error_of(lambda: va.add_kernel(a, b, DLPackArray(address, device=(K_DL_CPU, 0)), 1024)))
        print(error_of(lambda: va.add_kernel(a, b, DLPackArray(address, shape=(4, 256)), 1024)))
        print(error_of(lambda: va.add_kernel(a, DLPackArray(address, device=(K_DL_CUDA, 1)), c, 1024)))
    """)
    launch, streams, launch_on, stream, dtype, host, rank, device = out.splitlines()
    assert launch.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), launch
    assert streams == "[1] [1]"  # DLPack's number for the null stream, the one taot launches on
    assert launch_on.startswith("RuntimeError: cannot load the CUDA driver"), launch_on
    assert stream == str(0x1234)
    assert dtype.startswith("ValueError: vector_add::add_kernel: no compiled variant accepts y_ptr = fp64 pointer"), dtype
    assert host == "ValueError: vector_add.add_kernel: output_ptr: the array is in host memory; taot kernels take CUDA arrays"
    assert rank == "ValueError: vector_add.add_kernel: output_ptr: expected a 1-D array, got shape (4, 256)"
    assert device == "ValueError: vector_add.add_kernel: y_ptr: the array is on cuda:1 but x_ptr is on cuda:0"


def test_exchange_table_gives_views_and_the_current_stream(module_dir):
    out = check(module_dir, prelude=DLPACK_PRELUDE, body="""
        t = ExchangeTensor(address, device=(K_DL_CUDA, 3))
        print(error_of(lambda: va.add_kernel(t, t, t, 1024)))
        print(STREAM_QUERIES)
        print(error_of(lambda: va.add_kernel(t, t, t, 1024, stream=7)))
        print(STREAM_QUERIES)
        print(error_of(lambda: va.add_kernel(t, ExchangeTensor(address, "i32", device=(K_DL_CUDA, 3)), t, 1024)))
        print(error_of(lambda: va.add_kernel(ExchangeTensor(address, device=(K_DL_CPU, 0)), t, t, 1024)))
        print(error_of(lambda: va.add_kernel(t, t, ExchangeTensor(address, shape=(2, 512), device=(K_DL_CUDA, 3)), 1024)))
        # A __dlpack__ object beside exchange tensors is asked to order its work before their stream.
        d = DLPackArray(address, device=(K_DL_CUDA, 3))
        print(error_of(lambda: va.add_kernel(t, d, t, 1024)), d.streams)
    """)
    launch, queries, launch_on, queries_after, dtype, host, rank, mixed = out.splitlines()
    assert launch.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), launch
    assert queries == f"[({2}, 3)]"  # the current stream of the tensors' device, asked once
    assert queries_after == queries  # stream= given: no query
    assert dtype.startswith("ValueError: vector_add::add_kernel: no compiled variant accepts y_ptr = i32 pointer"), dtype
    assert host == "ValueError: vector_add.add_kernel: x_ptr: the array is in host memory; taot kernels take CUDA arrays"
    assert rank == "ValueError: vector_add.add_kernel: output_ptr: expected a 1-D array, got shape (2, 512)"
    assert mixed.startswith("RuntimeError: cannot load the CUDA driver") and mixed.endswith(f"[{0x5000}]"), mixed


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
    assert count == "TypeError: vector_add.add_kernel() takes 4 arguments (in order or by name), and 'n_elements' is missing"
    assert keyword.startswith("TypeError: vector_add.add_kernel(): unknown keyword 'BLOCK'; the keywords are: stream,")
    assert value == "ValueError: vector_add::add_kernel: config BLOCK_SIZE=512 was not compiled; compiled values: 256, 1024"
    assert scalar == "TypeError: vector_add.add_kernel: n_elements: expected an int, got str"
    assert empty == "no error"  # an empty grid launches nothing, even without a driver


def test_scratch_functions_need_the_driver(module_dir):
    out = check(module_dir, """
        print(error_of(lambda: va.reserve_scratch(4096)))
        print(error_of(lambda: va.release_scratch()))
        print(va.reserve_scratch.__doc__.splitlines()[0])
    """)
    reserve, release, doc = out.splitlines()[:3]
    assert reserve.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), reserve
    assert release.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), release
    assert doc.startswith("reserve_scratch(bytes: int, stream: object | None = None)"), doc


# One binding, one runtime: every taot library's module loads through taot._native.

SECOND_SPEC = """
[library]
name = "second_library"
targets = ["sm_90"]

[[kernel]]
name = "add_kernel"
source = "{source}"
grid = ["cdiv(n_elements, BLOCK_SIZE)"]

[kernel.args]
x_ptr = {{ type = "*fp32" }}
y_ptr = {{ type = "*fp32" }}
output_ptr = {{ type = "*fp32", output = true }}
n_elements = {{ type = "i32" }}
BLOCK_SIZE = {{ constexpr = [128] }}
"""


@pytest.fixture(scope="module")
def second_module_dir(tmp_path_factory, taot_bin):
    """A second library, built like the first: the two are imported into one process."""
    folder = tmp_path_factory.mktemp("second_library")
    spec = folder / "second_library.toml"
    spec.write_text(SECOND_SPEC.format(source=SPEC.parent / "vector_add.py"))
    out = folder / "out"
    result = subprocess.run([str(taot_bin), "build", str(spec), "-o", str(out), "--python", "--build-library",
                             "--quiet"], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out / "build"


def test_two_libraries_share_one_binding_and_runtime(module_dir, second_module_dir):
    out = check(module_dir, """
        import second_library, taot._native
        print(taot._native.libraries())
        print(type(va.add_kernel) is type(second_library.add_kernel), va.add_kernel, second_library.add_kernel)
        print(len(second_library.add_kernel_variants()), second_library.add_kernel.choose.__self__ is second_library.add_kernel)
    """, prelude=f"import sys; sys.path.insert(0, {str(second_module_dir)!r})\n")
    libraries, same_type, variants = out.splitlines()
    assert libraries == "[('vector_add', ['add_kernel']), ('second_library', ['add_kernel'])]", libraries
    assert same_type == "True <taot kernel vector_add.add_kernel> <taot kernel second_library.add_kernel>", same_type
    assert variants == "1 True", variants


def test_a_module_of_another_abi_version_is_refused_naming_both():
    """What taot._native does with a module that some other taot generated: refused before anything
    is made of its tables (called here as a module's PyInit would, through the capsule)."""
    code = textwrap.dedent("""
        import ctypes
        import taot._native as native

        class Registration(ctypes.Structure):
            _fields_ = [("abi_version", ctypes.c_uint32), ("name", ctypes.c_char_p), ("tables", ctypes.c_void_p),
                        ("table_count", ctypes.c_size_t)]

        pointer_of = ctypes.pythonapi.PyCapsule_GetPointer
        pointer_of.restype, pointer_of.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        make_module = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.POINTER(Registration))(
            pointer_of(native.make_module, b"taot._native.make_module"))
        for version in (native.abi_version - 1, native.abi_version + 1):
            try:
                make_module(ctypes.byref(Registration(version, b"old_library", None, 0)))
            except ValueError as error:
                print(error)
        print(type(make_module(ctypes.byref(Registration(native.abi_version, b"empty_library", None, 0)))).__name__)
        print(native.libraries())
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    older, newer, module, libraries = result.stdout.splitlines()
    import taot._native as native
    version = native.abi_version
    assert older == (f"the taot library old_library was generated for taot's ABI version {version - 1}, and this "
                     f"taot._native has version {version}: rebuild the library with this taot (taot build, or taot "
                     f"gen and CMake)"), older
    assert newer.startswith(f"the taot library old_library was generated for taot's ABI version {version + 1}"), newer
    assert (module, libraries) == ("module", "[('empty_library', [])]")


def test_without_the_taot_package_the_import_says_what_is_missing(module_dir):
    # -S: no site-packages, so no installed taot either; only the module's folder on the path.
    result = subprocess.run([sys.executable, "-S", "-c", "import vector_add"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(module_dir)}, timeout=120)
    assert result.returncode != 0
    assert ("ImportError: the taot library vector_add needs taot's Python binding, taot._native, which this Python "
            "cannot import (No module named 'taot'): install taot (pip install taot) or build it (scripts/build.sh) "
            "and put its python/ folder on PYTHONPATH") in result.stderr, result.stderr
