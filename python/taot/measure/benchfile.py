# Load a bench file (docs/bench-file.md) into a validated model: per kernel, the shapes of a sweep, how
# to make one call's arguments, the reference, baselines, FLOP and byte formulas, tolerances and the
# shapes `taot tune` times. One format for bench, tune and check. Loading runs the file (torch is
# imported only if the file imports it at its top) and evaluates its shapes and formulas; nothing here
# touches a GPU: arguments are made only when call() is asked for them.
import dataclasses
import difflib
import hashlib
import inspect
import keyword
import math
import re
from collections.abc import Mapping
from pathlib import Path

from ..spec.keypath import describe
from ..spec.dtypes import DTYPES, TORCH_NAMES
from ..errors import BenchFileError
from ..spec.pyfile import PythonFileError, exception_summary, import_file, module_name_for
from .stats import PEAK_KINDS, peak_kind

# The implementation name of the library's automatic config choice in bench results; no baseline may
# take it.
AUTOMATIC = "auto"
# What a sweep's plot can show: TFLOP/s, GB/s, or the median time.
METRICS = ("tflops", "gbps", "ms")
BASELINE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass(frozen=True)
class Field:
    """One thing a bench file says about a kernel: `name` is its key in a KERNELS entry;
    `module_names` its spellings at the top of the file (UPPER for data, lower for a function; a
    field that may be either has both); `expected` says what it must be."""
    name: str
    module_names: tuple
    expected: str
    required: bool = False


# Every field of a kernel's bench entry, once: the loader, its messages and docs/bench-file.md's table
# follow this list.
FIELDS = (
    Field("shapes", ("SHAPES", "shapes"),
          "the sweep: a list of shapes (dicts, tuples in DIMS order, or single values), or a function "
          "shapes() returning one", required=True),
    Field("dims", ("DIMS",), "the names of a shape's dimensions, in order (a list of identifiers)"),
    Field("x_axis", ("X_AXIS",), "the dimension the sweep is plotted along (one of the dimensions)"),
    Field("make_args", ("make_args",),
          "a function make_args(shape, device) returning the call's arguments (make_args(shape, device, config) "
          "with ARGS_DEPEND_ON)", required=True),
    Field("args_depend_on", ("ARGS_DEPEND_ON",),
          "the config fields the arguments depend on (a list of names): make_args then takes a third "
          "argument, a dict of their values"),
    Field("outputs", ("OUTPUTS",), "the arguments the kernel writes: names or positions"),
    Field("reference", ("reference",),
          "a function taking the call's arguments and returning the expected outputs"),
    Field("baselines", ("BASELINES",),
          "a dict of other implementations: name -> function taking the call's arguments"),
    Field("flops", ("flops",), "a function flops(shape) returning the call's floating-point operations"),
    Field("bytes", ("bytes",), "a function bytes(shape) returning the bytes the call reads and writes"),
    Field("flops_dtype", ("FLOPS_DTYPE", "flops_dtype"),
          f"the precision whose peak the FLOP rate is compared with ({', '.join(PEAK_KINDS)}), or a function "
          "flops_dtype(shape) returning it"),
    Field("call_shape", ("call_shape",),
          "a function call_shape(args) returning the shape of one launch (a dict with the file's dimensions), "
          "args being the launch's scalar arguments by name and its pointers' dtypes by name (spec names such "
          "as \"bf16\"; None for a None pointer)"),
    Field("metric", ("METRIC",),
          "what the plot shows: tflops, gbps or ms (default: tflops when flops is given, else gbps when bytes "
          "is, else ms)"),
    Field("tolerance", ("TOLERANCE",),
          'the largest difference from the reference: {"atol": A, "rtol": R}, or such a dict per output dtype'),
    Field("tune_shapes", ("TUNE_SHAPES", "tune_shapes"),
          "the shapes `taot tune` times (default: the sweep), in the same form as SHAPES"),
)
FIELD_NAMES = tuple(field.name for field in FIELDS)
_FIELDS = {field.name: field for field in FIELDS}
TOP_LEVEL = {"KERNEL": 'the kernel\'s name in its library, such as "add_kernel"',
             "KERNELS": "a dict of kernel name -> dict of that kernel's fields (a bench file for several kernels)",
             "LIBRARY": "the library's name (optional; checked against the library benchmarked)"}

