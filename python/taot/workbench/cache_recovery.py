# Recover what a Triton cache entry was compiled from: the signature, constexpr values and attrs of
# the kernel's Python function whose Triton cache key is the entry's own. The cache keeps no
# signature or constants, only the key's hash (metadata "hash"); the candidates come from the
# function's parameters, the entry's tt.func, the constants in its IR and the literals of the
# function's source, each specialized as the installed Triton's JIT specializes a call (its own
# binder, through triton_api.jit) or as a direct triton.compile call gives it (attrs for the
# 16-divisible parameters only), and a candidate counts only when Triton's key for it hashes to
# exactly that value, so what is recovered is exact (and what is not found is reported, never guessed).
import ast
import dataclasses
import textwrap

from ..errors import Problem
from ..spec.arg_kinds import ARG_KINDS
from ..triton_api import VERSION, jit
from .triton_cache import element_types, integer_constants

MAX_CANDIDATES = 200_000   # keys tried per search (entries of like parameters share one) before giving up
MAX_INTEGERS = 24          # integer constants of the IR tried as constexpr values, most frequent first

# A parameter's Triton signature types that give the tt.func type the entry shows (Triton's IR is
# signless: a u64 argument is an i64 there; the JIT passes a Python bool as "u1").
_SCALAR_SIGNATURES = {"i32": ("i32",), "i64": ("i64", "u64"), "fp32": ("fp32",), "fp64": ("fp64",),
                      "i1": ("u1", "i1")}
_UNSIGNED = {"i8": "u8", "i16": "u16", "i32": "u32", "i64": "u64"}
_ABSENT = object()  # a candidate that is a runtime parameter (no constexpr value)


class NotRecovered(Problem):
    """The entry's compile inputs could not be recovered; the message says why."""


class Inexpressible(NotRecovered):
    """The entry was compiled with a specialization no spec can ask for: the function as it is now is
    not the question."""


@dataclasses.dataclass(frozen=True)
class Recovered:
    """An entry's exact compile inputs, as they were passed to triton.compile."""
    signature: dict       # parameter name -> "*fp32", "i32", "u1", "constexpr", ...
    constexprs: dict      # parameter name -> value (int, float, bool, str, None, triton.language dtype)
    attrs: dict           # (parameter index,) -> attributes, as the compile had them
    divisible: frozenset  # indexes of the parameters compiled as 16-divisible
    options: object       # the backend's options object the entry was compiled with
    env: dict             # the cache-invalidating environment variables that were set
    by_jit: bool          # the specialization is the one Triton's JIT makes of a call (else a direct
                          # triton.compile call's, whose attrs name only the 16-divisible parameters)


def environment_of(metadata):
    """The cache-invalidating environment variables the metadata records (Triton stores them as
    upper-case keys beside the options)."""
    return {key: value for key, value in metadata.items() if key.isupper()}


def recover_all(entries, function):
    """entry key -> Recovered, or NotRecovered saying why not, for entries of the @triton.jit
    `function`. Each entry is tried as the JIT specializes a call (the installed Triton's own binder)
    and as a direct triton.compile call gives it. Entries whose kernels take the same parameters
    share one search: each candidate's source hash is computed once and checked against all of
    their keys."""
    results, groups = {}, {}
    for entry in entries:
        try:
            slots, suffix, context = _search_context(entry, function)
        except NotRecovered as problem:
            results[entry.key] = problem
            continue
        group = groups.setdefault(repr([(name, [kind for kind, _ in choices], divisible)
                                        for name, choices, divisible in slots]), {"entries": [], "suffixes": {}})
        group["entries"].append(entry)
        group["suffixes"].setdefault(suffix, {})[entry.triton_hash] = (entry, context)
    for group in groups.values():
        first = group["entries"][0]
        pools = _candidate_pools("\n".join(entry.text("source") for entry in group["entries"]), function)
        slots = _slots(first, function, pools)
        results.update(_search(function, slots, group["suffixes"], first.arch))
    return results


def recover(entry, function):
    """The inputs `entry` was compiled from (see recover_all); raises NotRecovered."""
    result = recover_all([entry], function)[entry.key]
    if isinstance(result, NotRecovered):
        raise result
    return result


def options_of(metadata):
    """The options object the metadata was compiled with; NotRecovered when they do not fit."""
    try:
        return jit.options_from_metadata(metadata["target"]["arch"], metadata)
    except ValueError as problem:
        raise NotRecovered(str(problem)) from None


def _search_context(entry, function):
    """(slots, key suffix, (options, env, capability)) of one entry."""
    metadata = entry.metadata
    version = metadata.get("triton_version")
    if version != VERSION:
        raise NotRecovered(f"compiled by Triton {version}, not {VERSION}, which taot runs: a cache key covers "
                           "Triton's exact version, so an entry's inputs can be recovered only under the Triton "
                           "that compiled it")
    if "tt.pointer_range" in entry.text("source"):
        raise Inexpressible("its pointers carry tt.pointer_range = 32: AMD's JIT specializes a tensor under 2 GB for "
                           "buffer loads and stores, which a taot spec cannot express (taot compiles AMD variants "
                           "for tensors of any size; docs/amd.md)")
    slots = _slots(entry, function, None)
    options = options_of(metadata)
    env = environment_of(metadata)
    try:
        suffix = jit.key_suffix(entry.arch, options, env)
    except OSError as error:  # a library file the options name (libdevice) is not here
        raise NotRecovered(f"its options name a file that is not here ({error.filename})") from None
    return slots, suffix, (options, env, entry.arch)


