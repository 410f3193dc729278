# Validate a raw spec dict (from TOML or taot_spec()) into a LibrarySpec with its variants.
import difflib
import glob
import inspect
import json
import keyword
import re
from pathlib import Path

from . import decorators, device_facts, kernel_ref, resolve, variants
from .keypath import Node, describe, is_int, is_list, one_of
from .dtypes import DTYPES, canonical_scalar, scalar_kind, spec_dtype_name
from ..errors import Problem, SpecError
from .. import triton_api
from ..triton_api import compiler as triton_compiler, options as triton_options
from .expressions import ExpressionProblem, grid_from_python, parse_grid, parse_rule, parse_where, rule_as_filter, rule_literal_results
from .arg_kinds import ARG_KINDS, SPEC_KEY_OWNERS
from .model import ALIGN_ANY, BOOL, CONSTEXPR, DTYPE, FLOAT, HINT_NONE, INT, POINTER, POINTER_NONE, SCALAR, STRING, TENSORDESC, ArgSpec, AutotuneSpec, ConfigField, KernelSpec, LibrarySpec, OptionValues
from .cpp_names import RESERVED_WORDS, kernel_name_problem
from .file import read_spec_file
from .targets import KNOWN_CAPABILITIES, accepted_target_names, parse_target

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TENSORDESC_TYPE = re.compile(r"tensordesc\s*<\s*([A-Za-z_][A-Za-z0-9_]*)\s*\[([^\]]*)\]\s*>")

ROOT_KEYS = {"library": "a [library] table", "kernel": "one or more [[kernel]] tables"}
# Headers `#include <NAME.h>` finds on the include path of a library's users (C, POSIX and glibc,
# the CUDA toolkit, Python): a library of that name would write NAME.h, found in their place.
SYSTEM_HEADERS = frozenset('''
    aio alloca assert complex cpio ctype dirent dlfcn elf endian err errno error execinfo fcntl features fenv
    float fnmatch ftw getopt glob grp iconv inttypes iso646 langinfo libgen limits link locale malloc math
    monetary mqueue netdb nl_types paths poll pthread pty pwd regex sched search semaphore setjmp shadow signal
    spawn stdalign stdarg stdatomic stdbool stddef stdint stdio stdlib stdnoreturn string strings syslog tar
    termios tgmath threads time uchar ucontext unistd utime utmp values wchar wctype wordexp
    cuda cudaTypedefs cudaProfiler cuda_runtime cuda_runtime_api cuda_fp16 cuda_bf16 cuda_fp8 driver_types
    vector_types builtin_types host_defines nvrtc cublas cublasLt Python
'''.split())

LIBRARY_KEYS = {"name": "the library name (an identifier)", "targets": 'a list of targets such as "sm_90"',
                "device": "device facts per target, as kernel imports see them ([library.device.sm_90])"}
KERNEL_KEYS = {
    "name": "the kernel's C++ name", "source": "the kernel's Python file, relative to the spec",
    "function": "the @triton.jit function's name, or \"module:function\" of an installed module", "grid": "1 to 3 grid expressions (omitted: every launch gives the grid)",
    "where": "a list of filter expressions", "types": "a table of type variables",
    "args": "a table describing every parameter of the function", "options": "a table of Triton options",
    "default": "a table giving the default config", "targets": "the targets of this kernel (default: the library's)",
    "configs": "a list of configs, tables of constexpr and option values (as triton.Config)",
    "tuning_key": "the names whose values key tuned tables (default: @triton.autotune's key)",
    "heuristics": "a table of launch-time rules: FIELD = \"expression\" (as @triton.heuristics)",
    "launch_args": "a table of int arguments the grid uses that the function does not take",
    "requires": "rules every launched variant must satisfy, such as \"n_cols <= BLOCK_SIZE\"",
    "tuning": "tuned-table files to bake in (taot's or vLLM's JSON), relative to the spec; globs allowed",
    "autotune": "a table: at_first_call, reset_to_zero, restore_value (default: @triton.autotune's)",
}
AUTOTUNE_KEYS = {"at_first_call": "true to time the configs at each key's first launch (default: true for "
                                  "@triton.autotune's configs)",
                 "reset_to_zero": "pointer arguments whose memory timed runs restore (as @triton.autotune's)",
                 "restore_value": "pointer arguments whose memory timed runs restore (as @triton.autotune's)"}
ARG_KEYS = {"type": 'a type such as "*fp32", "*T", "i32" or "tensordesc<T[BLOCK_M, BLOCK_K]>"', "align": '16 and/or "any"',
            "hint": '1, 16 and/or "none"', "constexpr": "a list of compile-time values",
            "dtype": "a list of dtype names or a type variable",
            "output": "true when the kernel writes through this pointer or descriptor",
            "rank": "the number of dimensions arrays given from Python must have (pointers)",
            "none": "true to also compile variants where this argument is None (pointers, int and float scalars)"}
ALIGN_VALUES = (16, ALIGN_ANY)
HINT_VALUES = (1, 16, HINT_NONE)
MAX_RANK = 8
MAX_TENSORDESC_RANK = 5  # TMA tensor maps have 1 to 5 dimensions

# The options a spec may vary (triton_api/options.py) that the installed Triton has (3.5 has no
# enable_reflect_ftz), with their config kind.
OPTION_KINDS = {option.name: option.kind for option in triton_options.OPTIONS
                if option.name in triton_compiler.option_fields(option.vendor or "nvidia")}
# The installed Triton's values of the options a config entry may leave out (triton.Config's are the
# same); maxnreg has none (no limit).
OPTION_DEFAULTS = {option.name: triton_compiler.option_default(option.name, option.vendor or "nvidia")
                   for option in triton_options.OPTIONS if option.name in OPTION_KINDS
                   and triton_compiler.option_default(option.name, option.vendor or "nvidia") is not None}
# Names a `where` filter may use besides the kernel's own: the target being compiled for.
TARGET_NAMES = ("target", "arch", "vendor")
DEFAULT_MAX_VARIANTS = 10000


def load_spec(path, label=None, target_override=None, max_variants=DEFAULT_MAX_VARIANTS, debug=False,
              progress=None, keep_variants=True):
    """Read, validate and enumerate the spec at `path`; raises SpecError naming file, key, expectation
    (variants.TooManyVariants when the spec makes more than `max_variants`). `debug`: every kernel
    as if its spec said `debug = true` (`taot build --debug`). `progress`, `keep_variants`: as
    enumerate_variants takes them (`keep`; kept variants' ids are also checked unique across kernels)."""
    label = label or str(path)
    raw = read_spec_file(path, label)
    if debug:
        raw = force_debug(raw)
    return validate_spec(raw, Path(path).resolve(), label, target_override, max_variants, progress, keep_variants)


