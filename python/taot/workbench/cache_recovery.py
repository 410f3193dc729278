# Recover what a Triton cache entry was compiled from: the signature, constexpr values and
# divisibility attributes of the kernel's Python function whose Triton cache key is the entry's own.
# The cache keeps no signature or constants, only the key's hash (metadata "hash"); the candidates
# come from the function's parameters, the entry's tt.func, the constants in its IR and the literals
# of the function's source, and a candidate counts only when Triton's key for it hashes to exactly
# that value, so what is recovered is exact (and what is not found is reported, never guessed).
import ast
import dataclasses
import hashlib
import textwrap

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource, make_backend
from triton.runtime.cache import get_cache_key, triton_key

from .triton_cache import element_types, integer_constants

MAX_CANDIDATES = 200_000   # keys tried per search (entries of like parameters share one) before giving up
MAX_INTEGERS = 24          # integer constants of the IR tried as constexpr values, most frequent first
DIVISIBILITY = [["tt.divisibility", 16]]

# A parameter's Triton signature types that give the tt.func type the entry shows (Triton's IR is
# signless: a u64 argument is an i64 there; the JIT passes a Python bool as "u1").
_SCALAR_SIGNATURES = {"i32": ("i32",), "i64": ("i64", "u64"), "fp32": ("fp32",), "fp64": ("fp64",),
                      "i1": ("u1", "i1")}
_UNSIGNED = {"i8": "u8", "i16": "u16", "i32": "u32", "i64": "u64"}
_ABSENT = object()  # a candidate that is a runtime parameter (no constexpr value)


class NotRecovered(Exception):
    """The entry's compile inputs could not be recovered; the message says why."""


@dataclasses.dataclass(frozen=True)
class Recovered:
    """An entry's exact compile inputs, as Triton's JIT would pass them to triton.compile."""
    signature: dict    # parameter name -> "*fp32", "i32", "u1", "constexpr", ...
    constexprs: dict   # parameter name -> value (int, float, bool, str, None, triton.language.dtype)
    attrs: dict        # (parameter index,) -> [["tt.divisibility", 16]]
    options: object    # the backend's options object the entry was compiled with
    env: dict          # the cache-invalidating environment variables that were set


def environment_of(metadata):
    """The cache-invalidating environment variables the metadata records (Triton stores them as
    upper-case keys beside the options)."""
    return {key: value for key, value in metadata.items() if key.isupper()}


class Recovery:
    """Recovers entries' inputs; holds the backends and Triton's own key (computed once)."""

    def __init__(self):
        self._backends = {}
        self._triton_key = None

    def backend(self, capability):
        if capability not in self._backends:
            backend = make_backend(GPUTarget("cuda", capability, 32))
            self._backends[capability] = (backend, backend.hash())
        return self._backends[capability]

    def triton_key(self):
        if self._triton_key is None:
            self._triton_key = triton_key()
        return self._triton_key

    def options_of(self, metadata):
        """The options object the metadata was compiled with (its fields are in the metadata)."""
        backend, _ = self.backend(metadata["target"]["arch"])
        defaults = backend.parse_options({})
        values = {field.name: _tupled(metadata[field.name]) for field in dataclasses.fields(defaults)
                  if field.name in metadata}
        try:
            return type(defaults)(**values)
        except (TypeError, AssertionError, ValueError) as error:
            raise NotRecovered(f"its options are not {type(defaults).__name__}'s ({error})") from None

    def cache_hash(self, function, signature, constexprs, attrs, options, capability, env):
        """The hash Triton gives compiling `function` with these inputs: the entry's metadata "hash"."""
        backend, _ = self.backend(capability)
        source = ASTSource(function, dict(signature), dict(constexprs), dict(attrs))
        return hashlib.sha256(get_cache_key(source, backend, options, env).encode()).hexdigest()

    def recover_all(self, entries, function):
        """entry key -> Recovered, or NotRecovered saying why not, for entries of the @triton.jit
        `function`. Entries whose kernels take the same parameters share one search: each candidate's
        source hash is computed once and checked against all of their keys."""
        results, groups = {}, {}
        for entry in entries:
            try:
                slots, suffix, context = self._search_context(entry, function)
            except NotRecovered as problem:
                results[entry.key] = problem
                continue
            group = groups.setdefault(repr([(name, [kind for kind, _ in choices], divisible)
                                            for name, choices, divisible in slots]), {"entries": [], "suffixes": {}})
            group["entries"].append(entry)
            group["suffixes"].setdefault(suffix, {})[entry.triton_hash] = (entry, context)
        for group in groups.values():
            pools = _candidate_pools("\n".join(entry.text("source") for entry in group["entries"]), function)
            slots = _slots(group["entries"][0], function, pools)
            results.update(self._search(function, slots, group["suffixes"]))
        return results

    def recover(self, entry, function):
        """The inputs `entry` was compiled from (see recover_all); raises NotRecovered."""
        result = self.recover_all([entry], function)[entry.key]
        if isinstance(result, NotRecovered):
            raise result
        return result

    def _search_context(self, entry, function):
        """(slots, key suffix, (options, env, capability)) of one entry."""
        metadata = entry.metadata
        if metadata.get("triton_version") != triton.__version__:
            raise NotRecovered(f"compiled by Triton {metadata.get('triton_version')}, not {triton.__version__}")
        slots = _slots(entry, function, None)
        options = self.options_of(metadata)
        env = environment_of(metadata)
        _, backend_hash = self.backend(entry.capability)
        try:
            options_hash = options.hash()
        except OSError as error:  # a library file the options name (libdevice) is not here
            raise NotRecovered(f"its options name a file that is not here ({error.filename})") from None
        return slots, f"-{backend_hash}-{options_hash}-{str(sorted(env.items()))}", (options, env, entry.capability)

    def _search(self, function, slots, suffixes):
        """Try candidates (the likeliest values of every slot first, widening) until every wanted
        hash is found or MAX_CANDIDATES were tried."""
        names = [name for name, _, _ in slots]
        attrs = {(index,): DIVISIBILITY for index, (_, _, divisible) in enumerate(slots) if divisible}
        head = f"{function.cache_key}-{str(attrs)}-"
        prefix = f"{self.triton_key()}-"
        by_name = sorted(range(len(slots)), key=lambda index: names[index])
        choices = [[(kind, _ABSENT if value is _ABSENT else _key_text(value), value) for kind, value in options]
                   for _, options, _ in slots]
        results = {}
        wanted = sum(len(hashes) for hashes in suffixes.values())
        tried = 0
        for tried, picks in enumerate(_best_first([len(options) for options in choices], MAX_CANDIDATES), start=1):
            chosen = [choices[index][pick] for index, pick in enumerate(picks)]
            constants = "-".join(text for _, text, _ in chosen if text is not _ABSENT)
            signature = [chosen[index][0] for index in by_name]
            source_hash = hashlib.sha256(f"{head}{signature}-{constants}".encode()).hexdigest()
            for suffix, hashes in suffixes.items():
                found = hashlib.sha256(f"{prefix}{source_hash}{suffix}".encode()).hexdigest()
                if found not in hashes:
                    continue
                entry, (options, env, capability) = hashes[found]
                signature_map = {name: chosen[index][0] for index, name in enumerate(names)}
                constexprs = {name: chosen[index][2] for index, name in enumerate(names)
                              if chosen[index][1] is not _ABSENT}
                if self.cache_hash(function, signature_map, constexprs, attrs, options, capability, env) != found:
                    continue  # the shortcut disagrees with Triton's own key: keep looking
                del hashes[found]
                results[entry.key] = Recovered(signature_map, constexprs, attrs, options, env)
                wanted -= 1
            if wanted == 0:
                break
        for hashes in suffixes.values():
            for entry, _ in hashes.values():
                results[entry.key] = NotRecovered(f"none of the {min(tried, MAX_CANDIDATES):,} signatures and constexpr "
                                                  "values tried gives its cache key")
        return results