@dataclasses.dataclass(frozen=True)
class _Piece:
    """One candidate of one parameter: its signature type, constexpr value (or _ABSENT), the argument
    that gives it and the attrs entry the JIT then gives it (_ABSENT: none; by_jit False: the JIT
    makes nothing of that argument, only a direct triton.compile call can have it)."""
    type: str
    value: object
    argument: object
    attrs: object
    by_jit: bool


def _pieces(function, capability, slots):
    """Per slot, its candidates as _Pieces, likeliest first: what the JIT's own binder makes of each
    candidate argument (the other arguments held at their first candidates; each parameter is bound
    on its own, and every match is confirmed with the whole call)."""
    base = {name: _argument(options[0], divisible) for name, options, divisible in slots if options}
    result = []
    for index, (name, options, divisible) in enumerate(slots):
        pieces, seen = [], set()
        for kind, value in options:
            argument = _argument((kind, value), divisible)
            piece = _Piece(kind, value, argument, _ABSENT, False)
            if len(base) == len(slots):
                try:
                    made = jit.specialize(function, capability, {**base, name: argument})
                except (TypeError, ValueError):
                    made = None
                if made is not None and made.signature.get(name) == kind and \
                        ((index,) in made.constexprs) == (value is not _ABSENT):
                    piece = _Piece(kind, made.constexprs.get((index,), _ABSENT), argument,
                                   made.attrs.get((index,), _ABSENT), True)
            key = (kind, _ABSENT if piece.value is _ABSENT else (type(piece.value).__name__, jit.key_text(piece.value)))
            if key not in seen:
                seen.add(key)
                pieces.append(piece)
        result.append(pieces)
    return result


def _argument(choice, divisible):
    kind, value = choice
    return jit.stand_in(kind, divisible) if value is _ABSENT else value


def _search(function, slots, suffixes, capability):
    """Try candidates (the likeliest values of every slot first, widening) until every wanted
    hash is found or MAX_CANDIDATES were tried."""
    names = [name for name, _, _ in slots]
    choices = _pieces(function, capability, slots)
    if not all(choices):
        missing = names[[bool(pieces) for pieces in choices].index(False)]
        return {entry.key: NotRecovered(f"no value of {missing} is known to try")
                for hashes in suffixes.values() for entry, _ in hashes.values()}
    explicit = {(index,): [jit.DIVISIBLE] for index, (_, _, divisible) in enumerate(slots) if divisible}
    key_of_function = jit.function_key(function)
    results = {}
    wanted = sum(len(hashes) for hashes in suffixes.values())
    tried = 0
    for tried, picks in enumerate(_best_first([len(pieces) for pieces in choices], MAX_CANDIDATES), start=1):
        chosen = [choices[index][pick] for index, pick in enumerate(picks)]
        signature = {name: piece.type for name, piece in zip(names, chosen)}
        constexprs = {(index,): piece.value for index, piece in enumerate(chosen) if piece.value is not _ABSENT}
        shapes = [explicit]
        if all(piece.by_jit for piece in chosen):
            made = {(index,): piece.attrs for index, piece in enumerate(chosen) if piece.attrs is not _ABSENT}
            shapes = [made] if made == explicit else [made, explicit]
        for attrs in shapes:
            source_hash = jit.fast_source_hash(key_of_function, signature, constexprs, attrs)
            for suffix, hashes in suffixes.items():
                found = jit.fast_cache_hash(source_hash, suffix)
                if found not in hashes:
                    continue
                entry, (options, env, entry_capability) = hashes[found]
                specialization = _confirmed(function, entry_capability, names, chosen, attrs is not explicit,
                                            jit.Specialization(signature, constexprs, attrs))
                if specialization is None or \
                        jit.cache_hash(function, entry_capability, specialization, options, env) != found:
                    continue  # the shortcut disagrees with Triton's own key: keep looking
                del hashes[found]
                results[entry.key] = Recovered(
                    dict(specialization.signature),
                    {names[path[0]]: value for path, value in specialization.constexprs.items()},
                    dict(specialization.attrs), specialization.divisible(), options, env, attrs is not explicit)
                wanted -= 1
        if wanted == 0:
            break
    for hashes in suffixes.values():
        for entry, _ in hashes.values():
            results[entry.key] = NotRecovered(f"none of the {min(tried, MAX_CANDIDATES):,} signatures and constexpr "
                                              "values tried gives its cache key")
    return results


def _confirmed(function, capability, names, chosen, by_jit, specialization):
    """The specialization a candidate stands for: for the JIT's shape, what the JIT's binder makes of
    the whole call (None when that is not the candidate); otherwise the candidate as it is."""
    if not by_jit:
        return specialization
    try:
        made = jit.specialize(function, capability, {name: piece.argument for name, piece in zip(names, chosen)})
    except (TypeError, ValueError):
        return None
    return made if made == specialization else None