def force_debug(raw):
    """The raw spec with the option `debug` true in every kernel: under [kernel.options] (replacing
    any values given there, per target or not) and in every config entry that sets it. Parts of the
    wrong shape are left for validation to report."""
    kernels = raw.get("kernel") if isinstance(raw, dict) else None
    if not isinstance(kernels, list):
        return raw
    forced = []
    for kernel in kernels:
        if isinstance(kernel, dict):
            kernel = dict(kernel)
            options = kernel.get("options", {})
            if isinstance(options, dict):
                kernel["options"] = dict(options, debug=True)
            configs = kernel.get("configs")
            if isinstance(configs, list):
                kernel["configs"] = [dict(entry, debug=True) if isinstance(entry, dict) and "debug" in entry else entry
                                     for entry in configs]
        forced.append(kernel)
    return dict(raw, kernel=forced)


def validate_spec(raw, path, label, target_override=None, max_variants=DEFAULT_MAX_VARIANTS, progress=None,
                  keep_variants=True):
    root = Node(label, "", raw).table("a table with [library] and [[kernel]]", ROOT_KEYS, required=ROOT_KEYS)
    library = root.key("library").table("a [library] table", LIBRARY_KEYS, required=("name",) + (
        () if target_override else ("targets",)))
    name = _identifier(library.key("name"), "a library name that is an identifier ([A-Za-z_][A-Za-z0-9_]*)")
    if name in RESERVED_WORDS or name in ("std", "taot") or name.startswith(("taot_", "_")):
        raise library.key("name").error("a library name the generated C and C++ code can use (not a C or C++ "
                                        "keyword, std, taot, taot_* or a name starting with _)", f'"{name}"')
    if name in SYSTEM_HEADERS:
        raise library.key("name").error(f"a library name whose header is not a system header's: {name}.h would hide "
                                        f"<{name}.h> from every file compiled with the library's include folder "
                                        f"(try {name}_kernels)", f'"{name}"')
    if target_override:
        targets = _targets(Node("command line", "--target", list(target_override)))
    else:
        targets = _targets(library.key("targets"))
    kernel_nodes = _kernel_list(root.key("kernel"))
    device = device_facts.Device(device_facts.read_overrides(library.key("device")))
    kernels = []
    for node in kernel_nodes:
        kernel = _kernel(node, path.parent, targets, bool(target_override), device)
        _check_unique_kernel(kernel, kernels, node)
        kernels.append(kernel)
    enumerated, summaries = {}, {}
    for index, kernel in enumerate(kernels):
        budget = max_variants - sum(len(found) for found in enumerated.values())
        result = variants.enumerate_variants(kernel, label, budget, max_variants, progress, keep_variants)
        kernels[index] = result.kernel
        enumerated[kernel.name] = result.variants
        summaries[kernel.name] = result.summary
    if keep_variants or _names_may_meet(kernels):
        variants.check_unique_ids(enumerated, label)
    used = {target.name for kernel in kernels for target in kernel.targets}
    return LibrarySpec(name, tuple(target for target in targets if target.name in used), tuple(kernels), path,
                       label, variants=enumerated, summaries=summaries, device=device.used())


