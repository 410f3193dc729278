# Validate a raw spec dict (from TOML or taot_spec()) into a LibrarySpec with its variants.
import dataclasses
import inspect
import keyword
import re
from pathlib import Path

from . import kernel_source, variants
from .checks import Node, describe, is_int, is_list, one_of
from .dtypes import DTYPES, canonical_scalar, scalar_kind, spec_dtype_name
from .expressions import ExpressionProblem, parse_grid, parse_where
from .model import (ALIGN_ANY, BOOL, CONSTEXPR, DTYPE, FLOAT, HINT_NONE, INT, POINTER, TENSORDESC, ArgSpec,
                    ConfigField, KernelSpec, LibrarySpec)
from .spec_file import read_spec_file
from .targets import accepted_target_names, parse_target

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TENSORDESC_TYPE = re.compile(r"tensordesc\s*<\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]]*)\]\s*>")

ROOT_KEYS = {"library": "a [library] table", "kernel": "one or more [[kernel]] tables"}
LIBRARY_KEYS = {"name": "the library name (an identifier)", "targets": 'a list of targets such as "sm_90"'}
KERNEL_KEYS = {
    "name": "the kernel's C++ name", "source": "the kernel's Python file, relative to the spec",
    "function": "the @triton.jit function's name", "grid": "1 to 3 grid expressions",
    "where": "a list of filter expressions", "types": "a table of type variables",
    "args": "a table describing every parameter of the function", "options": "a table of Triton options",
    "default": "a table giving the default config",
}
ARG_KEYS = {"type": 'a type such as "*fp32", "*T", "i32" or "tensordesc<T[BLOCK_M, BLOCK_K]>"', "align": '16 and/or "any"',
            "hint": '1, 16 and/or "none"', "constexpr": "a list of compile-time values",
            "dtype": "a list of dtype names or a type variable",
            "output": "true when the kernel writes through this pointer or descriptor",
            "rank": "the number of dimensions arrays given from Python must have (pointers)"}
ALIGN_VALUES = (16, ALIGN_ANY)
HINT_VALUES = (1, 16, HINT_NONE)
MAX_RANK = 8
MAX_TENSORDESC_RANK = 5  # TMA tensor maps have 1 to 5 dimensions

# Triton options a spec may vary, with their config kind; each is a field of Triton's CUDAOptions.
OPTION_KINDS = {"num_warps": INT, "num_stages": INT, "num_ctas": INT, "maxnreg": INT,
                "enable_fp_fusion": BOOL, "enable_reflect_ftz": BOOL, "launch_cooperative_grid": BOOL,
                "launch_pdl": BOOL, "debug": BOOL, "sanitize_overflow": BOOL}


def load_spec(path, label=None, target_override=None):
    """Read, validate and enumerate the spec at `path`; raises SpecError naming file, key, expectation."""
    label = label or str(path)
    raw = read_spec_file(path, label)
    return validate_spec(raw, Path(path).resolve(), label, target_override)