# What check compares with when a file gives no tolerance: torch.testing.assert_close's defaults,
# (atol, rtol) per dtype; every other dtype is compared exactly.
DEFAULT_TOLERANCES = {"fp16": (1e-5, 1e-3), "bf16": (1e-5, 1.6e-2), "fp32": (1e-5, 1.3e-6), "fp64": (1e-7, 1e-7)}
_TOLERANCE_KEYS = ("atol", "rtol")
_SPEC_DTYPE_OF_TORCH = {torch_name: spec for spec, torch_name in TORCH_NAMES.items()}


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """|actual - expected| <= atol + rtol * |expected|, element by element."""
    atol: float
    rtol: float


class Shape(Mapping):
    """One point of a sweep: dimension name -> value (an int, float, str or bool), in the file's
    dimension order; hashable, immutable. User functions get a plain dict copy of it."""
    __slots__ = ("_items", "_values")

    def __init__(self, items):
        self._items = tuple(items)
        self._values = dict(self._items)

    def __getitem__(self, name):
        return self._values[name]

    def __iter__(self):
        return (name for name, _ in self._items)

    def __len__(self):
        return len(self._items)

    def __hash__(self):
        return hash(self._items)

    def __eq__(self, other):
        return isinstance(other, Shape) and self._items == other._items

    def __repr__(self):
        return f"Shape({self.label})"

    @property
    def label(self):
        """"M=128, N=4096, dtype=bf16": the shape in messages and tables."""
        return ", ".join(f"{name}={value}" for name, value in self._items)


class Call:
    """The arguments of one call: positional and by keyword. make_args returns a list or tuple
    (positional), a dict (by name), or one of these for both: `from taot.measure.benchfile import Call`,
    `return Call(x, y, out, n, scale=2.0)`."""
    __slots__ = ("args", "kwargs")

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs

    def apply(self, function):
        """function(*args, **kwargs)."""
        return function(*self.args, **self.kwargs)

    def __eq__(self, other):
        return isinstance(other, Call) and (self.args, self.kwargs) == (other.args, other.kwargs)

    def __repr__(self):
        parts = [repr(arg) for arg in self.args] + [f"{name}={value!r}" for name, value in self.kwargs.items()]
        return f"Call({', '.join(parts)})"