def _slots(entry, function, pools):
    """Per parameter of `function`: (name, [(signature type, constexpr value or _ABSENT), ...] most
    likely first, divisible); constexpr candidates from `pools` (None: no candidates, only the
    structure). NotRecovered when the entry's parameters cannot be the function's."""
    compiled = {parameter.name: parameter for parameter in entry.parameters}
    names = [param.name for param in function.params]
    unknown = [name for name in compiled if name not in names]
    if unknown:
        raise NotRecovered(f"the function has no parameter {unknown[0]}")
    present = [name for name in names if name in compiled]
    if present != [parameter.name for parameter in entry.parameters]:
        raise NotRecovered("its parameters come in another order than the function's")
    slots = []
    for param in function.params:
        parameter = compiled.get(param.name)
        if parameter is not None:
            if param.is_constexpr:
                raise NotRecovered(f"{param.name} is a constexpr of the function but a parameter of the compiled kernel")
            slots.append((param.name, [(kind, _ABSENT) for kind in _signature_types(parameter)],
                          parameter.divisibility == 16))
        elif param.is_constexpr:
            default = param.default if param.has_default else _ABSENT
            values = _constexpr_candidates(pools, default) if pools is not None else []
            if type(default).__name__ == "constexpr":  # tl.constexpr(4): the JIT may also have had 4
                values = _unique([default, default.value] + values)
            slots.append((param.name, [("constexpr", value) for value in values], False))
        else:  # a runtime parameter the JIT specialized away: an int equal to 1, or None
            slots.append((param.name, [("constexpr", 1), ("constexpr", None)], False))
    return slots


def _signature_types(parameter):
    if parameter.kind == "pointer":
        types = ["*" + parameter.type]
        if parameter.type in _UNSIGNED:
            types.append("*" + _UNSIGNED[parameter.type])
        return types
    return list(_SCALAR_SIGNATURES[parameter.type])


def _candidate_pools(ir_text, function):
    """Values a constexpr may have had, by kind, likeliest first: the integers of the IR (most
    frequent first) and the literals of the function's Python source; bools; dtypes the IR uses."""
    from ..spec.dtypes import triton_dtype
    literals = _python_literals(getattr(function, "src", ""))
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
        key = (type(value).__name__, _key_text(value))
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


def _key_text(value):
    """How ASTSource.hash spells a constant."""
    return value.cache_key if hasattr(value, "cache_key") else str(value)


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


def _tupled(value):
    """JSON lists back to the tuples Triton's options hold."""
    if isinstance(value, list):
        return tuple(_tupled(item) for item in value)
    return value