def validate_spec(raw, path, label, target_override=None):
    root = Node(label, "", raw).table("a table with [library] and [[kernel]]", ROOT_KEYS, required=ROOT_KEYS)
    library = root.key("library").table("a [library] table", LIBRARY_KEYS, required=("name",) + (
        () if target_override else ("targets",)))
    name = _identifier(library.key("name"), "a library name that is an identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if target_override:
        targets = _targets(Node("command line", "--target", list(target_override)))
    else:
        targets = _targets(library.key("targets"))
    kernel_nodes = _kernel_list(root.key("kernel"))
    kernels = []
    for node in kernel_nodes:
        kernel = _kernel(node, path.parent)
        _check_unique_kernel(kernel, kernels, node)
        kernels.append(kernel)
    spec = LibrarySpec(name, tuple(targets), tuple(kernels), path, label)
    enumerated = {kernel.name: variants.enumerate_variants(kernel, label) for kernel in kernels}
    variants.check_unique_ids(enumerated, label)
    return dataclasses.replace(spec, variants=enumerated)


def _identifier(node, expected):
    value = node.value
    if not isinstance(value, str) or not IDENTIFIER.fullmatch(value) or keyword.iskeyword(value):
        raise node.error(expected) if node.present() else node.missing(expected)
    return value


def _targets(node):
    accepted = ", ".join(accepted_target_names())
    targets = []
    for item in node.value_list("targets"):
        target = parse_target(item.value) if isinstance(item.value, str) else None
        if target is None:
            raise item.error(f"a target, one of {accepted}")
        for earlier in targets:
            if earlier.capability == target.capability:
                raise item.error("targets of distinct compute capabilities",
                                 f'"{target.name}", which builds the same code as "{earlier.name}"')
        targets.append(target)
    return targets


def _kernel_list(node):
    if isinstance(node.value, dict):  # a Python spec may give a single kernel table
        return [node]
    if not is_list(node.value) or not node.value:
        raise node.error("one or more [[kernel]] tables", "an empty list" if is_list(node.value) else None)
    return node.items()


def _check_unique_kernel(kernel, kernels, node):
    for earlier in kernels:
        if earlier.name == kernel.name:
            raise node.key("name").error("a kernel name not used by another kernel",
                                         f'"{kernel.name}", also the name of {earlier.key}')


def _kernel(node, spec_folder):
    node.table("a [[kernel]] table", KERNEL_KEYS, required=("source", "grid"))
    if not node.key("name").present() and not node.key("function").present():
        raise node.key("name").missing("a kernel name (or a function name)")
    name_node = node.key("name") if node.key("name").present() else node.key("function")
    name = _identifier(name_node, "a kernel name that is an identifier")
    function_node = node.key("function") if node.key("function").present() else name_node
    function = _identifier(function_node, "a function name that is an identifier")
    source = _source_path(node.key("source"), spec_folder)
    jit_function = _jit_function(node, source, function_node)
    typevars = _typevars(node.key("types"))
    args = _args(node.key("args"), jit_function, typevars)
    _check_tensordesc_blocks(node.key("args"), args)
    _check_typevars_used(node.key("types"), typevars, args)
    options = _options(node.key("options"), args, typevars)
    fields = _config_fields(node.key("default"), args, options)
    grid_text, grid = _grid(node.key("grid"), args, fields)
    where = _where(node.key("where"), args, fields, typevars)
    return KernelSpec(name=name, function=function, source=source, cache_key=jit_function.cache_key,
                      grid_text=grid_text, grid=grid, where=where, typevars=typevars, args=tuple(args),
                      options=options, config=fields, key=node.path)


def _source_path(node, spec_folder):
    text = node.string("the kernel's Python file, relative to the spec file")
    source = (spec_folder / text).resolve()
    if not source.is_file():
        raise node.error("an existing Python file (paths are relative to the spec file)",
                         f'"{text}", which does not exist ({source})')
    return source


def _jit_function(kernel_node, source, function_node):
    try:
        module = kernel_source.import_source(source)
    except kernel_source.SourceProblem as problem:
        raise kernel_node.key("source").error(problem.expected, problem.got) from None
    try:
        return kernel_source.find_jit_function(module, function_node.value, source.name)
    except kernel_source.SourceProblem as problem:
        raise function_node.error(problem.expected, problem.got) from None


# ---- type variables ----

def _typevars(node):
    if not node.present():
        return {}
    if not isinstance(node.value, dict):
        raise node.error('a table of type variables such as T = ["fp32", "bf16"]')
    typevars = {}
    for name in node.value:
        entry = node.key(name)
        if not IDENTIFIER.fullmatch(name) or name in DTYPES or name in ("bool",):
            raise entry.error("a type variable name that is an identifier and not a dtype name", f'the name "{name}"')
        typevars[name] = tuple(_dtype_name(item) for item in entry.value_list("dtype names"))
    return typevars


def _dtype_name(node):
    if node.value not in DTYPES:
        raise node.error("a dtype, one of " + ", ".join(DTYPES))
    return node.value


def _check_typevars_used(node, typevars, args):
    used = {arg.typevar for arg in args}
    for name in typevars:
        if name not in used:
            raise node.key(name).error("a type variable that some argument uses (as \"*T\", \"T\" or dtype = \"T\")",
                                       "one that no argument uses")


# ---- arguments ----

def _args(node, jit_function, typevars):
    if node.present() and not isinstance(node.value, dict):
        raise node.error("a table describing the function's parameters")
    described = node.value or {}
    names = list(jit_function.arg_names)
    for name in described:
        if name not in names:
            raise node.key(name).error(f"a parameter of {jit_function.__name__}: " + ", ".join(names),
                                       "an unknown argument")
    args = []
    for index, param in enumerate(jit_function.params):
        if param.name in described:
            args.append(_arg(node.key(param.name), index, param, typevars))
        else:
            args.append(_undescribed_arg(node.key(param.name), index, param, jit_function.__name__))
    return args


def _undescribed_arg(node, index, param, function):
    if not (param.is_constexpr and param.default is not inspect.Parameter.empty):
        raise node.missing(f"a description of parameter {param.name} of {function} "
                           "(every parameter without a constexpr default needs one)")
    value = getattr(param.default, "value", param.default)
    dtype = _dtype_from_triton(value)
    if dtype is not None:
        return ArgSpec(param.name, index, DTYPE, (dtype,))
    if _constexpr_kind(value) is None:
        raise node.missing(f"a description of {param.name}: its default {value!r} is not an int, float, bool or "
                           "dtype, so taot cannot record it")
    return ArgSpec(param.name, index, CONSTEXPR, (value,))


def _dtype_from_triton(value):
    import triton.language as tl
    return spec_dtype_name(value) if isinstance(value, tl.dtype) else None


def _arg(node, index, param, typevars):
    if isinstance(node.value, str):  # shorthand: x_ptr = "*T"
        node = Node(node.file, node.path, {"type": node.value})
    node.table('a table with one of type, constexpr or dtype (or a type string such as "*fp32")', ARG_KEYS)
    given = [key for key in ("type", "constexpr", "dtype") if node.key(key).present()]
    if len(given) != 1:
        raise node.error("exactly one of the keys type, constexpr, dtype",
                         "none of them" if not given else "both " + " and ".join(given))
    if param.is_constexpr and given[0] == "type":
        raise node.key("type").error(
            f"constexpr = [...] or dtype = [...] ({param.name} is tl.constexpr in the function)")
    if given[0] == "constexpr":
        _no_extra_keys(node, ("align", "hint", "output", "rank"), "constexpr arguments")
        return ArgSpec(param.name, index, CONSTEXPR, _constexpr_values(node.key("constexpr")))
    if given[0] == "dtype":
        _no_extra_keys(node, ("align", "hint", "output", "rank"), "dtype arguments")
        typevar, choices = _dtype_choices(node.key("dtype"), typevars)
        return ArgSpec(param.name, index, DTYPE, choices, typevar=typevar)
    return _typed_arg(node, index, param, typevars)


def _no_extra_keys(node, keys, what):
    for key in keys:
        if node.key(key).present():
            raise node.key(key).error(f"no {key} for {what}", "a value")


def _constexpr_values(node):
    values = []
    for item in node.value_list("compile-time values"):
        if _constexpr_kind(item.value) is None:
            raise item.error("an int, float or bool")
        values.append(item.value)
    kinds = {_constexpr_kind(value) for value in values}
    if len(kinds) > 1:
        raise node.error("values of one type (all ints, all floats or all bools)", describe(node.value))
    return tuple(values)


def _constexpr_kind(value):
    if isinstance(value, bool):
        return BOOL
    if is_int(value):
        return INT
    if isinstance(value, float):
        return FLOAT
    return None


def _dtype_choices(node, typevars):
    if isinstance(node.value, str) and node.value in typevars:
        return node.value, typevars[node.value]
    choices = []
    for item in node.value_list("dtype names"):
        if item.value not in DTYPES:
            raise item.error("a dtype or a type variable, one of " + ", ".join(DTYPES + tuple(typevars)))
        choices.append(item.value)
    return None, tuple(choices)


def _typed_arg(node, index, param, typevars):
    type_node = node.key("type")
    if isinstance(type_node.value, str) and type_node.value.lstrip().startswith("tensordesc"):
        return _tensordesc_arg(node, index, param, typevars)
    kind, typevar, choices = _parse_type(type_node, typevars)
    if kind != POINTER:
        _no_extra_keys(node, ("align",), f"{kind} arguments (align is for pointers)")
        _no_extra_keys(node, ("output",), f"{kind} arguments (output is for pointers)")
        _no_extra_keys(node, ("rank",), f"{kind} arguments (rank is for pointers)")
    if kind != INT:
        _no_extra_keys(node, ("hint",), f"{kind} arguments (hint is for ints)")
    aligns = _subset(node.key("align"), ALIGN_VALUES, ALIGN_ANY) if kind == POINTER else ()
    hints = _subset(node.key("hint"), HINT_VALUES, HINT_NONE) if kind == INT else ()
    output = node.key("output")
    if output.present() and not isinstance(output.value, bool):
        raise output.error("true or false")
    rank = node.key("rank")
    if rank.present() and (not is_int(rank.value) or not 1 <= rank.value <= MAX_RANK):
        raise rank.error(f"an int from 1 to {MAX_RANK}")
    return ArgSpec(param.name, index, kind, choices, typevar=typevar, aligns=aligns, hints=hints,
                   output=output.present() and output.value, rank=rank.value if rank.present() else None)


TENSORDESC_EXPECTED = ('a descriptor type "tensordesc<DTYPE[B0, B1, ...]>": a dtype or type variable, then 1 to '
                       f"{MAX_TENSORDESC_RANK} block dims, each an int or an int constexpr argument's name")


def _tensordesc_arg(node, index, param, typevars):
    """A host-side tensor descriptor: `type = "tensordesc<T[BLOCK_M, BLOCK_K]>"` (the element type and
    the block shape the kernel loads and stores; the tensor's shape and strides are call values)."""
    _no_extra_keys(node, ("align", "hint", "rank"),
                   "tensordesc arguments (the block gives the rank; TMA needs 16-byte alignment)")
    type_node = node.key("type")
    match = TENSORDESC_TYPE.fullmatch(type_node.value.strip())
    if match is None:
        raise type_node.error(TENSORDESC_EXPECTED)
    element, dims_text = match.groups()
    if element in typevars:
        typevar, choices = element, typevars[element]
    elif element in DTYPES and element != "i1":
        typevar, choices = None, (element,)
    else:
        names = [name for name in DTYPES if name != "i1"] + list(typevars)
        raise type_node.error(TENSORDESC_EXPECTED + "; the dtype one of " + ", ".join(names), describe(type_node.value))
    dims = [dim.strip() for dim in dims_text.split(",")]
    if not 1 <= len(dims) <= MAX_TENSORDESC_RANK or any(not dim for dim in dims):
        raise type_node.error(TENSORDESC_EXPECTED, describe(type_node.value))
    block = []
    for dim in dims:
        if dim.isdigit():
            value = int(dim)
            if value < 1 or value & (value - 1):
                raise type_node.error("block dims that are powers of two", f"{dim} in {describe(type_node.value)}")
            block.append(value)
        elif IDENTIFIER.fullmatch(dim):
            block.append(dim)
        else:
            raise type_node.error(TENSORDESC_EXPECTED, f"the block dim {describe(dim)}")
    output = node.key("output")
    if output.present() and not isinstance(output.value, bool):
        raise output.error("true or false")
    return ArgSpec(param.name, index, TENSORDESC, choices, typevar=typevar,
                   output=output.present() and output.value, block=tuple(block))


def _check_tensordesc_blocks(node, args):
    """Block dims named in descriptor types must be int constexpr arguments with power-of-two values."""
    constexprs = {arg.name: arg for arg in args if arg.kind == CONSTEXPR}
    for arg in args:
        for dim in arg.block:
            if isinstance(dim, int):
                continue
            type_node = node.key(arg.name).key("type") if isinstance((node.value or {}).get(arg.name), dict) \
                else node.key(arg.name)
            source = constexprs.get(dim)
            if source is None:
                raise type_node.error("block dims that name int constexpr arguments of the kernel: " +
                                      (", ".join(constexprs) or "it has none"), f'"{dim}"')
            bad = [value for value in source.choices if not is_int(value) or value < 1 or value & (value - 1)]
            if bad:
                raise type_node.error(f"block dims whose values are powers of two ({dim} gives the block dim)",
                                      f"{dim} = {describe(bad[0])}")


def _subset(node, allowed, default):
    if not node.present():
        return (default,)
    values = []
    for item in node.value_list(one_of(allowed)):
        if not any(type(item.value) is type(choice) and item.value == choice for choice in allowed):
            raise item.error(one_of(allowed))
        values.append(item.value)
    return tuple(values)


TYPE_EXPECTED = 'a pointer type ("*fp32", "*T") or a scalar type (i32, i64, fp32, fp64, i1, bool)'


def _parse_type(node, typevars):
    """(kind, typevar or None, choices) for `type = "*fp32" | "*T" | "i32" | "T" | [list of types]`."""
    if isinstance(node.value, str):
        return _parse_one_type(node, node.value, typevars)
    parsed = []
    for item in node.value_list("types"):
        if not isinstance(item.value, str):
            raise item.error(TYPE_EXPECTED)
        kind, typevar, choices = _parse_one_type(item, item.value, typevars)
        if typevar is not None:
            raise item.error("a dtype name (a type variable cannot be part of a list)", describe(item.value))
        if parsed and parsed[0][0] != kind:
            raise item.error(f"types of one kind, like the first ({parsed[0][0]})",
                             f"a {kind} type {describe(item.value)}")
        parsed.append((kind, choices[0]))
    return parsed[0][0], None, tuple(choice for _, choice in parsed)


def _parse_one_type(node, text, typevars):
    if text.startswith("*"):
        element = text[1:]
        if element in typevars:
            return POINTER, element, typevars[element]
        if element not in DTYPES:
            raise node.error(f"a pointer to a dtype or type variable, one of {', '.join(DTYPES + tuple(typevars))}")
        return POINTER, None, (element,)
    if text in typevars:
        kinds = {scalar_kind(value) for value in typevars[text]}
        if None in kinds or len(kinds) != 1:
            raise node.error("a type variable whose values are scalar types of one kind (i32/i64, fp32/fp64 or i1) "
                             f'or a pointer to it ("*{text}")', f"{describe(text)} = {describe(list(typevars[text]))}")
        return kinds.pop(), text, typevars[text]
    kind = scalar_kind(text)
    if kind is None:
        raise node.error(TYPE_EXPECTED)
    return kind, None, (canonical_scalar(text),)


# ---- options, config fields, default ----

def _options(node, args, typevars):
    if not node.present():
        return {}
    if not isinstance(node.value, dict):
        raise node.error("a table of Triton options such as num_warps = [4, 8]")
    known_triton = _triton_option_names()
    options = {}
    for name in node.value:
        entry = node.key(name)
        if name not in OPTION_KINDS:
            also = " (a Triton option that taot does not vary per variant)" if name in known_triton else ""
            raise entry.error("one of the options " + ", ".join(OPTION_KINDS), f'"{name}"{also}')
        if any(arg.name == name for arg in args) or name in typevars:
            raise entry.error("an option name not also used by an argument or type variable", f'"{name}"')
        options[name] = tuple(_option_value(item, name) for item in entry.value_list(f"{name} values"))
    return options


def _triton_option_names():
    from triton.backends.nvidia.compiler import CUDAOptions
    return set(CUDAOptions.__dataclass_fields__)


def _option_value(node, name):
    value = node.value
    if OPTION_KINDS[name] == BOOL:
        if not isinstance(value, bool):
            raise node.error("true or false")
        return value
    if not is_int(value) or value < 1:
        raise node.error("a positive int")
    if name == "num_warps" and value & (value - 1):
        raise node.error("a power of two")
    return value


def _config_fields(default_node, args, options):
    """ConfigField per constexpr/dtype argument (in argument order), then per option, with defaults."""
    candidates = [(arg.name, DTYPE if arg.kind == DTYPE else _constexpr_kind(arg.choices[0]), arg.choices, False)
                  for arg in args if arg.kind in (CONSTEXPR, DTYPE)]
    candidates += [(name, OPTION_KINDS[name], values, True) for name, values in options.items()]
    if default_node.present() and not isinstance(default_node.value, dict):
        raise default_node.error("a table giving the default config, such as BLOCK_SIZE = 1024")
    given = dict(default_node.value or {})
    names = [name for name, _, _, _ in candidates]
    for name in given:
        if name not in names:
            raise default_node.key(name).error("a config field: " + ", ".join(names), "an unknown field")
    return tuple(_config_field(default_node.key(name), name, kind, values, is_option, given)
                 for name, kind, values, is_option in candidates)


def _config_field(node, name, kind, values, is_option, given):
    if name not in given:
        if len(values) > 1:
            raise node.missing(f"the default value of {name}, one of {one_of(values)} (it has several values)")
        return ConfigField(name, kind, tuple(values), values[0], is_option)
    value = given[name]
    if not any(type(value) is type(choice) and value == choice for choice in values):
        raise node.error(f"one of the values of {name}: {one_of(values)}")
    return ConfigField(name, kind, tuple(values), value, is_option)


# ---- grid and where ----

def _grid(node, args, fields):
    expected = '1 to 3 grid entries (ints or expressions such as "cdiv(n, BLOCK)")'
    entries = node.value if is_list(node.value) else [node.value]
    if isinstance(node.value, dict) or not 1 <= len(entries) <= 3:
        raise node.error(expected)
    int_args = [arg.name for arg in args if arg.kind == INT]
    int_fields = [field.name for field in fields if field.kind == INT]
    texts, trees = [], []
    for index, value in enumerate(entries):
        item = node.item(index) if is_list(node.value) else node
        if not (is_int(value) or isinstance(value, str)):
            raise item.error("an int or an expression string")
        try:
            trees.append(parse_grid(value, int_args, int_fields))
        except ExpressionProblem as problem:
            raise item.error("an expression over ints, int arguments, int constexprs and options with "
                             "+ - * // %, cdiv, min, max", f"{describe(value)} ({problem})") from None
        texts.append(str(value))
    while len(texts) < 3:
        texts.append("1")
        trees.append(parse_grid(1, (), ()))
    return tuple(texts), tuple(trees)


def _where(node, args, fields, typevars):
    if not node.present():
        return ()
    value_names = [field.name for field in fields] + list(typevars)
    arg_names = [arg.name for arg in args if arg.is_runtime]
    filters = []
    for item in node.value_list("filter expressions"):
        if not isinstance(item.value, str):
            raise item.error("a filter expression string")
        try:
            filters.append(parse_where(item.value, value_names, arg_names))
        except ExpressionProblem as problem:
            raise item.error("a filter over constexprs, options, type variables and arguments "
                             "(x.dtype, x.align, x.type, x.hint)", f"{describe(item.value)} ({problem})") from None
    return tuple(filters)