@dataclasses.dataclass(frozen=True, eq=False)
class KernelBench:
    """One kernel's entry of a bench file, validated. `wheres` maps each field to where it is (or
    would be) written (`SHAPES`, `KERNELS.softmax.make_args`), for messages. Formulas were evaluated on every
    shape when the file loaded. Not thread-safe (user functions are called as they are)."""
    name: str
    file: str
    path: Path
    dims: tuple
    x_axis: str
    metric: str
    shapes: tuple
    tune_shapes: tuple
    make_args: object
    outputs: tuple = None
    args_depend_on: tuple = ()  # config field names make_args' third argument gives
    reference: object = None
    baselines: dict = dataclasses.field(default_factory=dict)
    tolerance: object = None  # None, a Tolerance, or {dtype or "default": Tolerance}
    wheres: dict = dataclasses.field(default_factory=dict)
    formulas: dict = dataclasses.field(default_factory=dict)  # field name -> function, for flops, bytes, flops_dtype
    call_shape: object = None  # call_shape(args) -> a shape of one launch, or None
    _values: dict = dataclasses.field(default_factory=dict, init=False, repr=False)  # (field, Shape) -> value

    def call(self, shape, device, config=None):
        """The arguments of the call for `shape` on `device` (a torch device string such as "cuda:0",
        or "cpu"): make_args' result as a Call. With ARGS_DEPEND_ON, `config` gives those fields'
        values (a dict; other keys are left out) and make_args receives them as its third argument.
        Raises BenchFileError naming make_args and the shape when it raises or returns something
        else, or when `config` lacks a field the arguments depend on."""
        where = f"{self.wheres['make_args']}({_shape(shape).label})"
        extra = ()
        if self.args_depend_on:
            config = dict(config or {})
            missing = [name for name in self.args_depend_on if name not in config]
            if missing:
                raise BenchFileError(self.file, where, f"a value for each of {', '.join(self.args_depend_on)} "
                                     f"(ARGS_DEPEND_ON)", f"none for {', '.join(missing)}")
            extra = ({name: config[name] for name in self.args_depend_on},)
            where = f"{where[:-1]}, {', '.join(f'{k}={v}' for k, v in extra[0].items())})"
        try:
            result = self.make_args(dict(shape), device, *extra)
        except Exception as error:  # the user's function failed: say where
            raise BenchFileError(self.file, where, "a call that returns the arguments",
                                 exception_summary(error, self.path)) from error  # first_arguments reads the cause
        if isinstance(result, Call):
            return result
        if isinstance(result, (list, tuple)):
            return Call(*result)
        if isinstance(result, dict) and all(isinstance(name, str) for name in result):
            return Call(**result)
        raise BenchFileError(self.file, where, "a list or tuple of the kernel's arguments, a dict of them by "
                             "name, or taot.measure.benchfile.Call(*args, **kwargs)", describe(result))

    def expected(self, call, outputs=None):
        """The reference's outputs for `call`, a list in the order of `outputs` (the file's OUTPUTS
        by default; the caller passes the spec's output arguments when the file names none). None
        when the file has no reference. The reference returns a tuple in that order, a dict keyed like
        `outputs`, or, for one output, its value (anything but a tuple or dict)."""
        if self.reference is None:
            return None
        outputs = tuple(outputs if outputs is not None else self.outputs or ())
        where = f"{self.wheres['reference']}()"
        try:
            result = call.apply(self.reference)
        except Exception as error:
            raise BenchFileError(self.file, where, "a call that returns the expected outputs",
                                 exception_summary(error, self.path)) from error
        named = ", ".join(str(output) for output in outputs)
        if isinstance(result, dict):
            if set(result) != set(outputs):
                raise BenchFileError(self.file, where, f"a dict keyed by the outputs ({named})",
                                     f"a dict keyed by {', '.join(str(key) for key in result)}")
            return [result[output] for output in outputs]
        if isinstance(result, tuple):
            if len(result) != len(outputs):
                raise BenchFileError(self.file, where, f"a tuple of {len(outputs)} outputs ({named})",
                                     f"a tuple of {len(result)} values")
            return list(result)
        if len(outputs) != 1:
            raise BenchFileError(self.file, where, f"a tuple of {len(outputs)} outputs ({named})",
                                 describe(result))
        return [result]

    def output_positions(self, parameters):
        """The positions of OUTPUTS among the kernel's runtime `parameters` (names, in call order);
        None when the file names no outputs. Raises BenchFileError for a name or position the
        kernel does not have."""
        if self.outputs is None:
            return None
        positions = []
        for index, output in enumerate(self.outputs):
            where = f"{self.wheres['outputs']}[{index}]" if len(self.outputs) > 1 else self.wheres["outputs"]
            if isinstance(output, str):
                if output not in parameters:
                    raise BenchFileError(self.file, where, f"an argument of kernel {self.name}: "
                                         f"{', '.join(parameters)}", describe(output))
                positions.append(list(parameters).index(output))
            elif output >= len(parameters):
                raise BenchFileError(self.file, where, f"a position below {len(parameters)} (kernel {self.name} "
                                     f"takes {', '.join(parameters)})", describe(output))
            else:
                positions.append(output)
        return tuple(positions)

    def shape_of_call(self, arguments):
        """The shape of one launch, for the formulas: call_shape(arguments) as a Shape, where
        `arguments` maps the launch's scalar arguments to their values and its pointer arguments to
        their dtypes (spec names such as "bf16", None for a None pointer), as `taot profile` records
        a launch. None when the file gives no call_shape. Raises BenchFileError naming call_shape and
        the arguments when it fails or returns something other than a shape with the file's
        dimensions."""
        if self.call_shape is None:
            return None
        where = f"{self.wheres['call_shape']}({', '.join(f'{name}={value}' for name, value in arguments.items())})"
        try:
            result = self.call_shape(dict(arguments))
        except Exception as error:  # the user's function failed: say where
            raise BenchFileError(self.file, where, "a call that returns the launch's shape",
                                 exception_summary(error, self.path)) from None
        if not isinstance(result, dict):
            raise BenchFileError(self.file, where, f"a dict with the dimensions {', '.join(self.dims)}",
                                 describe(result))
        return _one_shape(_File({}, self.path, self.file), result, where, self.dims)

    def flops_of(self, shape):
        """The FLOP count of a call of `shape`, None when the file gives no flops formula."""
        return self._formula("flops", shape)

    def bytes_of(self, shape):
        """The bytes a call of `shape` reads and writes, None when the file gives no bytes formula."""
        return self._formula("bytes", shape)

    def flops_dtype_of(self, shape):
        """The PEAK_KINDS name the FLOP rate of `shape` is compared with, None when not given."""
        return self._formula("flops_dtype", shape)

    def tolerance_for(self, dtype):
        """The Tolerance for an output of `dtype`: a spec dtype name ("bf16"), a torch dtype or its
        name ("torch.bfloat16"). The file's entry for that dtype, else its "default" entry, else
        its one tolerance, else DEFAULT_TOLERANCES (exact for dtypes missing there)."""
        name = _SPEC_DTYPE_OF_TORCH.get(str(dtype).removeprefix("torch."), str(dtype))
        if isinstance(self.tolerance, Tolerance):
            return self.tolerance
        if isinstance(self.tolerance, dict):
            found = self.tolerance.get(name, self.tolerance.get("default"))
            if found is not None:
                return found
        return Tolerance(*DEFAULT_TOLERANCES.get(name, (0.0, 0.0)))

    def _formula(self, field, shape):
        shape = _shape(shape)
        key = (field, shape)
        if key not in self._values:
            self._values[key] = self._evaluate(field, shape)
        return self._values[key]

    def _evaluate(self, field, shape):
        formula = self.formulas.get(field)
        if formula is None:
            return None
        where = self.wheres[field]
        if not callable(formula):  # FLOPS_DTYPE = "bf16"
            return _checked_flops_dtype(formula, self.file, where)
        where = f"{where}({shape.label})"
        try:
            value = formula(dict(shape))
        except Exception as error:
            raise BenchFileError(self.file, where, "a call that returns a value",
                                 exception_summary(error, self.path)) from None
        if field == "flops_dtype":
            return _checked_flops_dtype(value, self.file, where)
        if not _is_number(value) or not math.isfinite(value) or value < 0:
            raise BenchFileError(self.file, where, "a finite number, 0 or more", describe(value))
        return value


