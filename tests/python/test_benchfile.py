# Bench files (python/taot/measure/benchfile.py, docs/bench-file.md): good files load into the model a user
# expects; every problem is an error naming the file, the name in it and what was expected; the
# example bench files load, without torch, and agree with their specs.
import sys
import textwrap

import pytest

from conftest import REPO
from taot.measure.benchfile import Call, Shape, Tolerance, load_bench_file
from taot.errors import BenchFileError, SpecError

BASE = '''\
KERNEL = "scale_kernel"
SHAPES = [{"n": 1024}, {"n": 4096}]


def make_args(shape, device):
    return ["x", "out", shape["n"], 2.0]
'''


def load(tmp_path, text, name="bench_scale.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return load_bench_file(path, label=name)


def error(tmp_path, text, name="bench_scale.py"):
    with pytest.raises(BenchFileError) as caught:
        load(tmp_path, text, name)
    return str(caught.value)


# ---- good files ----

def test_minimal_file(tmp_path):
    bench = load(tmp_path, BASE)
    assert bench.library is None and bench.names == ("scale_kernel",)
    kernel = bench.kernel("scale_kernel")
    assert kernel.dims == ("n",) and kernel.x_axis == "n"
    assert kernel.shapes == (Shape([("n", 1024)]), Shape([("n", 4096)]))
    assert kernel.tune_shapes == kernel.shapes
    assert kernel.outputs is None and kernel.reference is None and kernel.baselines == {}
    assert kernel.flops_of(kernel.shapes[0]) is None and kernel.metric == "ms"
    assert kernel.call(kernel.shapes[1], "cpu") == Call("x", "out", 4096, 2.0)
    assert kernel.expected(Call()) is None


def test_full_file_for_one_kernel(tmp_path):
    bench = load(tmp_path, '''\
        from taot.measure.benchfile import Call

        LIBRARY = "scale"
        KERNEL = "scale_kernel"
        DIMS = ("n", "dtype")
        X_AXIS = "n"
        SHAPES = [(2 ** k, dtype) for dtype in ("fp32", "fp16") for k in range(10, 13)]
        TUNE_SHAPES = [(4096, "fp16")]
        OUTPUTS = "out_ptr"
        TOLERANCE = {"fp16": {"atol": 1e-3, "rtol": 1e-3}, "default": {"rtol": 1e-6}}
        FLOPS_DTYPE = "fp32"
        METRIC = "gbps"
        SIZES = {"fp32": 4, "fp16": 2}
        seen = []


        def make_args(shape, device):
            seen.append((shape, device))
            return Call([1.0] * shape["n"], [0.0] * shape["n"], shape["n"], scale=2.0)


        def reference(x, out, n, scale):
            return [scale * value for value in x]


        def flops(shape):
            return shape["n"]


        def bytes(shape):
            return 2 * shape["n"] * SIZES[shape["dtype"]]


        BASELINES = {"python": lambda x, out, n, scale: None, "torch.compile": print}
        ''')
    kernel = bench.kernels[0]
    assert bench.library == "scale"
    assert kernel.dims == ("n", "dtype") and len(kernel.shapes) == 6
    assert kernel.shapes[0] == Shape([("n", 1024), ("dtype", "fp32")]) and kernel.shapes[0].label == "n=1024, dtype=fp32"
    assert kernel.tune_shapes == (Shape([("n", 4096), ("dtype", "fp16")]),)
    assert kernel.outputs == ("out_ptr",) and kernel.metric == "gbps"
    shape = kernel.shapes[4]
    assert (kernel.flops_of(shape), kernel.bytes_of(shape), kernel.flops_dtype_of(shape)) == (2048, 8192, "fp32")
    assert kernel.bytes_of(kernel.tune_shapes[0]) == 16384
    call = kernel.call(kernel.shapes[0], "cuda:1")
    assert call.args[2] == 1024 and call.kwargs == {"scale": 2.0}
    assert kernel.expected(call) == [[2.0] * 1024]
    assert list(kernel.baselines) == ["python", "torch.compile"]
    assert kernel.tolerance_for("fp16") == Tolerance(1e-3, 1e-3)
    assert kernel.tolerance_for("torch.float16") == Tolerance(1e-3, 1e-3)
    assert kernel.tolerance_for("bf16") == Tolerance(0.0, 1e-6)  # the file's default
    assert kernel.output_positions(["x_ptr", "out_ptr", "n", "scale"]) == (1,)


def test_user_functions_get_plain_dicts_and_the_device(tmp_path):
    bench = load(tmp_path, BASE + '''
seen = []
def make_args(shape, device):
    seen.append((type(shape), shape, device))
    shape["n"] = -1  # a function may change its copy
    return {"n": 1}
''')
    kernel = bench.kernels[0]
    assert kernel.call(kernel.shapes[0], "cuda:0") == Call(n=1)
    module = sys.modules[kernel.make_args.__module__]
    assert module.seen == [(dict, {"n": -1}, "cuda:0")]
    assert kernel.shapes[0]["n"] == 1024


def test_shapes_from_a_function_and_single_values(tmp_path):
    bench = load(tmp_path, '''\
        KERNEL = "k"
        X_AXIS = "M"
        def shapes():
            return (m for m in (1, 2, 4, 8))
        def make_args(shape, device):
            return []
        def flops(shape):
            return 2 * shape["M"]
        ''')
    kernel = bench.kernels[0]
    assert kernel.dims == ("M",) and [s["M"] for s in kernel.shapes] == [1, 2, 4, 8]
    assert [kernel.flops_of(s) for s in kernel.shapes] == [2, 4, 8, 16] and kernel.metric == "tflops"


def test_x_axis_is_the_one_dimension_that_varies(tmp_path):
    bench = load(tmp_path, BASE.replace('SHAPES = [{"n": 1024}, {"n": 4096}]',
                                        'SHAPES = [{"dtype": "fp16", "n": 1024, "k": 3}, {"k": 3, "n": 4096, "dtype": "fp16"}]'))
    kernel = bench.kernels[0]
    assert kernel.dims == ("dtype", "n", "k") and kernel.x_axis == "n"
    assert kernel.shapes[1].label == "dtype=fp16, n=4096, k=3"  # in the first shape's order


def test_library_file_with_shared_fields(tmp_path):
    bench = load(tmp_path, '''\
        DIMS = ("rows", "cols")
        X_AXIS = "cols"
        SHAPES = [(4096, c) for c in (1024, 2048)]
        def bytes(shape):
            return 2 * shape["rows"] * shape["cols"]
        def make_args(shape, device):
            return ["x", shape["rows"]]
        KERNELS = {
            "softmax": {},
            "layer_norm": {"shapes": [(8, 16)], "make_args": lambda shape, device: {"n": 1}, "metric": "gbps"},
        }
        ''')
    assert bench.names == ("softmax", "layer_norm")
    softmax, layer_norm = bench.kernels
    assert len(softmax.shapes) == 2 and softmax.bytes_of(softmax.shapes[1]) == 2 * 4096 * 2048
    assert layer_norm.shapes == (Shape([("rows", 8), ("cols", 16)]),) and layer_norm.bytes_of(layer_norm.shapes[0]) == 256
    assert layer_norm.call(layer_norm.shapes[0], "cpu") == Call(n=1)
    assert softmax.wheres["shapes"] == "SHAPES" and layer_norm.wheres["shapes"] == "KERNELS.layer_norm.shapes"
    assert bench.axes() == {"softmax": "cols", "layer_norm": "cols"}
    with pytest.raises(BenchFileError, match=r'^bench_scale.py: KERNELS: expected an entry for kernel "rms_norm", '
                                             r'got entries for softmax, layer_norm only$'):
        bench.kernel("rms_norm")
    assert bench.metrics() == {"softmax": "gbps", "layer_norm": "gbps"}


def test_default_tolerances_are_torch_testings(tmp_path):
    kernel = load(tmp_path, BASE).kernels[0]
    assert kernel.tolerance_for("fp32") == Tolerance(1e-5, 1.3e-6)
    assert kernel.tolerance_for("torch.bfloat16") == Tolerance(1e-5, 1.6e-2)
    assert kernel.tolerance_for("i32") == Tolerance(0.0, 0.0)
    one = load(tmp_path, BASE + 'TOLERANCE = {"atol": 0.5}\n').kernels[0]
    assert one.tolerance_for("fp16") == one.tolerance_for("i8") == Tolerance(0.5, 0.0)
    some = load(tmp_path, BASE + 'TOLERANCE = {"fp16": {"atol": 0.5}}\n').kernels[0]
    assert some.tolerance_for("fp16") == Tolerance(0.5, 0.0) and some.tolerance_for("fp32") == Tolerance(1e-5, 1.3e-6)


def test_reference_forms(tmp_path):
    bench = load(tmp_path, BASE + '''
OUTPUTS = ["out", "stats"]
def reference(*args):
    return {"stats": 2, "out": 1} if args else (1, 2)
''')
    kernel = bench.kernels[0]
    assert kernel.expected(Call()) == [1, 2]
    assert kernel.expected(Call("x")) == [1, 2]


def test_loading_imports_no_torch(tmp_path):
    torch_before = "torch" in sys.modules
    load(tmp_path, BASE)
    load_bench_file(REPO / "examples" / "vector_add" / "bench_vector_add.py")
    load_bench_file(REPO / "examples" / "matmul" / "bench_matmul.py")
    if not torch_before:
        assert "torch" not in sys.modules


def test_bench_file_errors_are_spec_errors(tmp_path):
    with pytest.raises(SpecError):
        load(tmp_path, BASE + "del SHAPES\n")


# ---- every error names the file, the name and what was expected ----

def test_exact_message(tmp_path):
    assert error(tmp_path, BASE + 'SHAPES = [{"n": 1024}, {"n": "big"}]\n') == \
        'bench_scale.py: SHAPES[1].n: expected a number (the sweep\'s axis is n), got "big"'


def test_missing_file_and_suffix(tmp_path):
    with pytest.raises(BenchFileError) as caught:
        load_bench_file(tmp_path / "none.py", label="none.py")
    assert str(caught.value) == "none.py: expected an existing bench file (a .py file), got no such file"
    (tmp_path / "bench.toml").write_text("")
    with pytest.raises(BenchFileError) as caught:
        load_bench_file(tmp_path / "bench.toml", label="bench.toml")
    assert str(caught.value) == 'bench.toml: expected a bench file ending in .py, got a file ending in ".toml"'


def test_a_file_that_fails_to_run_names_its_line(tmp_path):
    assert error(tmp_path, "KERNEL = 'k'\n\nx = undefined_name\n") == \
        ("bench_scale.py: expected a Python bench file that runs cleanly, got NameError at line 3: "
         "name 'undefined_name' is not defined")
    assert error(tmp_path, "KERNEL = (\n").startswith(
        "bench_scale.py: expected a Python bench file that runs cleanly, got SyntaxError at line 1")


ERRORS = [
    # the kernels
    ("del KERNEL\n", "KERNEL",
     'KERNEL = "name" (one kernel) or KERNELS = {name: {...}} (several)', "nothing (the file defines no KERNEL)"),
    ("del KERNEL\nKERNAL = 'k'\n", "KERNEL", None, "nothing (the file defines no KERNEL; did you mean KERNAL?)"),
    ("KERNELS = {}\n", "KERNELS", "KERNEL (a file for one kernel) or KERNELS (several), not both",
     "both KERNEL and KERNELS"),
    ("KERNEL = 'scale-kernel'\n", "KERNEL", "the kernel's name in its library", '"scale-kernel"'),
    ("LIBRARY = 3\n", "LIBRARY", "the library's name (an identifier)", "3"),
    ("del KERNEL\nKERNELS = {}\n", "KERNELS", "a dict of kernel name -> dict", "an empty dict"),
    ("del KERNEL\nKERNELS = ['a']\n", "KERNELS", "a dict of kernel name -> dict", '["a"]'),
    ("del KERNEL\nKERNELS = {'a': 1}\n", "KERNELS.a", "a dict of kernel a's fields", "1"),
    ("del KERNEL\nKERNELS = {'a b': {}}\n", "KERNELS", "kernel names that are identifiers", '"a b"'),
    ("del KERNEL\nKERNELS = {'a': {'shape': []}}\n", "KERNELS.a.shape", "one of the keys shapes, dims, x_axis",
     "an unknown key (did you mean shapes?)"),
    ("del KERNEL\ndel SHAPES\nKERNELS = {'a': {}}\n", "KERNELS.a.shapes", "the sweep",
     "nothing (KERNELS.a has no shapes and the file no SHAPES)"),
    # shapes
    ("del SHAPES\nSHAPE = [1]\n", "SHAPES", "the sweep: a list of shapes",
     "nothing (the file defines no SHAPES; did you mean SHAPE?)"),
    ("def shapes():\n    return [1]\n", "shapes", "SHAPES or shapes, not both", "both"),
    ("SHAPES = 1024\n", "SHAPES", "the sweep: a list of shapes", "1024"),
    ("SHAPES = []\n", "SHAPES", "a non-empty list of shapes", "an empty list"),
    ("del SHAPES\ndef shapes():\n    return [1 / 0]\n", "shapes()", "a call that returns the list of shapes",
     "ZeroDivisionError at line 9: division by zero"),
    ("del SHAPES\ndef shapes(n):\n    return [n]\n", "shapes", "a function shapes()", "a function of (n)"),
    ("SHAPES = [(1, 2)]\n", "DIMS", "the names of a shape's dimensions, needed when shapes are not dicts",
     "nothing (the file defines no DIMS)"),
    ("DIMS = ('m', 'n')\nSHAPES = [(1, 2), (3,)]\n", "SHAPES[1]", "2 values (m, n)", "1 values, [3]"),
    ("SHAPES = [{'n': 1}, {'m': 2}]\n", "SHAPES[1]", "a shape with the dimensions n", "a dict with m"),
    ("SHAPES = [{'n': 1}, {'n': 2, 'm': 2}]\n", "SHAPES[1]", "a shape with the dimensions n", "a dict with n, m"),
    ("DIMS = ('m', 'n')\nSHAPES = [5]\n", "SHAPES[0]", "a dict or a tuple of 2 values (m, n)", "5"),
    ("SHAPES = [{'n': [1]}]\n", "SHAPES[0].n", "an int, a finite float, a string or a bool", "[1]"),
    ("SHAPES = [{'n': float('nan')}]\n", "SHAPES[0].n", "an int, a finite float, a string or a bool", "nan"),
    ("SHAPES = [{'n': 1}, {'n': 1}]\n", "SHAPES[1]", "no shape twice", "(n=1) again"),
    ("DIMS = ['n', 'n']\n", "DIMS[1]", "no dimension named twice", '"n" again'),
    ("DIMS = ['n', 'block size']\n", "DIMS[1]", "a dimension name that is an identifier", '"block size"'),
    ("DIMS = []\n", "DIMS", "the names of a shape's dimensions", "[]"),
    ("SHAPES = [{'m': 1, 'n': 2}, {'m': 2, 'n': 3}]\n", "X_AXIS",
     "the dimension the sweep is plotted along (several vary: m, n)", "nothing (the file defines no X_AXIS)"),
    ("X_AXIS = 'm'\n", "X_AXIS", "one of the dimensions n", '"m"'),
    ("X_AXIS = 3\n", "X_AXIS", "the dimension the sweep is plotted along", "3"),
    ("TUNE_SHAPES = [{'m': 1}]\n", "TUNE_SHAPES[0]", "a shape with the dimensions n", "a dict with m"),
    # functions
    ("del make_args\n", "make_args", "a function make_args(shape, device) returning the call's arguments",
     "nothing (the file defines no make_args)"),
    ("make_args = [1, 2]\n", "make_args", "a function make_args(shape, device)", "[1, 2]"),
    ("def make_args(shape):\n    return []\n", "make_args", "a function make_args(shape, device)",
     "a function of (shape)"),
    ("reference = 5\n", "reference", "a function reference(*args, **kwargs)", "5"),
    ("import math as reference\n", "reference", "a function reference(*args, **kwargs)", "a module"),
    ("OUTPUTS = []\n", "OUTPUTS", "a non-empty list of argument names or positions", "[]"),
    ("OUTPUTS = ['out', -1]\n", "OUTPUTS[1]", "an argument's name or position (an int, 0 or more)", "-1"),
    ("OUTPUTS = ['out', 'out']\n", "OUTPUTS[1]", "no output named twice", '"out" again'),
    ("BASELINES = [print]\n", "BASELINES", "a dict of other implementations", None),
    ("BASELINES = {'torch add': print}\n", "BASELINES", 'baseline names of letters, digits and _ . + -',
     '"torch add"'),
    ("BASELINES = {'auto': print}\n", "BASELINES.auto", 'a baseline name other than "auto"', '"auto"'),
    ("BASELINES = {'torch': 'torch.add'}\n", "BASELINES.torch", "a function taking the call's arguments",
     '"torch.add"'),
    # formulas
    ("def flops(shape):\n    return 1 / (shape['n'] - 4096) ** 2\n", "flops(n=4096)", "a call that returns a value",
     "ZeroDivisionError at line 8: division by zero"),
    ("def flops(shape):\n    return -shape['n']\n", "flops(n=1024)", "a finite number, 0 or more", "-1024"),
    ("def bytes(shape):\n    return str(shape['n'])\n", "bytes(n=1024)", "a finite number, 0 or more", '"1024"'),
    ("def bytes(shape):\n    return float('inf')\n", "bytes(n=1024)", "a finite number, 0 or more", "inf"),
    ("def bytes(shape):\n    return True\n", "bytes(n=1024)", "a finite number, 0 or more", "true"),
    ("def flops(shape, dtype):\n    return 1\n", "flops", "a function flops(shape)", "a function of (shape, dtype)"),
    ("TUNE_SHAPES = [{'n': 0}]\ndef flops(shape):\n    return 1 // shape['n']\n", "flops(n=0)",
     "a call that returns a value", "ZeroDivisionError"),
    ("def flops(shape):\n    return 1\nFLOPS_DTYPE = 'fp4'\n", "FLOPS_DTYPE",
     "a precision: one of fp64, fp32, tf32, fp16, bf16, fp8, int8", '"fp4"'),
    ("def flops(shape):\n    return 1\ndef flops_dtype(shape):\n    return shape\n", "flops_dtype(n=1024)",
     "a precision", "a table"),
    ("FLOPS_DTYPE = 'bf16'\n", "FLOPS_DTYPE", "a flops(shape) formula beside it", "no flops"),
    ("METRIC = 'tflop/s'\n", "METRIC", "one of tflops, gbps, ms", '"tflop/s"'),
    ("METRIC = 'gbps'\n", "METRIC", "a bytes(shape) formula beside it (a gbps plot needs one)", "no bytes"),
    # tolerances
    ("TOLERANCE = 1e-3\n", "TOLERANCE", 'the largest difference from the reference: {"atol": A, "rtol": R}', "0.001"),
    ("TOLERANCE = {'atol': -1}\n", "TOLERANCE.atol", "a finite number, 0 or more", "-1"),
    ("TOLERANCE = {'float16': {'atol': 1}}\n", "TOLERANCE.float16", "atol and rtol, or dtype names", "an unknown key"),
    ("TOLERANCE = {'fp16': 0.1}\n", "TOLERANCE.fp16", '{"atol": A, "rtol": R} (either may be left out: 0)', "0.1"),
    ("TOLERANCE = {'fp16': {'rtol': 'loose'}}\n", "TOLERANCE.fp16.rtol", "a finite number, 0 or more", '"loose"'),
]


@pytest.mark.parametrize("extra, key, expected, got", ERRORS, ids=[f"{case[1]}-{index}" for index, case in enumerate(ERRORS)])
def test_error_names_file_key_and_expectation(tmp_path, extra, key, expected, got):
    message = error(tmp_path, BASE + extra)
    assert message.startswith(f"bench_scale.py: {key}: expected "), message
    if expected is not None:
        assert message.startswith(f"bench_scale.py: {key}: expected {expected}"), message
    if got is not None:
        assert f", got {got}" in message, message


# ---- errors at call time, and against the library ----

def test_make_args_that_fails_or_returns_something_else(tmp_path):
    kernel = load(tmp_path, BASE + "def make_args(shape, device):\n    return shape['n'] // (shape['n'] - 1024)\n"
                  ).kernels[0]
    with pytest.raises(BenchFileError) as caught:
        kernel.call(kernel.shapes[0], "cpu")
    assert str(caught.value) == ("bench_scale.py: make_args(n=1024): expected a call that returns the arguments, "
                                 "got ZeroDivisionError at line 8: integer division or modulo by zero")
    with pytest.raises(BenchFileError) as caught:
        kernel.call(kernel.shapes[1], "cpu")
    assert str(caught.value).startswith("bench_scale.py: make_args(n=4096): expected a list or tuple of the "
                                        "kernel's arguments, a dict of them by name, or taot.measure.benchfile.Call")
    assert str(caught.value).endswith("got 1")


def test_reference_that_returns_the_wrong_outputs(tmp_path):
    kernel = load(tmp_path, BASE + "OUTPUTS = ['out', 'norm']\ndef reference(*args):\n    return args\n").kernels[0]
    with pytest.raises(BenchFileError) as caught:
        kernel.expected(Call(1, 2, 3))
    assert str(caught.value) == "bench_scale.py: reference(): expected a tuple of 2 outputs (out, norm), got a tuple of 3 values"
    kernel = load(tmp_path, BASE + "OUTPUTS = ['out', 'norm']\ndef reference(*args):\n    return {'out': 1}\n").kernels[0]
    with pytest.raises(BenchFileError, match=r"reference\(\): expected a dict keyed by the outputs \(out, norm\), "
                                             r"got a dict keyed by out"):
        kernel.expected(Call())
    kernel = load(tmp_path, BASE + "def reference(*args):\n    return 7\n").kernels[0]
    assert kernel.expected(Call(), outputs=["out"]) == [7]  # OUTPUTS from the spec
    with pytest.raises(BenchFileError, match=r"expected a tuple of 2 outputs \(a, b\), got 7"):
        kernel.expected(Call(), outputs=["a", "b"])


def test_outputs_resolved_against_the_kernels_arguments(tmp_path):
    kernel = load(tmp_path, BASE + "OUTPUTS = ['out_ptr', 0]\n").kernels[0]
    assert kernel.output_positions(["x_ptr", "out_ptr", "n"]) == (1, 0)
    with pytest.raises(BenchFileError) as caught:
        kernel.output_positions(["x_ptr", "y_ptr"])
    assert str(caught.value) == ('bench_scale.py: OUTPUTS[0]: expected an argument of kernel scale_kernel: '
                                 'x_ptr, y_ptr, got "out_ptr"')
    kernel = load(tmp_path, BASE + "OUTPUTS = 3\n").kernels[0]
    with pytest.raises(BenchFileError, match=r"OUTPUTS: expected a position below 2 \(kernel scale_kernel takes a, b\), got 3"):
        kernel.output_positions(["a", "b"])
    assert load(tmp_path, BASE).kernels[0].output_positions(["a"]) is None


def test_kernel_lookup_and_library_check(tmp_path):
    bench = load(tmp_path, BASE + "LIBRARY = 'scale'\n")
    with pytest.raises(BenchFileError) as caught:
        bench.kernel("other")
    assert str(caught.value) == 'bench_scale.py: KERNEL: expected an entry for kernel "other", got entries for scale_kernel only'
    bench.check_library("scale", ["scale_kernel", "other"])
    with pytest.raises(BenchFileError, match='LIBRARY: expected the library benchmarked, "vector_add", got "scale"'):
        bench.check_library("vector_add", ["scale_kernel"])
    with pytest.raises(BenchFileError, match='KERNEL: expected a kernel of library scale: a, b, got "scale_kernel"'):
        bench.check_library("scale", ["a", "b"])


# ---- the examples ----

def runtime_parameters(kernel_spec):
    return [arg.name for arg in kernel_spec.args if arg.is_runtime and not arg.launch_only]


def spec_outputs(kernel_spec):
    return [arg.name for arg in kernel_spec.args if arg.output]


def test_vector_add_bench_file_agrees_with_its_spec():
    from taot.spec.validate import load_spec
    bench = load_bench_file(REPO / "examples" / "vector_add" / "bench_vector_add.py")
    spec = load_spec(REPO / "examples" / "vector_add" / "vector_add.toml")
    bench.check_library(spec.name, [kernel.name for kernel in spec.kernels])
    kernel = bench.kernel("add_kernel")
    assert kernel.dims == ("n", "dtype") and kernel.x_axis == "n" and kernel.metric == "gbps"
    assert len(kernel.shapes) == 18 and kernel.shapes[-1] == Shape([("n", 2 ** 28), ("dtype", "bf16")])
    assert kernel.bytes_of(kernel.shapes[0]) == 3 * 4 * 4096 and kernel.bytes_of(kernel.shapes[-1]) == 3 * 2 * 2 ** 28
    assert list(kernel.baselines) == ["torch", "triton"]
    assert kernel.tolerance_for("bf16") == Tolerance(0.0, 0.0)
    (add_kernel,) = spec.kernels
    positions = kernel.output_positions(runtime_parameters(add_kernel))
    assert [runtime_parameters(add_kernel)[p] for p in positions] == spec_outputs(add_kernel)


def test_matmul_bench_file_agrees_with_its_spec():
    from taot.spec.validate import load_spec
    bench = load_bench_file(REPO / "examples" / "matmul" / "bench_matmul.py")
    spec = load_spec(REPO / "examples" / "matmul" / "matmul.toml")
    assert bench.library == spec.name == "matmul"
    bench.check_library(spec.name, [kernel.name for kernel in spec.kernels])
    assert bench.names == ("matmul", "matmul_generic")
    tuned, generic = bench.kernels
    assert tuned.x_axis == "M" and tuned.metric == "tflops"
    shape = Shape([("M", 4096), ("N", 4096), ("K", 4096), ("dtype", "bf16")])
    assert shape in tuned.shapes and tuned.flops_of(shape) == 2 * 4096 ** 3
    assert tuned.flops_dtype_of(shape) == "bf16" and tuned.bytes_of(shape) == 2 * 3 * 4096 ** 2
    assert [s["M"] for s in tuned.tune_shapes] == [2 ** k for k in range(13)]
    assert all(s["N"] % 16 for s in generic.shapes)  # shapes only the generic kernel takes
    assert tuned.tolerance_for("fp16") == Tolerance(2e-3, 2e-3)
    for kernel, kernel_spec in zip(bench.kernels, spec.kernels):
        parameters = runtime_parameters(kernel_spec)
        assert [parameters[p] for p in kernel.output_positions(parameters)] == spec_outputs(kernel_spec)


@pytest.mark.parametrize("kernel_name", ["matmul", "matmul_generic"])
def test_matmul_bench_arguments_on_the_cpu(kernel_name):
    torch = pytest.importorskip("torch", reason="make_args makes torch tensors: needs torch (not installed)")
    from taot.spec.validate import load_spec
    kernel = load_bench_file(REPO / "examples" / "matmul" / "bench_matmul.py").kernel(kernel_name)
    kernel_spec = {k.name: k for k in load_spec(REPO / "examples" / "matmul" / "matmul.toml").kernels}[kernel_name]
    shape = kernel.shapes[1]
    call = kernel.call(shape, "cpu")
    assert len(call.args) == len(runtime_parameters(kernel_spec))
    a, b, c = call.args[:3]
    assert c.shape == (shape["M"], shape["N"]) and (b.stride(0) == 1) == (kernel_name == "matmul_generic")
    c.copy_((a.float() @ b.float()).to(c.dtype))
    (expected,) = kernel.expected(call)
    tolerance = kernel.tolerance_for(c.dtype)
    torch.testing.assert_close(c.double(), expected, atol=tolerance.atol, rtol=tolerance.rtol)


CALL_SHAPE = '''\
KERNEL = "scale_kernel"
SHAPES = [{"n": 1024, "dtype": "fp32"}]
SIZES = {"fp32": 4, "bf16": 2}


def make_args(shape, device):
    return ["x", "out", shape["n"], 2.0]


def flops(shape):
    return shape["n"]


def bytes(shape):
    return 2 * shape["n"] * SIZES[shape["dtype"]]


def call_shape(args):
    return {"n": args["n_elements"], "dtype": args["x_ptr"]}
'''


def test_call_shape_turns_one_launch_into_a_shape_for_the_formulas(tmp_path):
    kernel = load(tmp_path, CALL_SHAPE).kernel("scale_kernel")
    shape = kernel.shape_of_call({"x_ptr": "bf16", "out_ptr": "bf16", "n_elements": 4096, "scale": 2.0})
    assert shape == Shape([("n", 4096), ("dtype", "bf16")])
    assert kernel.flops_of(shape) == 4096 and kernel.bytes_of(shape) == 2 * 4096 * 2
    assert load(tmp_path, BASE).kernel("scale_kernel").shape_of_call({"n_elements": 1}) is None  # no call_shape


def test_call_shape_in_a_kernels_entry(tmp_path):
    bench = load(tmp_path, '''\
        KERNELS = {"scale_kernel": {"shapes": [1024], "x_axis": "n", "make_args": lambda shape, device: [],
                                    "call_shape": lambda args: {"n": args["n_elements"]}}}
    ''')
    assert bench.kernel("scale_kernel").shape_of_call({"n_elements": 7}) == Shape([("n", 7)])


def test_call_shape_errors_name_the_function_and_the_launch(tmp_path):
    kernel = load(tmp_path, CALL_SHAPE).kernel("scale_kernel")
    with pytest.raises(BenchFileError) as caught:
        kernel.shape_of_call({"x_ptr": "fp32"})
    assert str(caught.value) == ("bench_scale.py: call_shape(x_ptr=fp32): expected a call that returns the launch's "
                                 "shape, got KeyError at line 19: 'n_elements'")
    wrong = load(tmp_path, CALL_SHAPE.replace('"dtype": args["x_ptr"]', '"dtype": args["x_ptr"], "m": 1'))
    with pytest.raises(BenchFileError) as caught:
        wrong.kernel("scale_kernel").shape_of_call({"x_ptr": "fp32", "n_elements": 4})
    assert str(caught.value) == ("bench_scale.py: call_shape(x_ptr=fp32, n_elements=4): expected a shape with the "
                                 "dimensions n, dtype, got a dict with n, dtype, m")
    not_a_dict = load(tmp_path, CALL_SHAPE.replace('return {"n": args["n_elements"], "dtype": args["x_ptr"]}',
                                                   'return args["n_elements"]'))
    with pytest.raises(BenchFileError) as caught:
        not_a_dict.kernel("scale_kernel").shape_of_call({"n_elements": 4})
    assert str(caught.value) == ("bench_scale.py: call_shape(n_elements=4): expected a dict with the dimensions n, "
                                 "dtype, got 4")
    assert error(tmp_path, CALL_SHAPE.replace("def call_shape(args):", "def call_shape():")) == (
        "bench_scale.py: call_shape: expected a function call_shape(args), got a function of no parameters")


def test_the_documentation_lists_every_field():
    from taot.measure.benchfile import FIELDS
    text = (REPO / "docs" / "bench-file.md").read_text()
    table = text[text.index("| at the top | `KERNELS` key |"):text.index("Any other name in the file")]
    for field in FIELDS:
        row = next((line for line in table.splitlines() if f"| `{field.name}` |" in line), None)
        assert row is not None, f"docs/bench-file.md has no row for {field.name}"
        for name in field.module_names:
            assert f"`{name}" in row, f"docs/bench-file.md's row for {field.name} does not name {name}"


@pytest.mark.parametrize("example", ["vector_add", "matmul", "softmax"])
def test_example_bench_files_load_and_name_their_specs_kernels(example):
    from taot.spec.validate import load_spec
    torch_before = "torch" in sys.modules
    folder = REPO / "examples" / example
    bench = load_bench_file(folder / f"bench_{example}.py")
    spec = load_spec(folder / f"{example}.toml")
    assert bench.library == spec.name == example
    bench.check_library(spec.name, [kernel.name for kernel in spec.kernels])
    kernel_specs = {kernel.name: kernel for kernel in spec.kernels}
    for kernel in bench.kernels:
        parameters = runtime_parameters(kernel_specs[kernel.name])
        assert [parameters[p] for p in kernel.output_positions(parameters)] == spec_outputs(kernel_specs[kernel.name])
    if example == "softmax":  # every width has a compiled block that holds the row
        (softmax,) = bench.kernels
        block_sizes = next(arg.choices for arg in kernel_specs["softmax"].args if arg.name == "BLOCK_SIZE")
        assert sorted({shape["cols"] for shape in softmax.shapes}) == list(block_sizes)
        assert softmax.bytes_of(softmax.shapes[0]) == 2 * 4096 * 128 * 2
        assert list(softmax.baselines) == ["torch", "triton"] and softmax.metric == "gbps"
    if not torch_before:
        assert "torch" not in sys.modules