def _names_may_meet(kernels):
    """Whether two kernels' variant ids could be equal: one kernel's name followed by "_" begins another's
    (ids are the kernel's name, "_", then tokens)."""
    names = [kernel.name for kernel in kernels]
    return any(other != name and other.startswith(name + "_") for name in names for other in names)


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
        if target.vendor == "amd":
            if not triton_compiler.has_amd_backend():
                raise item.error(f"a target this Triton {triton_api.VERSION} can build (its wheel has no AMD "
                                 "backend)", f'"{target.name}"')
        elif target.capability not in triton_compiler.buildable_capabilities((target.capability,)):
            buildable = triton_compiler.buildable_capabilities(KNOWN_CAPABILITIES)
            raise item.error(f"a target Triton {triton_api.VERSION} can build with "
                             f"{triton_compiler.ptxas_description(target.capability)}: "
                             + (", ".join(f"sm_{capability}" for capability in buildable) or "none"),
                             f'"{target.name}"')
        for earlier in targets:
            if earlier.arch == target.arch:
                raise item.error("targets of distinct compute capabilities" if target.vendor == "nvidia" else
                                 "distinct targets",
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


def _kernel(node, spec_folder, library_targets, targets_overridden, device):
    node.table("a [[kernel]] table", KERNEL_KEYS)
    if not node.key("name").present() and not node.key("function").present():
        raise node.key("name").missing("a kernel name (or a function name)")
    targets = library_targets if targets_overridden or not node.key("targets").present() \
        else _targets(node.key("targets"))
    found = kernel_ref.locate(node, spec_folder, targets, device)  # imported once per target's device
    name_node = node.key("name") if node.key("name").present() else node.key("function")
    name = _identifier(node.key("name"), "a kernel name that is an identifier") if node.key("name").present() \
        else found.function
    if kernel_name_problem(name):
        raise name_node.error("a kernel name the generated C and C++ code can use", kernel_name_problem(name))
    function_node = node.key("function") if node.key("function").present() else name_node
    function, source, decorated = found.function, found.path, found.decorated
    jit_function = decorated.jit
    typevars = _typevars(node.key("types"))
    entries = _config_entries(node, decorated, jit_function)
    heuristic_nodes, heuristic_notes = _heuristic_texts(node, decorated)
    args = _args(node.key("args"), jit_function, typevars, entries, heuristic_nodes)
    args += _launch_args(node.key("launch_args"), args)
    _check_tensordesc_blocks(node.key("args"), args)
    _check_typevars_used(node.key("types"), typevars, args)
    options = _options(node.key("options"), args, typevars, targets, targets_overridden)
    if getattr(jit_function, "debug", False) and "debug" not in options:  # @triton.jit(debug=True)
        options["debug"] = OptionValues((True,))
    defaults = {param.name: getattr(param.default, "value", param.default) for param in jit_function.params
                if param.default is not inspect.Parameter.empty}
    replaced_notes = _replaced_entry_values(entries, args, options)
    entries, config_targets = kernel_ref.config_targets(_complete_entries(entries, args, options, defaults, unique=False),
                                                        found.entry_targets, _same_values, [t.name for t in targets])
    fields = _config_fields(node.key("default"), args, options, entries, heuristic_nodes, targets, defaults)
    heuristics = _heuristics(heuristic_nodes, args, fields)
    requires = _requires(node.key("requires"), args, fields)
    grid_text, grid = _grid(node.key("grid"), args, fields)
    where = _where(node.key("where"), args, fields, typevars, targets)
    where += _rule_filters(node, heuristics, requires, args, fields, typevars)
    tuning_key, key_notes = _tuning_key(node, decorated, args, fields)
    tuning = _tuning_files(node.key("tuning"), spec_folder)
    autotune = _autotune(node.key("autotune"), decorated, args, fields, entries, tuning_key)
    cache_key = _cache_key(function_node, jit_function, source)
    return KernelSpec(name=name, function=function, source=source, cache_key=cache_key, module=found.source.module,
                      config_targets=config_targets, target_cache_keys=kernel_ref.target_cache_keys(found),
                      grid_text=grid_text, grid=grid, where=where, typevars=typevars, args=tuple(args),
                      options=options, config=fields, key=node.path, targets=tuple(targets),
                      configs=tuple(entries), tuning_key=tuning_key, autotune=autotune, heuristics=heuristics,
                      requires=requires,
                      tuning=tuning, parameter_names=tuple(param.name for param in jit_function.params),
                      notes=_notes(decorated) + found.notes + tuple(heuristic_notes) +
                      _uncompiled_heuristic_results(heuristic_nodes, heuristics, fields) +
                      _unspecialized_params_specialized(node.key("args"), jit_function, args) + replaced_notes +
                      key_notes)


def _cache_key(function_node, jit_function, source):
    """Triton's cache key of the function. Making it resolves every global name and attribute the
    function and the helpers it calls use, so a name that does not resolve (a typo in a helper's
    name) fails here: a spec error naming the line of the kernel that uses it, where there is one.
    Triton 3.8 on resolve attributes only when compiling; resolve.first_unresolved finds those first."""
    unresolved = resolve.first_unresolved(jit_function)
    if unresolved is not None:
        raise function_node.error("a function whose globals and attributes all resolve", unresolved.describe())
    try:
        return jit_function.cache_key
    except (AttributeError, NameError) as error:
        missing = getattr(error, "name", None)
        where = source.name
        lines, first = getattr(jit_function, "raw_src", None), getattr(jit_function, "starting_line_number", None)
        if missing and lines and first:
            pattern = re.compile(rf"\b{re.escape(missing)}\b")
            hits = [first + index for index, line in enumerate(lines) if pattern.search(line)]
            where = f"{source.name}:{hits[0]}" if hits else where
        known = dir(error.obj) if isinstance(error, AttributeError) and hasattr(error, "obj") \
            else list(getattr(jit_function, "__globals__", {}))
        close = difflib.get_close_matches(missing, known, n=1) if missing else []
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise function_node.error("a function whose globals and attributes all resolve",
                                  f"{where}: {type(error).__name__}: {error}{hint}") from None


def _notes(decorated):
    """What the decorators ask for that happens at run time in Triton and not ahead of time."""
    notes = []
    autotune = decorated.autotune
    if autotune is not None:
        if autotune.pruning:
            notes.append(f"@triton.autotune prune_configs_by ({', '.join(autotune.pruning)}) prunes at run time; "
                         "taot compiles every config, and first-call autotuning times every one that takes the "
                         "call's arguments")
        notes += list(autotune.notes)
    return tuple(notes)


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

def _args(node, jit_function, typevars, entries, heuristic_nodes):
    if node.present() and not isinstance(node.value, dict):
        raise node.error("a table describing the function's parameters")
    described = node.value or {}
    names = list(jit_function.arg_names)
    for name in described:
        if name not in names:
            raise node.key(name).error(f"a parameter of {jit_function.__name__}: " + ", ".join(names) +
                                       " (int arguments the function does not take go in launch_args)",
                                       "an unknown argument")
    args = []
    for index, param in enumerate(jit_function.params):
        if param.name in described:
            args.append(_arg(node.key(param.name), index, param, typevars))
        else:
            args.append(_undescribed_arg(node.key(param.name), index, param, jit_function.__name__, entries,
                                         heuristic_nodes))
    return args


def _undescribed_arg(node, index, param, function, entries, heuristic_nodes):
    """A parameter the spec does not describe: set by config entries, computed by a bool heuristic,
    named like an option, or a constexpr with a default."""
    setting = [entry_node for entry_node, entry in entries if param.name in entry]
    if setting and param.is_constexpr:
        values = _entry_values([entry for _, entry in entries], param.name)
        dtypes = [isinstance(value, DTypeValue) for value in values]
        if any(dtypes) and not all(dtypes):
            raise setting[0].key(param.name).error(f"dtypes for {param.name} in every config, or none",
                                                   describe([str(value) for value in values]))
        if not all(dtypes) and len({_constexpr_kind(value) for value in values}) > 1:
            raise setting[0].key(param.name).error(f"values of one type for {param.name} in every config",
                                                   describe(values))
        if all(dtypes):
            return ArgSpec(param.name, index, DTYPE, tuple(str(value) for value in values), value_source="configs")
        return ArgSpec(param.name, index, CONSTEXPR, tuple(values), value_source="configs")
    if param.name in heuristic_nodes and param.is_constexpr:
        return ArgSpec(param.name, index, CONSTEXPR, (False, True), value_source="heuristic")
    if param.name in OPTION_KINDS and param.is_constexpr:
        return ArgSpec(param.name, index, CONSTEXPR, (), value_source="option")  # values: see _options
    if not (param.is_constexpr and param.default is not inspect.Parameter.empty):
        raise node.missing(f"a description of parameter {param.name} of {function} "
                           "(every parameter without a constexpr default needs one)")
    value = getattr(param.default, "value", param.default)
    dtype = _dtype_from_triton(value)
    if dtype is not None:
        return ArgSpec(param.name, index, DTYPE, (dtype,))
    if _constexpr_kind(value) is None:
        raise node.missing(f"a description of {param.name}: its default {value!r} is not an int, float, bool, "
                           "string or dtype, so taot cannot record it")
    return ArgSpec(param.name, index, CONSTEXPR, (value,))


class DTypeValue(str):
    """A dtype given in a config entry as a triton.language dtype (a str: its spec name)."""


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
        _no_extra_keys(node, ("align", "hint", "output", "rank", "none"), "constexpr arguments")
        return ArgSpec(param.name, index, CONSTEXPR, _constexpr_values(node.key("constexpr")))
    if given[0] == "dtype":
        _no_extra_keys(node, ("align", "hint", "output", "rank", "none"), "dtype arguments")
        typevar, choices = _dtype_choices(node.key("dtype"), typevars)
        return ArgSpec(param.name, index, DTYPE, choices, typevar=typevar)
    return _typed_arg(node, index, param, typevars)


def _unspecialized_params_specialized(node, jit_function, args):
    """Notes for a spec that specializes what @triton.jit(do_not_specialize=...,
    do_not_specialize_on_alignment=...) keeps the JIT from specializing: an int's hint 1 or 16, a
    pointer's align 16. taot compiles what the spec asks; the note says the JIT would not."""
    by_name = {arg.name: arg for arg in args}
    notes = []
    for param in jit_function.params:
        arg = by_name.get(param.name)
        if arg is None:
            continue
        if param.do_not_specialize and arg.rules.has_hint:
            given = [hint for hint in arg.hints if hint != HINT_NONE]
            what, keyword = "hint", "do_not_specialize"
        elif (param.do_not_specialize or param.do_not_specialize_on_alignment) and arg.rules.has_align:
            given = [align for align in arg.aligns if align == 16]
            what = "align"
            keyword = "do_not_specialize" if param.do_not_specialize else "do_not_specialize_on_alignment"
        else:
            continue
        if given:
            notes.append(f"{node.key(param.name).key(what).path}: {param.name} is in @triton.jit({keyword}=...), so "
                         f"Triton's JIT never specializes it; {what} = {given[0] if len(given) == 1 else list(given)} "
                         f"compiles variants that do (chosen by value at launch); leave {what} out to compile as the "
                         "JIT does")
    return tuple(notes)


# A scalar parameter's annotation in the function (`stride: tl.int64`), as Triton's binder names it:
# the spec type that passes it so, and the annotation as written.
_ANNOTATED_SCALARS = {"i32": ("i32", "tl.int32"), "i64": ("i64", "tl.int64"), "fp32": ("fp32", "tl.float32"),
                      "fp64": ("fp64", "tl.float64"), "u1": ("i1", "bool")}


def _check_annotation(type_node, param, kind, choices):
    """A scalar the function annotates (`stride: tl.int64`) is passed as Triton's JIT passes it:
    the spec's type must be that one (an i32 stride would make `row * stride` overflow where the
    JIT's does not)."""
    annotated = getattr(param, "annotation_type", "") or ""
    if ARG_KINDS[kind].addressed or not annotated or annotated.startswith("*"):
        return
    if annotated not in _ANNOTATED_SCALARS:
        raise type_node.error(f"a parameter taot can pass as the function annotates it; {param.name} is annotated "
                              f"{annotated}, which is not one of {', '.join(_ANNOTATED_SCALARS)}",
                              describe(type_node.value))
    wanted, written = _ANNOTATED_SCALARS[annotated]
    if set(choices) != {wanted}:
        raise type_node.error(f'"{wanted}" ({param.name} is annotated {written} in the function, and Triton\'s JIT '
                              f"passes it as {wanted})", describe(type_node.value))


def _no_extra_keys(node, keys, what):
    for key in keys:
        if node.key(key).present():
            raise node.key(key).error(f"no {key} for {what}", "a value")


def _constexpr_values(node):
    values = []
    for item in node.value_list("compile-time values"):
        if _constexpr_kind(item.value) is None:
            raise item.error("an int, float, bool or string")
        values.append(item.value)
    kinds = {_constexpr_kind(value) for value in values}
    if len(kinds) > 1:
        raise node.error("values of one type (all ints, all floats, all bools or all strings)", describe(node.value))
    return tuple(values)


def _constexpr_kind(value):
    if isinstance(value, bool):
        return BOOL
    if is_int(value):
        return INT
    if isinstance(value, float):
        return FLOAT
    if isinstance(value, str):
        return STRING
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
    _check_annotation(type_node, param, kind, choices)
    none = node.key("none")
    if none.present() and not isinstance(none.value, bool):
        raise none.error("true or false")
    if none.value and kind in (INT, FLOAT):  # None or a number, chosen at launch as the JIT does
        kind = SCALAR
    elif none.value and kind != POINTER:
        raise none.error(f"none = true only on pointers and int or float scalars ({param.name} is a {kind} argument)",
                         "true")
    if kind == SCALAR and typevar is not None:
        raise type_node.error("a list of int and float types for an argument that may be None (not a type variable)",
                              describe(type_node.value))
    rules = ARG_KINDS[kind]
    for key, owner in SPEC_KEY_OWNERS.items():
        if key not in rules.spec_keys:
            _no_extra_keys(node, (key,), f"{kind} arguments ({key} is for {owner.name}s)")
    aligns = _subset(node.key("align"), ALIGN_VALUES, ALIGN_ANY) if rules.has_align else ()
    hints = _subset(node.key("hint"), HINT_VALUES, HINT_NONE) if rules.has_hint else ()
    if kind == SCALAR and node.key("hint").present() and not any(scalar_kind(choice) == INT for choice in choices):
        raise node.key("hint").error(f"no hint: {param.name} takes no int", describe(node.key("hint").value))
    output = node.key("output")
    if output.present() and not isinstance(output.value, bool):
        raise output.error("true or false")
    rank = node.key("rank")
    if rank.present() and (not is_int(rank.value) or not 1 <= rank.value <= MAX_RANK):
        raise rank.error(f"an int from 1 to {MAX_RANK}")
    if none.value and kind == POINTER:
        aligns += (POINTER_NONE,)
    return ArgSpec(param.name, index, kind, choices, typevar=typevar, aligns=aligns, hints=hints,
                   output=output.present() and output.value, rank=rank.value if rank.present() else None,
                   none=bool(none.value))


TENSORDESC_EXPECTED = ('a descriptor type "tensordesc<DTYPE[B0, B1, ...]>": a dtype or type variable, then 1 to '
                       f"{MAX_TENSORDESC_RANK} block dims, each an int or an int constexpr argument's name")


def _tensordesc_arg(node, index, param, typevars):
    """A host-side tensor descriptor: `type = "tensordesc<T[BLOCK_M, BLOCK_K]>"` (the element type and
    the block shape the kernel loads and stores; the tensor's shape and strides are call values)."""
    _no_extra_keys(node, ("align", "hint", "rank", "none"),
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
        parsed.append((kind, choices[0]))
        kinds = {kind for kind, _ in parsed}
        floats = [choice for kind, choice in parsed if kind == FLOAT]
        # ints and one float type: a scalar the JIT takes as either (specialized on the Python type)
        if len(kinds) > 1 and (kinds != {INT, FLOAT} or len(floats) > 1):
            raise item.error(f"types of one kind, like the first ({parsed[0][0]}), or int types and one float type "
                             "(a scalar passed as an int on some calls and a float on others)",
                             f"a {kind} type {describe(item.value)}")
    kinds = {kind for kind, _ in parsed}
    return (SCALAR if len(kinds) > 1 else parsed[0][0]), None, tuple(choice for _, choice in parsed)


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


# ---- config entries, launch-only arguments ----

def _config_entries(node, decorated, jit_function):
    """(node, dict) per config entry: @triton.autotune's configs, then the spec's `configs`. Names
    are checked (constexpr parameters or options); triton.language dtypes become DTypeValue."""
    allowed = [param.name for param in jit_function.params if param.is_constexpr]
    allowed += [name for name in OPTION_KINDS if name not in allowed]
    entries = []
    if decorated.autotune is not None:
        base = Node(node.file, f"{node.path}.function(@triton.autotune)", None)
        for index, config in enumerate(decorated.autotune.configs):
            entry_node = Node(node.file, f"{base.path}.configs[{index}]", config)
            entries.append((entry_node, _entry(entry_node, config, allowed, jit_function)))
    configs = node.key("configs")
    if configs.present():
        if not is_list(configs.value) or not configs.value:
            raise configs.error("a non-empty list of config tables, such as [{ BLOCK_M = 64, num_warps = 4 }]")
        for item in configs.items():
            if not isinstance(item.value, dict) or not item.value:
                raise item.error("a table of constexpr and option values, such as { BLOCK_M = 64, num_warps = 4 }")
            entries.append((item, _entry(item, item.value, allowed, jit_function)))
    return entries


def _entry(node, values, allowed, jit_function):
    entry = {}
    for name, value in values.items():
        if name not in allowed:
            params = [param.name for param in jit_function.params]
            what = "a parameter that is not tl.constexpr" if name in params else "an unknown name"
            raise node.key(name).error("a constexpr parameter or option: " + ", ".join(allowed), f'"{name}", {what}')
        if _is_triton_dtype(value):
            dtype = spec_dtype_name(value)
            if dtype is None:
                raise node.key(name).error("a dtype taot knows: " + ", ".join(DTYPES), str(value))
            value = DTypeValue(dtype)
        elif _constexpr_kind(value) is None:
            raise node.key(name).error("an int, float, bool, string or dtype")
        entry[name] = value
    return entry


def _is_triton_dtype(value):
    import triton.language as tl
    return isinstance(value, tl.dtype)


def _complete_entries(entries, args, options, defaults, unique=True):
    """The config entries as the dimension they form: every entry gives a value to every field the
    entries set (options left out take Triton's default, constexprs their default in the function);
    fields that vary on their own in the spec are left out (their own values replace the entries'),
    as are options every entry leaves at Triton's default; duplicates go (unless not `unique`: then
    one entry per entry given, in order)."""
    if not entries:
        return []
    by_name = {arg.name: arg for arg in args}
    names = _entry_names(entries)
    kept = [name for name in names if _set_by_entries(name, by_name, options)]
    result = []
    for entry_node, entry in entries:
        complete = {}
        for name in kept:
            if name in entry:
                value = entry[name]
                if name in OPTION_KINDS and name not in by_name:
                    value = _option_value(entry_node.key(name), name)
            elif name in OPTION_KINDS and (name not in by_name or by_name[name].value_source == "option"):
                if name not in OPTION_DEFAULTS:
                    raise entry_node.key(name).missing(f"a value for {name} (other configs set it; set it in every "
                                                       "config or in none)")
                value = OPTION_DEFAULTS[name]
            else:
                if name not in defaults:
                    raise entry_node.key(name).missing(f"a value for {name} (other configs set it and the function "
                                                       "gives it no default)")
                value = defaults[name]
            complete[name] = str(value) if isinstance(value, DTypeValue) else value
        result.append(complete)
    for name in list(kept):
        if name in OPTION_KINDS and name not in by_name and \
                all(entry[name] == OPTION_DEFAULTS.get(name) for entry in result):
            kept.remove(name)
            for entry in result:
                del entry[name]
    if not unique:
        return result
    unique = []
    for entry in result:
        if not any(_same_values(entry, earlier) for earlier in unique):
            unique.append(entry)
    return unique


def _replaced_entry_values(entries, args, options):
    """Notes for config-list values (@triton.autotune's configs, the spec's `configs`) that the
    spec's own values of the field replace, so that they are not compiled."""
    by_name = {arg.name: arg for arg in args}
    notes = []
    for name in _entry_names(entries):
        if _set_by_entries(name, by_name, options):
            continue
        if name in by_name and not by_name[name].is_runtime:
            own, where = by_name[name].choices, "[kernel.args]"
        elif name in options:
            own, where = options[name].values, "[kernel.options]"
        else:
            continue
        shown_own = [str(value) for value in own]
        listed = list(dict.fromkeys(str(entry[name]) for _, entry in entries if name in entry))
        dropped = [value for value in listed if value not in shown_own]
        if dropped:
            notes.append(f"{where} {name} = {', '.join(shown_own)} replaces the config list's {name} values "
                         f"({', '.join(listed)}): {', '.join(dropped)} {'is' if len(dropped) == 1 else 'are'} not "
                         "compiled")
    return tuple(notes)


def _entry_names(entries):
    """The names the config entries set, in the order they first appear."""
    names = []
    for _, entry in entries:
        names += [name for name in entry if name not in names]
    return names


def _set_by_entries(name, by_name, options):
    """Whether field `name`'s value comes from the config entries (not from its own spec values)."""
    if name in by_name:
        arg = by_name[name]
        return arg.value_source == "configs" or (arg.value_source == "option" and name not in options)
    return name not in options


def _same_values(a, b):
    return a.keys() == b.keys() and all(type(a[key]) is type(b[key]) and a[key] == b[key] for key in a)


def _launch_args(node, args):
    """Int arguments the grid (and launch-time rules) read that the function does not take."""
    if not node.present():
        return []
    if not isinstance(node.value, dict):
        raise node.error('a table of launch-only int arguments such as n_rows = "i32"')
    launch_args = []
    for name in node.value:
        entry = node.key(name)
        if not IDENTIFIER.fullmatch(name) or keyword.iskeyword(name):
            raise entry.error("an argument name that is an identifier", f'the name "{name}"')
        if any(arg.name == name for arg in args):
            raise entry.error("a name that is not a parameter of the function (parameters go in kernel.args)",
                              f'"{name}"')
        type_node = entry.key("type") if isinstance(entry.value, dict) else entry
        if isinstance(entry.value, dict):
            entry.table("a table with a type", {"type": '"i32" or "i64"'}, required=("type",))
        types = []
        for item in type_node.value_list("int types"):
            if item.value not in ("i32", "i64"):
                raise item.error('"i32" or "i64" (launch-only arguments are ints)')
            types.append(item.value)
        launch_args.append(ArgSpec(name, len(args) + len(launch_args), INT, tuple(types), hints=(HINT_NONE,),
                                   launch_only=True))
    return launch_args


# ---- options, config fields, default ----

def _options(node, args, typevars, targets, targets_overridden=False):
    """Options varied on their own: name -> OptionValues. A value may be a table per target:
    num_stages = { sm_80 = 2, sm_90 = [3, 4] }; with the targets overridden (--target), entries for
    targets not built are left out."""
    if not node.present():
        return {}
    if not isinstance(node.value, dict):
        raise node.error("a table of Triton options such as num_warps = [4, 8]")
    known_triton = triton_compiler.option_fields("nvidia") | triton_compiler.option_fields("amd")
    by_name = {arg.name: arg for arg in args}
    options = {}
    for name in node.value:
        entry = node.key(name)
        if name in triton_options.BY_NAME and name not in OPTION_KINDS:
            raise entry.error(f"an option of Triton {triton_api.VERSION}, which has no {name}",
                              f'"{name}" (one of ' + ", ".join(OPTION_KINDS) + ")")
        if name not in OPTION_KINDS:
            also = " (a Triton option that taot does not vary per variant)" if name in known_triton else ""
            raise entry.error("one of the options " + ", ".join(OPTION_KINDS), f'"{name}"{also}')
        arg = by_name.get(name)
        if (arg is not None and arg.value_source != "option") or name in typevars:
            raise entry.error("an option name not also used by an argument or type variable (a tl.constexpr "
                              "parameter named like an option takes the option's values when kernel.args does "
                              "not describe it)", f'"{name}"')
        if isinstance(entry.value, dict):
            options[name] = _per_target_option(entry, name, targets, targets_overridden)
        else:
            options[name] = OptionValues(tuple(_option_value(item, name) for item in entry.value_list(f"{name} values")))
    return options


def _per_target_option(node, name, targets, targets_overridden):
    names = [target.name for target in targets]
    per_target = {}
    for key in node.value:
        target = parse_target(key)
        match = [target_name for target_name in names if target is not None and
                 parse_target(target_name).arch == target.arch]
        if not match and target is not None and targets_overridden:
            continue  # a target of the spec that this build leaves out
        if not match:
            raise node.key(key).error(f"a target of this kernel: {', '.join(names)}", f'"{key}"')
        per_target[match[0]] = tuple(_option_value(item, name) for item in node.key(key).value_list(f"{name} values"))
    for target_name in names:
        if target_name not in per_target:
            raise node.key(target_name).missing(f"the {name} values for {target_name} (a per-target table gives "
                                                "every target of the kernel)")
    values = []
    for target_name in names:
        values += [value for value in per_target[target_name] if value not in values]
    return OptionValues(tuple(values), per_target)


def _option_value(node, name):
    value = node.value
    if OPTION_KINDS[name] == BOOL:
        if not isinstance(value, bool):
            raise node.error("true or false")
        return value
    least = triton_options.BY_NAME[name].least
    if not is_int(value) or value < least:
        raise node.error("a positive int" if least == 1 else f"an int >= {least}")
    if name == "num_warps" and value & (value - 1):
        raise node.error("a power of two")
    return value


def _config_fields(default_node, args, options, entries, heuristic_nodes, targets, defaults):
    """ConfigField per constexpr/dtype argument (in argument order), then per option, with defaults.
    A constexpr named like an option is also the option (Triton's JIT passes a keyword to both),
    except when nothing sets it and it keeps the function's default."""
    candidates, required = [], set()
    for arg in args:
        if arg.is_runtime:
            continue
        values, is_option = arg.choices, arg.name in OPTION_KINDS
        if arg.value_source == "configs" or (arg.value_source == "option" and _entry_values(entries, arg.name)):
            values = _entry_values(entries, arg.name)
        elif arg.value_source == "option":
            if arg.name in options:
                values = options[arg.name].values
            elif arg.name in defaults:
                values, is_option = (defaults[arg.name],), False
            else:
                values = (OPTION_DEFAULTS[arg.name],)
        kind = DTYPE if arg.kind == DTYPE else _constexpr_kind(values[0])
        candidates.append((arg.name, kind, tuple(values), is_option, True))
        if (arg.value_source is None and not arg.launch_only and arg.name not in defaults
                and arg.name not in heuristic_nodes and not _entry_values(entries, arg.name)
                and not default_node.key(arg.name).present()):
            required.add(arg.name)
    arg_names = {arg.name for arg in args}
    option_names = [name for name in options if name not in arg_names]
    option_names += [name for name in OPTION_KINDS
                     if name not in arg_names and name not in options and _entry_values(entries, name)]
    if entries:  # options come from two places: keep Triton's order (num_warps, num_stages, ...)
        option_names.sort(key=list(OPTION_KINDS).index)
    for name in option_names:
        values = options[name].values if name in options else _entry_values(entries, name)
        candidates.append((name, OPTION_KINDS[name], tuple(values), True, False))
    if default_node.present() and not isinstance(default_node.value, dict):
        raise default_node.error("a table giving the default config, such as BLOCK_SIZE = 1024")
    given = dict(default_node.value or {})
    names = [name for name, _, _, _, _ in candidates]
    for name in given:
        if name not in names:
            raise default_node.key(name).error("a config field: " + ", ".join(names), "an unknown field")
    fields = []
    for name, kind, values, is_option, is_constexpr in candidates:
        node = default_node.key(name)
        if name in given:
            value = given[name]
            if not any(type(value) is type(choice) and value == choice for choice in values):
                raise node.error(f"one of the values of {name}: {one_of(values)}")
            fields.append(ConfigField(name, kind, values, value, is_option, is_constexpr))
            continue
        derived = entries and any(name in entry for entry in entries)
        per_target = name in options and options[name].per_target is not None
        # With config entries (a kernel as autotuned) or a rule, taot picks defaults itself.
        # A field the caller must give (required) has no default to name; taot keeps a nominal one.
        if len(values) > 1 and not (entries or per_target or name in heuristic_nodes or name in required):
            raise node.missing(f"the default value of {name}, one of {one_of(values)} (it has several values)")
        default = entries[0][name] if derived else \
            (options[name].for_target(targets[0].name)[0] if per_target else values[0])
        fields.append(ConfigField(name, kind, values, default, is_option, is_constexpr,
                                  default_given=len(values) == 1,
                                  required=name in required and len(values) > 1))
    return tuple(fields)


def _entry_values(entries, name):
    values = []
    for entry in entries:
        if name in entry and not any(type(entry[name]) is type(seen) and entry[name] == seen for seen in values):
            values.append(entry[name])
    return tuple(values)


# ---- heuristics and the tuning key ----

def _heuristic_texts(node, decorated):
    """(field -> (node, text) in evaluation order, notes): the spec's [kernel.heuristics] replace the
    decorator's rule for the same field; decorator rules are translated from their source. One that
    cannot be (it reads a dtype, say) is an error, unless the spec describes its field under
    [kernel.args] and a `where` filter reads it (tying it to the argument types): then it is left
    out, with a note, and the field is chosen as any config field is."""
    spec_rules = node.key("heuristics")
    if spec_rules.present() and not isinstance(spec_rules.value, dict):
        raise spec_rules.error('a table of rules such as BLOCK_SIZE = "next_power_of_2(n_cols)"')
    given = dict(spec_rules.value or {})
    described = node.key("args").value if isinstance(node.key("args").value, dict) else {}
    filters = node.key("where").value if is_list(node.key("where").value) else []
    filtered = {name for text in filters if isinstance(text, str) for name in re.findall(r"[A-Za-z_]\w*", text)}
    texts, notes = {}, []
    for heuristic in decorated.heuristics:
        if heuristic.field in given:
            continue
        where = f"{node.path}.function(@triton.heuristics).{heuristic.field}"
        try:
            text = decorators.heuristic_expression(heuristic)
        except Problem as problem:
            location = decorators.source_location(heuristic.function)
            if heuristic.field in described and heuristic.field in filtered:
                notes.append(f"@triton.heuristics {heuristic.field} ({location}) is not evaluated at launch "
                             f"({problem}); the spec describes {heuristic.field} under [kernel.args] and a where "
                             "filter reads it, so it is chosen as any config field is: the call's config, a tuned "
                             "table, the default, among the variants the filter keeps")
                continue
            raise SpecError(node.file, where, "a @triton.heuristics value that is an expression of the arguments "
                            "and config fields (taot evaluates it at launch, in C++)",
                            f"{location}: {problem}; write it in the spec instead: [kernel.heuristics] "
                            f'{heuristic.field} = "<expression>" over argument and config field names with '
                            "next_power_of_2, cdiv, min, max, abs, comparisons and `x if c else y`; or describe "
                            f"{heuristic.field} under [kernel.args] with the values to compile and tie it to the "
                            f"argument types with a `where` filter, as in \"{heuristic.field} == (T == 'fp16')\" "
                            "(it is then chosen as any config field is)") from None
        texts[heuristic.field] = (Node(node.file, where, text), text)
    for name in given:
        item = spec_rules.key(name)
        if not isinstance(item.value, str):
            raise item.error('a rule expression string such as "next_power_of_2(n_cols)"')
        texts[name] = (item, item.value)
    return texts, notes


def _rule_names(args, fields):
    """(scalar names, pointer names, field names) a launch-time rule may read: scalar arguments and
    num_sms (unless something else has that name), pointers (in None tests), numeric config fields."""
    scalars = [arg.name for arg in args if arg.rules.scalar]
    pointers = [arg.name for arg in args if arg.rules.has_align]
    numeric = [field.name for field in fields if field.kind in (INT, FLOAT, BOOL)]
    if not any(name == "num_sms" for name in [arg.name for arg in args] + [field.name for field in fields]):
        scalars.append("num_sms")
    return scalars, pointers, numeric


RULE_EXPECTED = ("a rule over scalar arguments, numeric config fields and num_sms, with next_power_of_2, cdiv, min, "
                 "max, abs, comparisons, and/or/not, `x if c else y` and `x is None` for call arguments")


def _heuristics(heuristic_nodes, args, fields):
    """(field, Rule) per heuristic, checked: the field is a numeric config field; the rule reads
    scalar arguments, pointers (`is None`) and config fields not computed by a later rule."""
    scalars, pointers, numeric = _rule_names(args, fields)
    by_name = {arg.name: arg for arg in args}
    order = list(heuristic_nodes)
    rules = []
    for position, (name, (node, text)) in enumerate(heuristic_nodes.items()):
        if name not in numeric:
            listed = (f"; an option is a config field when its values are listed: [kernel.options] {name} = "
                      "[...], the values the rule may give" if name in OPTION_KINDS else "")
            raise node.error("a rule for a numeric config field (an int, float or bool constexpr parameter or "
                             f"option): {', '.join(numeric) or 'the kernel has none'}",
                             f'a rule for "{name}"{listed}')
        try:
            rule = parse_rule(text, scalars, pointers, numeric)
        except ExpressionProblem as problem:
            raise node.error(RULE_EXPECTED, f"{describe(text)} ({problem})") from None
        later = [used for used in rule.names if used in order[position:]]
        if later:
            raise node.error("a rule that reads only config fields computed before it (rules run in order)",
                             f"{describe(text)}, which reads {later[0]}")
        arg = by_name.get(name)
        if arg is not None and arg.value_source == "heuristic" and not rule.is_bool:
            raise node.error(f"values for {name}: the rule {describe(rule.text)} is not a comparison, so taot "
                             f"cannot know which values to compile; list them: [kernel.args] {name} = "
                             "{ constexpr = [...] }", "no values")
        rules.append((name, rule))
    return tuple(rules)


def _uncompiled_heuristic_results(heuristic_nodes, heuristics, fields):
    """Notes for heuristics with a literal result no variant has (`ACT = "2 if n > 4096 else 0"`
    with ACT in [0, 1]): a call the rule gives it to fails at launch, so the build says so."""
    by_name = {field.name: field for field in fields}
    notes = []
    for name, rule in heuristics:
        field = by_name[name]
        if field.kind not in (INT, FLOAT):
            continue
        missing = [value for value in rule_literal_results(rule) if value not in field.values]
        if missing:
            missing = list(dict.fromkeys(missing))
            shown = " or ".join(str(value) for value in missing)
            it = "it" if len(missing) == 1 else "them"
            notes.append(f"{heuristic_nodes[name][0].path}: {name} = {describe(rule.text)} can give {shown}, which "
                         f"no variant was compiled with (compiled: {', '.join(map(str, field.values))}), so calls "
                         f"that get {it} fail at launch: add {it} to {name}'s values or change the rule")
    return tuple(notes)


def _requires(node, args, fields):
    """The kernel's `requires` rules: conditions on the call and the variant's config that every
    launched variant must meet (automatic selection skips the variants that fail them)."""
    if not node.present():
        return ()
    scalars, pointers, numeric = _rule_names(args, fields)
    rules = []
    for item in node.value_list("rule expressions"):
        if not isinstance(item.value, str):
            raise item.error('a rule expression string such as "n_cols <= BLOCK_SIZE"')
        try:
            rules.append(parse_rule(item.value, scalars, pointers, numeric))
        except ExpressionProblem as problem:
            raise item.error(RULE_EXPECTED, f"{describe(item.value)} ({problem})") from None
    return tuple(rules)


def _rule_filters(node, heuristics, requires, args, fields, typevars):
    """Filters from rules that read only config fields and pointers' None-ness (known per variant):
    a heuristic keeps the variants whose field has the value the rule gives (the others could never
    be chosen by it); a requirement keeps the variants that meet it."""
    field_names = {field.name for field in fields}
    pointers = {arg.name for arg in args if arg.none}  # arguments whose None-ness each variant fixes
    value_names = [field.name for field in fields] + list(typevars)
    arg_names = [arg.name for arg in args if arg.is_runtime]
    decided = [(rule_as_filter(name, rule), "heuristics") for name, rule in heuristics
               if rule.names and all(used in field_names or used in pointers for used in rule.names)]
    decided += [(rule_as_filter(None, rule), "requires") for rule in requires
                if all(used in field_names or used in pointers for used in rule.names)]
    filters = []
    for text, key in decided:
        try:
            filters.append(parse_where(text, value_names, arg_names))
        except ExpressionProblem as problem:  # a rule function filters do not have
            raise node.key(key).error("a rule taot can also check per variant", f"{text} ({problem})") from None
    return tuple(filters)


def _tuning_key(node, decorated, args, fields):
    """(names of int arguments and int or bool config fields whose values key tuned tables, notes).
    The spec's `tuning_key` may be empty (no key); a name it gives must be usable. Of a decorator's
    key, what tuned tables cannot hold (pointers, float arguments, string or dtype fields) is left out
    with a note, as Triton keys on it but taot compiles it apart or cannot key on it."""
    key_node = node.key("tuning_key")
    if key_node.present():
        if key_node.value == []:
            return (), ()
        items = [(item, item.value) for item in key_node.value_list("argument names")]
    elif decorated.autotune is not None:
        key_path = Node(node.file, f"{node.path}.function(@triton.autotune).key", None)
        items = [(Node(node.file, f"{key_path.path}[{index}]", name), name)
                 for index, name in enumerate(decorated.autotune.key)]
    else:
        return (), ()
    usable = [arg.name for arg in args if arg.kind == INT] + [field.name for field in fields
                                                               if field.kind in (INT, BOOL)]
    kinds = {arg.name: f"a {arg.kind} argument" for arg in args}
    kinds.update({field.name: f"a config field of {field.kind} values" for field in fields})
    names, notes = [], []
    for item, name in items:
        if name in usable:
            names.append(name)
        elif name in kinds and not key_node.present():
            what = kinds[name]
            why = "taot compiles variants per dtype" if what == "a pointer argument" else "tuned tables key on ints"
            notes.append(f"@triton.autotune key names {name}, {what}; {why}, so the tuning key leaves it out")
        else:
            what = kinds.get(name, "which is no argument or config field")
            also = "" if key_node.present() else " (or give the spec's tuning_key in place of the decorator's key)"
            raise item.error(f"an int argument or an int or bool config field ({', '.join(usable) or 'none'}), or "
                             f"tuning_key = [] for no key{also}", f'"{name}", {what}')
    return tuple(names), tuple(notes)


def _autotune(node, decorated, args, fields, entries, tuning_key):
    """The kernel's AutotuneSpec, or None when there is nothing to tune at first call: no tuning key,
    or config entries that vary no field. The spec's `autotune` table overrides the decorator's
    reset_to_zero / restore_value and the default of at_first_call (true for @triton.autotune)."""
    decorator = decorated.autotune
    if node.present():
        node.table("a table such as { at_first_call = true, reset_to_zero = [\"c_ptr\"] }", AUTOTUNE_KEYS)
    varied = [field.name for field in fields if len({repr(entry.get(field.name)) for entry in entries}) > 1]
    if not tuning_key or not varied:
        if node.present():
            why = "no tuning key" if not tuning_key else "no config list that varies a field (configs)"
            raise node.error("a kernel with a tuning key and several configs", f"an autotune table for a kernel "
                                                                                f"with {why}")
        return None
    at_first_call = node.key("at_first_call")
    if at_first_call.present() and not isinstance(at_first_call.value, bool):
        raise at_first_call.error("true or false")
    pointers = [arg.name for arg in args if arg.kind == POINTER and arg.is_runtime]
    buffers = {}
    for name in ("reset_to_zero", "restore_value"):
        given = node.key(name)
        if given.present():
            names = [item for item in given.value_list("pointer argument names")] if given.value != [] else []
        else:
            source = Node(node.file, f"{node.path.rsplit('.', 1)[0]}.function(@triton.autotune).{name}", None)
            names = [Node(source.file, f"{source.path}[{index}]", value)
                     for index, value in enumerate(getattr(decorator, name, ()) if decorator else ())]
        for item in names:
            if item.value not in pointers:
                raise item.error(f"a pointer argument ({', '.join(pointers) or 'none'})")
        buffers[name] = tuple(item.value for item in names)
    return AutotuneSpec(at_first_call=at_first_call.value if at_first_call.present() else decorator is not None,
                        fields=tuple(varied), **buffers)


def _tuning_files(node, spec_folder):
    """The kernel's tuned-table files, absolute, in the order written (a pattern's matches sorted by
    name), each once. Paths are relative to the spec; a path must name a file, else a pattern
    (* ? [) must match one. What the files hold is checked when the library is generated (taot gen)."""
    if not node.present():
        return ()
    expected = "a tuned-table file (a path relative to the spec file; globs such as \"tables/*.json\" allowed)"
    files = []
    for item in node.value_list("tuned-table files"):
        text = item.string(expected)
        path = (spec_folder / text).resolve()
        if path.is_file():  # first as written: vLLM's names hold "[" (block_shape=[128,128])
            matches = [path]
        elif any(character in text for character in "*?["):
            matches = sorted(Path(match).resolve() for match in glob.glob(str(spec_folder / text))
                             if Path(match).is_file())
            if not matches:
                raise item.error(expected, f'"{text}", which matches no file (in {spec_folder})')
        else:
            raise item.error(expected, f'"{text}", which does not exist ({path})')
        files += [path for path in matches if path not in files]
    return tuple(files)


# ---- grid and where ----

def _grid(node, args, fields):
    """(texts, trees) of the three grid dimensions; (None, None) when the spec gives no grid, so that
    every launch gives one."""
    if not node.present():
        return None, None
    expected = '1 to 3 grid entries (ints or expressions such as "cdiv(n, BLOCK)")'
    entries = node.value if is_list(node.value) else [node.value]
    if isinstance(node.value, dict) or not 1 <= len(entries) <= 3:
        raise node.error(expected)
    int_args = [arg.name for arg in args if arg.rules.grid_operand]
    int_fields = [field.name for field in fields if field.kind == INT]
    texts, trees = [], []
    for index, value in enumerate(entries):
        item = node.item(index) if is_list(node.value) else node
        if not (is_int(value) or isinstance(value, str)):
            raise item.error("an int or an expression string")
        try:
            trees.append(parse_grid(value, int_args, int_fields))
        except ExpressionProblem as problem:
            meant = _grid_meant(entries, index, int_args, int_fields) or _grid_name_hint(problem.unknown_name, args)
            raise item.error("an expression over ints, int arguments, int constexprs and options, num_sms, with "
                             "+ - * // %, cdiv, min, max", f"{describe(value)} ({problem}){meant}") from None
        texts.append(str(value))
    while len(texts) < 3:
        texts.append("1")
        trees.append(parse_grid(1, (), ()))
    return tuple(texts), tuple(trees)


def _grid_name_hint(name, args):
    """For a grid's unknown name (None: none): what the name is (an argument of another kind), or
    where an int the kernel does not take is declared."""
    if name is None:
        return ""
    arg = next((arg for arg in args if arg.name == name), None)
    if arg is not None:
        return f"; {name} is a {arg.kind} argument, and a grid reads int ones"
    return f'; an int the grid reads that the kernel does not take goes in [kernel.launch_args] ({name} = "i32")'


def _grid_meant(entries, index, int_args, int_fields):
    """'; write it as grid = [...]' when entry `index` is Python launch code (a lambda over META,
    triton.cdiv, a tuple) whose meaning is a valid grid; else ""."""
    if not isinstance(entries[index], str):
        return ""
    parts = grid_from_python(entries[index])
    if parts is None or parts == [entries[index]]:
        return ""
    parts = [int(part) if part.isdigit() else part for part in parts]
    meant = list(entries[:index]) + parts + list(entries[index + 1:])
    if len(meant) > 3:
        return ""
    try:
        for part in meant:
            parse_grid(part, int_args, int_fields)
    except ExpressionProblem:
        return ""
    return "; write it as grid = [" + ", ".join(json.dumps(part) for part in meant) + "]"


def _where(node, args, fields, typevars, targets):
    if not node.present():
        return ()
    amd = [target.name for target in targets if target.vendor == "amd"]
    value_names = [field.name for field in fields] + list(typevars)
    arg_names = [arg.name for arg in args if arg.is_runtime]
    value_names += [name for name in TARGET_NAMES if name not in value_names and name not in arg_names]
    filters = []
    for item in node.value_list("filter expressions"):
        if not isinstance(item.value, str):
            raise item.error("a filter expression string")
        try:
            filters.append(parse_where(item.value, value_names, arg_names))
        except ExpressionProblem as problem:
            raise item.error("a filter over constexprs, options, type variables, target, arch and arguments "
                             "(x.dtype, x.align, x.type, x.hint, x.none)", f"{describe(item.value)} ({problem})") \
                from None
        if amd and ("value", "arch") in filters[-1].slots and "arch" not in value_names[:len(fields) + len(typevars)] \
                and "arch" not in arg_names:
            raise item.error("a filter that names the targets it means by vendor or target where the kernel has AMD "
                             f"targets ({', '.join(amd)}), which have no compute capability",
                             f"{describe(item.value)}, which reads arch (write vendor == 'nvidia' and ..., or "
                             "target == 'gfx942')")
    return tuple(filters)