@dataclasses.dataclass(frozen=True)
class BenchFile:
    """A loaded bench file: its kernels' entries, in the file's order."""
    path: Path
    label: str
    library: str
    kernels: tuple

    @property
    def names(self):
        return tuple(kernel.name for kernel in self.kernels)

    def kernel(self, name):
        """The entry of kernel `name`; BenchFileError listing the file's kernels when it has none."""
        for kernel in self.kernels:
            if kernel.name == name:
                return kernel
        raise BenchFileError(self.label, "KERNEL" if "KERNEL" in self.kernels[0].wheres else "KERNELS",
                             f'an entry for kernel "{name}"', f"entries for {', '.join(self.names)} only")

    def axes(self):
        """{kernel name: the dimension its sweep is plotted along}, for bench_report."""
        return {kernel.name: kernel.x_axis for kernel in self.kernels}

    def metrics(self):
        """{kernel name: what its plot shows (a METRICS name)}, for bench_report."""
        return {kernel.name: kernel.metric for kernel in self.kernels}

    def check_library(self, library, kernel_names):
        """Check the file against the library benchmarked: LIBRARY (when given) is its name and every
        kernel the file describes is one of `kernel_names`."""
        if self.library is not None and self.library != library:
            raise BenchFileError(self.label, "LIBRARY", f'the library benchmarked, "{library}"',
                                 describe(self.library))
        for kernel in self.kernels:
            if kernel.name not in kernel_names:
                where = "KERNEL" if kernel.wheres.get("KERNEL") else f"KERNELS.{kernel.name}"
                raise BenchFileError(self.label, where, f"a kernel of library {library}: {', '.join(kernel_names)}",
                                     describe(kernel.name))