def _slots(entry, function, pools):
    """Per parameter of `function`: (name, [(signature type, constexpr value or _ABSENT), ...] most
    likely first, divisible); constexpr candidates from `pools` (None: no candidates, only the
    structure). NotRecovered when the entry's parameters cannot be the function's."""
    compiled = {parameter.name: parameter for parameter in entry.parameters}
    params = jit.parameters(function)
    names = [param.name for param in params]
    unknown = [name for name in compiled if name not in names]
    if unknown:
        raise NotRecovered(f"the function has no parameter {unknown[0]}")
    present = [name for name in names if name in compiled]
    if present != [parameter.name for parameter in entry.parameters]:
        raise NotRecovered("its parameters come in another order than the function's")
    slots = []
    for param in params:
        parameter = compiled.get(param.name)
        if parameter is not None:
            if param.is_constexpr:
                raise NotRecovered(f"{param.name} is a constexpr of the function but a parameter of the compiled kernel")
            slots.append((param.name, [(kind, _ABSENT) for kind in _signature_types(parameter)],
                          parameter.divisibility == 16))
        elif param.is_constexpr:
            default = _ABSENT if param.default is jit.NO_DEFAULT else param.default
            values = _constexpr_candidates(pools, default) if pools is not None else []
            if type(default).__name__ == "constexpr":  # tl.constexpr(4): the JIT may also have had 4
                values = _unique([default, default.value] + values)
            slots.append((param.name, [("constexpr", value) for value in values], False))
        else:  # a runtime parameter the JIT specialized away: an int equal to 1, or None
            slots.append((param.name, [("constexpr", 1), ("constexpr", None)], False))
    return slots


def _signature_types(parameter):
    if ARG_KINDS[parameter.kind].addressed:
        types = ["*" + parameter.type]
        if parameter.type in _UNSIGNED:
            types.append("*" + _UNSIGNED[parameter.type])
        return types
    return list(_SCALAR_SIGNATURES[parameter.type])


def _candidate_pools(ir_text, function):
    """Values a constexpr may have had, by kind, likeliest first: the integers of the IR (most
    frequent first) and the literals of the function's Python source; bools; dtypes the IR uses."""
    from ..spec.dtypes import triton_dtype
    literals = _python_literals(jit.function_source(function))
    found = integer_constants(ir_text)
    likely = [value for value in found if abs(value) < 2 ** 31 - 1][:MAX_INTEGERS]
    integers = _unique(likely + [value for value in literals if type(value) is int] + found)
    return {
        int: integers,
        bool: [True, False],
        str: [value for value in literals if type(value) is str],
        float: [value for value in literals if type(value) is float],
        "dtype": [triton_dtype(name) for name in element_types(ir_text)],
        "none": [None],
    }


def _constexpr_candidates(pools, default):
    """A constexpr's candidates: its default, then values of the default's kind, then the others."""
    first = {bool: bool, int: int, str: str, float: float}.get(type(default), int)
    order = [first] + [kind for kind in (int, bool, str, float, "dtype", "none") if kind is not first]
    values = [] if default is _ABSENT else [default]
    for kind in order:
        values += pools[kind]
    return _unique(values)


def _python_literals(source):
    """The int, float, bool and str literals of a function's source, in order of appearance."""
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return []
    found = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
             and type(node.value) in (int, float, str) and not _is_docstring(tree, node)]
    return _unique(found)


def _is_docstring(tree, node):
    functions = [item for item in ast.walk(tree) if isinstance(item, ast.FunctionDef)]
    return any(function.body and isinstance(function.body[0], ast.Expr) and function.body[0].value is node
               for function in functions)


def _unique(values):
    seen, kept = set(), []
    for value in values:
        key = (type(value).__name__, jit.key_text(value))
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


def _best_first(sizes, limit):
    """At most `limit` index tuples into lists of these sizes, by increasing sum of indexes: the
    likeliest values of every list together first, then one step down in one list, and so on. Lists
    of one value add nothing to the walk."""
    varying = [position for position, size in enumerate(sizes) if size > 1]
    fixed = [0] * len(sizes)
    spans = [sizes[position] - 1 for position in varying]
    tried = 0
    for total in range(sum(spans) + 1):
        for ranks in _with_sum(spans, 0, total):
            picks = list(fixed)
            for position, rank in zip(varying, ranks):
                picks[position] = rank
            yield picks
            tried += 1
            if tried >= limit:
                return


def _with_sum(spans, start, total):
    """Tuples r[start:] with 0 <= r[i] <= spans[i] summing to `total`."""
    if start == len(spans) - 1:
        if total <= spans[start]:
            yield (total,)
        return
    if start == len(spans):
        if total == 0:
            yield ()
        return
    rest = sum(spans[start + 1:])
    for first in range(max(0, total - rest), min(spans[start], total) + 1):
        for tail in _with_sum(spans, start + 1, total - first):
            yield (first,) + tail