def load_bench_file(path, label=None):
    """Run the bench file at `path` and validate what it defines. `label` names the file in messages
    (default: the path as given). Raises BenchFileError naming the file, the name in it and what was
    expected."""
    path = Path(path)
    label = label or str(path)
    if not path.is_file():
        raise BenchFileError(label, "", "an existing bench file (a .py file)",
                             "a folder" if path.is_dir() else "no such file")
    if path.suffix != ".py":
        raise BenchFileError(label, "", "a bench file ending in .py", f'a file ending in "{path.suffix}"')
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    try:
        module = import_file(path, module_name_for("bench", path, digest))
    except PythonFileError as error:
        raise BenchFileError(label, "", "a Python bench file that runs cleanly", str(error)) from None
    return _validate(vars(module), path.resolve(), label)


# ---- validation ----

class _File:
    """The module's names, and what messages need to name things in it."""

    def __init__(self, names, path, label):
        self.names = names
        self.path = path
        self.label = label

    def error(self, where, expected, got):
        return BenchFileError(self.label, where, expected, got)

    def missing(self, name, expected):
        """A top-level `name` the file lacks: 'nothing (the file defines no SHAPES; did you mean SHAPE?)'."""
        close = difflib.get_close_matches(name, [key for key in self.names if not key.startswith("__")], n=1,
                                          cutoff=0.75)
        hint = f"; did you mean {close[0]}?" if close else ""
        return self.error(name, expected, f"nothing (the file defines no {name}{hint})")

    def missing_field(self, prefix, field, expected):
        """A field kernel entry `prefix` ("KERNELS.<name>", or "" in a file for one kernel) lacks."""
        module_name = _FIELDS[field].module_names[0]
        if not prefix:
            return self.missing(module_name, expected)
        return self.error(f"{prefix}.{field}", expected,
                          f"nothing ({prefix} has no {field} and the file no {module_name})")


@dataclasses.dataclass
class _Given:
    value: object
    where: str


def _validate(names, path, label):
    file = _File(names, path, label)
    library = names.get("LIBRARY")
    if library is not None and not _is_identifier(library):
        raise file.error("LIBRARY", "the library's name (an identifier)", describe(library))
    module_fields = _module_fields(file)
    if "KERNEL" in names and "KERNELS" in names:
        raise file.error("KERNELS", "KERNEL (a file for one kernel) or KERNELS (several), not both",
                         "both KERNEL and KERNELS")
    if "KERNELS" in names:
        entries = _kernels_entries(file, module_fields)
    elif "KERNEL" in names:
        name = names["KERNEL"]
        if not _is_identifier(name):
            raise file.error("KERNEL", TOP_LEVEL["KERNEL"], describe(name))
        entries = [(name, module_fields, "")]
    else:
        raise file.missing("KERNEL", 'KERNEL = "name" (one kernel) or KERNELS = {name: {...}} (several)')
    kernels = tuple(_kernel(file, name, given, prefix) for name, given, prefix in entries)
    return BenchFile(path, label, library, kernels)


def _module_fields(file):
    """{field name: _Given} for the fields the file defines at its top."""
    given = {}
    for field in FIELDS:
        present = [name for name in field.module_names if name in file.names]
        if len(present) > 1:
            raise file.error(present[1], f"{' or '.join(field.module_names)}, not both", "both")
        if present:
            given[field.name] = _Given(file.names[present[0]], present[0])
    return given


def _kernels_entries(file, module_fields):
    kernels = file.names["KERNELS"]
    if not isinstance(kernels, dict) or not kernels:
        raise file.error("KERNELS", TOP_LEVEL["KERNELS"], "an empty dict" if kernels == {} else describe(kernels))
    entries = []
    for name, entry in kernels.items():
        if not _is_identifier(name):
            raise file.error("KERNELS", "kernel names that are identifiers", describe(name))
        prefix = f"KERNELS.{name}"
        if not isinstance(entry, dict):
            raise file.error(prefix, f"a dict of kernel {name}'s fields ({', '.join(FIELD_NAMES)})", describe(entry))
        given = dict(module_fields)
        for key, value in entry.items():
            if key not in _FIELDS:
                close = difflib.get_close_matches(str(key), FIELD_NAMES, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise file.error(f"{prefix}.{key}", f"one of the keys {', '.join(FIELD_NAMES)}",
                                 f"an unknown key{hint}")
            given[key] = _Given(value, f"{prefix}.{key}")
        entries.append((name, given, prefix))
    return entries


def _kernel(file, name, given, prefix):
    """A KernelBench from the fields `given` for kernel `name` (prefix: "KERNELS.<name>" in a file
    for several kernels, "" in a file for one)."""

    def where(field):
        return given[field].where if field in given else (f"{prefix}.{field}" if prefix else
                                                           _FIELDS[field].module_names[0])

    for field in FIELDS:
        if field.required and field.name not in given:
            raise file.missing_field(prefix, field.name, field.expected)
    value = {field: item.value for field, item in given.items()}
    wheres = {field: where(field) for field in FIELD_NAMES}
    if not prefix:
        wheres["KERNEL"] = "KERNEL"

    dims = _dims(file, value.get("dims"), wheres["dims"]) if "dims" in value else None
    x_axis = value.get("x_axis")
    if x_axis is not None and not _is_identifier(x_axis):
        raise file.error(wheres["x_axis"], _FIELDS["x_axis"].expected, describe(x_axis))
    shapes, dims, shapes_where = _shapes(file, value["shapes"], wheres["shapes"], dims, x_axis, prefix)
    x_axis = _x_axis(file, x_axis, dims, shapes, shapes_where, prefix, wheres["x_axis"])
    tune_shapes = shapes
    if "tune_shapes" in value:
        tune_shapes, _, _ = _shapes(file, value["tune_shapes"], wheres["tune_shapes"], dims, x_axis, prefix)
    args_depend_on = ()
    if "args_depend_on" in value:
        args_depend_on = value["args_depend_on"]
        if isinstance(args_depend_on, str):
            args_depend_on = (args_depend_on,)
        if (not isinstance(args_depend_on, (list, tuple)) or not args_depend_on
                or not all(_is_identifier(name) for name in args_depend_on)):
            raise file.error(wheres["args_depend_on"], _FIELDS["args_depend_on"].expected, describe(value["args_depend_on"]))
        args_depend_on = tuple(args_depend_on)
        _check_function(file, value["make_args"], wheres["make_args"], "make_args(shape, device, config)", 3)
    else:
        _check_function(file, value["make_args"], wheres["make_args"], "make_args(shape, device)", 2)
    outputs = _outputs(file, value["outputs"], wheres["outputs"]) if "outputs" in value else None
    reference = value.get("reference")
    if reference is not None:
        _check_function(file, reference, wheres["reference"], "reference(*args, **kwargs)", None)
    baselines = _baselines(file, value.get("baselines", {}), wheres["baselines"])
    tolerance = _tolerance(file, value["tolerance"], wheres["tolerance"]) if "tolerance" in value else None
    formulas = {}
    for field in ("flops", "bytes"):
        if field in value:
            _check_function(file, value[field], wheres[field], f"{field}(shape)", 1)
            formulas[field] = value[field]
    if "flops_dtype" in value:
        if "flops" not in value:
            raise file.error(wheres["flops_dtype"], "a flops(shape) formula beside it (the FLOP rate it names a "
                             "peak for)", "no flops")
        if callable(value["flops_dtype"]):
            _check_function(file, value["flops_dtype"], wheres["flops_dtype"], "flops_dtype(shape)", 1)
        formulas["flops_dtype"] = value["flops_dtype"]
    if "call_shape" in value:
        _check_function(file, value["call_shape"], wheres["call_shape"], "call_shape(args)", 1)
    metric = _metric(file, value.get("metric"), wheres, formulas)
    kernel = KernelBench(name, file.label, file.path, dims, x_axis, metric, shapes, tune_shapes, value["make_args"],
                         outputs, args_depend_on, reference, baselines, tolerance, wheres, formulas,
                         call_shape=value.get("call_shape"))
    for shape in dict.fromkeys(shapes + tune_shapes):  # every formula on every shape, now
        for field in formulas:
            kernel._formula(field, shape)
    return kernel


def _metric(file, metric, wheres, formulas):
    if metric is None:
        return "tflops" if "flops" in formulas else "gbps" if "bytes" in formulas else "ms"
    if metric not in METRICS:
        raise file.error(wheres["metric"], f"one of {', '.join(METRICS)}", describe(metric))
    needs = {"tflops": "flops", "gbps": "bytes"}.get(metric)
    if needs is not None and needs not in formulas:
        raise file.error(wheres["metric"], f"a {needs}(shape) formula beside it (a {metric} plot needs one)",
                         f"no {needs}")
    return metric


def _dims(file, dims, where):
    if isinstance(dims, str):
        dims = [dims]
    if not isinstance(dims, (list, tuple)) or not dims:
        raise file.error(where, _FIELDS["dims"].expected, describe(dims))
    for index, name in enumerate(dims):
        if not _is_identifier(name):
            raise file.error(f"{where}[{index}]", "a dimension name that is an identifier", describe(name))
        if name in dims[:index]:
            raise file.error(f"{where}[{index}]", "no dimension named twice", f'"{name}" again')
    return tuple(dims)


def _shapes(file, shapes, where, dims, x_axis, prefix):
    """(tuple of Shape, dims, where the list is: "SHAPES" or "shapes()") from SHAPES or shapes() (or
    their tune_ forms)."""
    if callable(shapes):
        _check_function(file, shapes, where, f"{where}()", 0)
        call_where = f"{where}()"
        try:
            shapes = list(shapes())
        except Exception as error:
            raise file.error(call_where, "a call that returns the list of shapes",
                             exception_summary(error, file.path)) from None
        where = call_where
    elif isinstance(shapes, (list, tuple)):
        shapes = list(shapes)
    else:
        raise file.error(where, _FIELDS["shapes"].expected, describe(shapes))
    if not shapes:
        raise file.error(where, "a non-empty list of shapes", "an empty list")
    if dims is None:
        if isinstance(shapes[0], dict):
            dims = _dims(file, list(shapes[0]), f"{where}[0]")
        elif not isinstance(shapes[0], (list, tuple)) and x_axis is not None:
            dims = (x_axis,)
        else:
            raise file.missing_field(prefix, "dims", "the names of a shape's dimensions, needed when shapes are "
                                     'not dicts (DIMS = ("M", "N", "K"); X_AXIS alone names the dimension of '
                                     "single values)")
    result = []
    for index, entry in enumerate(shapes):
        shape = _one_shape(file, entry, f"{where}[{index}]", dims)
        if shape in result:
            raise file.error(f"{where}[{index}]", "no shape twice", f"({shape.label}) again")
        result.append(shape)
    return tuple(result), dims, where


def _one_shape(file, entry, where, dims):
    names = ", ".join(dims)
    if isinstance(entry, dict):
        if set(entry) != set(dims) or len(entry) != len(dims):
            given = ", ".join(str(key) for key in entry) or "none"
            raise file.error(where, f"a shape with the dimensions {names}", f"a dict with {given}")
        values = [entry[name] for name in dims]
    elif isinstance(entry, (list, tuple)):
        if len(entry) != len(dims):
            raise file.error(where, f"{len(dims)} values ({names})", f"{len(entry)} values, {describe(entry)}")
        values = list(entry)
    elif len(dims) == 1:
        values = [entry]
    else:
        raise file.error(where, f"a dict or a tuple of {len(dims)} values ({names})", describe(entry))
    for name, item in zip(dims, values):
        if not isinstance(item, (int, float, str)) or (isinstance(item, float) and not math.isfinite(item)):
            raise file.error(f"{where}.{name}", "an int, a finite float, a string or a bool", describe(item))
    return Shape(zip(dims, values))


def _x_axis(file, x_axis, dims, shapes, shapes_where, prefix, x_where):
    if x_axis is None:
        varying = [name for name in dims if len({shape[name] for shape in shapes}) > 1]
        if len(dims) == 1 or not varying:
            x_axis = dims[0]
        elif len(varying) == 1:
            x_axis = varying[0]
        else:
            raise file.missing_field(prefix, "x_axis", "the dimension the sweep is plotted along "
                                     f"(several vary: {', '.join(varying)})")
    elif x_axis not in dims:
        raise file.error(x_where, f"one of the dimensions {', '.join(dims)}", describe(x_axis))
    for index, shape in enumerate(shapes):
        if not _is_number(shape[x_axis]):
            raise file.error(f"{shapes_where}[{index}].{x_axis}", f"a number (the sweep's axis is {x_axis})",
                             describe(shape[x_axis]))
    return x_axis


def _outputs(file, outputs, where):
    if isinstance(outputs, (str, int)) and not isinstance(outputs, bool):
        outputs = [outputs]
    if not isinstance(outputs, (list, tuple)) or not outputs:
        raise file.error(where, "a non-empty list of argument names or positions", describe(outputs))
    for index, output in enumerate(outputs):
        valid = _is_identifier(output) or (_is_int(output) and output >= 0)
        if not valid:
            raise file.error(f"{where}[{index}]", "an argument's name or position (an int, 0 or more)",
                             describe(output))
        if output in outputs[:index]:
            raise file.error(f"{where}[{index}]", "no output named twice", f"{describe(output)} again")
    return tuple(outputs)


def _baselines(file, baselines, where):
    if not isinstance(baselines, dict):
        raise file.error(where, _FIELDS["baselines"].expected, describe(baselines))
    for name, function in baselines.items():
        if not isinstance(name, str) or not BASELINE_NAME.fullmatch(name):
            raise file.error(where, "baseline names of letters, digits and _ . + - (such as \"torch\")", describe(name))
        if name == AUTOMATIC:
            raise file.error(f"{where}.{name}", f'a baseline name other than "{AUTOMATIC}" (the library\'s automatic '
                             "choice in results)", f'"{AUTOMATIC}"')
        _check_function(file, function, f"{where}.{name}", "a function taking the call's arguments", None)
    return dict(baselines)


def _tolerance(file, tolerance, where):
    """A Tolerance, or {dtype or "default": Tolerance}."""
    if not isinstance(tolerance, dict) or not tolerance:
        raise file.error(where, _FIELDS["tolerance"].expected, describe(tolerance))
    if set(tolerance) <= set(_TOLERANCE_KEYS):
        return _one_tolerance(file, tolerance, where)
    per_dtype = {}
    for name, entry in tolerance.items():
        if name not in DTYPES and name != "default":
            raise file.error(f"{where}.{name}", f'atol and rtol, or dtype names ({", ".join(DTYPES)}) and "default"',
                             "an unknown key")
        if not isinstance(entry, dict) or not entry or not set(entry) <= set(_TOLERANCE_KEYS):
            raise file.error(f"{where}.{name}", '{"atol": A, "rtol": R} (either may be left out: 0)', describe(entry))
        per_dtype[name] = _one_tolerance(file, entry, f"{where}.{name}")
    return per_dtype


def _one_tolerance(file, entry, where):
    for key in _TOLERANCE_KEYS:
        item = entry.get(key, 0)
        if not _is_number(item) or not math.isfinite(item) or item < 0:
            raise file.error(f"{where}.{key}", "a finite number, 0 or more", describe(item))
    return Tolerance(float(entry.get("atol", 0)), float(entry.get("rtol", 0)))


def _checked_flops_dtype(value, label, where):
    if not isinstance(value, str) or peak_kind(value) is None:
        raise BenchFileError(label, where, f"a precision: one of {', '.join(PEAK_KINDS)} (or fp8e4nv, fp8e5, i8)",
                             describe(value))
    return peak_kind(value)


def _check_function(file, function, where, form, positional):
    """Check `function` is callable and, when `positional` is a count, can be called with that many
    positional arguments; `form` is how the message writes the call."""
    if not callable(function):
        raise file.error(where, f"a function {form}" if "(" in form else form, describe(function))
    if positional is None:
        return
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: trust it
        return
    try:
        signature.bind(*range(positional))
    except TypeError:
        raise file.error(where, f"a function {form}" if "(" in form else form,
                         f"a function of {_parameters(signature)}") from None


def _parameters(signature):
    names = [str(parameter) for parameter in signature.parameters.values()]
    return f"({', '.join(names)})" if names else "no parameters"


def _shape(shape):
    return shape if isinstance(shape, Shape) else Shape(shape.items())


def _is_identifier(value):
    return isinstance(value, str) and IDENTIFIER.fullmatch(value) is not None and not keyword.iskeyword(value)


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)
