# Enumerate a kernel's variants: the product of its choices and its config entries, per target, with
# each `where` filter evaluated as soon as the dimensions it reads are bound (so impossible branches
# are never expanded), counted before anything is built; then named, with grids folded.
import array
import hashlib
import itertools
import math
import re
import time
from dataclasses import dataclass, replace

from .keypath import describe
from ..errors import SpecError, TooManyVariants
from .expressions import ExpressionProblem, fold_grid
from .arg_kinds import ARG_KINDS
from ..triton_api.options import ABBREVIATIONS
from .model import ALIGN_ANY, INT, POINTER_NONE, SCALAR

MAX_ID_LENGTH = 100
_MANIFEST_HINTS = {1: 1, 16: 16, "none": 0}
COUNT_SECONDS = 1.0   # how long a refused spec may keep counting to give an exact figure


@dataclass(frozen=True, slots=True)
class Binding:
    """A non-constexpr argument in one variant. align: 16 or 0 (pointers); hint: 1, 16 or 0 (ints);
    block: the block shape of a tensor descriptor, in ints; none: the pointer is None (compiled as a
    constexpr None, so it is not a kernel parameter)."""
    name: str
    kind: str
    type: str          # element dtype for pointers and descriptors, scalar type otherwise
    align: int = None
    hint: int = None
    block: tuple = None
    none: bool = False
    launch_only: bool = False

    @property
    def rules(self):
        """What its kind means (arg_kinds.ArgKind)."""
        return ARG_KINDS[self.kind]

    @property
    def triton_type(self):
        """The type in Triton's signature: "*fp16", "tensordesc<fp16[64, 32]>", "i32", "constexpr"."""
        return self.rules.triton_type(self)


@dataclass(frozen=True, slots=True)
class Variant:
    kernel: str
    id: str
    bindings: tuple    # Binding per non-constexpr argument, in argument order
    config: dict       # config field name -> value (dtype fields hold dtype names)
    grid: tuple        # three postfix programs (lists of op dicts)
    targets: tuple = ()  # names of the targets this variant is compiled for, in the kernel's order


@dataclass(frozen=True)
class Summary:
    """What the enumeration found: `count` variants of `combinations` (the unfiltered product, over
    the union of the targets' values) and every dimension's (label, size), largest first."""
    count: int
    combinations: int
    dimensions: tuple
    seconds: float

    def largest(self, limit=4):
        shown = [f"{label} {size}" for label, size in self.dimensions if size > 1][:limit]
        return ", ".join(shown) if shown else "none"


@dataclass(frozen=True)
class Result:
    kernel: object     # the KernelSpec, with defaults taot derived filled in
    variants: list
    summary: Summary


@dataclass(frozen=True)
class Dimension:
    """One independent choice. `values` in canonical order; `allowed` maps a target name to the
    indexes of the values it may take (targets absent: all)."""
    key: tuple
    label: str
    values: tuple
    allowed: dict = None

    def indexes(self, target_name):
        if self.allowed is None or target_name not in self.allowed:
            return tuple(range(len(self.values)))
        return self.allowed[target_name]


PROGRESS_EVERY = 100_000  # points between two calls of enumerate_variants' progress
STREAM_SHARE_SPAN = 4096  # variants of a stream (LazyVariants) that share values


def enumerate_variants(kernel, label, budget, max_variants, progress=None, keep=True):
    """Every variant of `kernel` that passes its filters on some target, in a stable order.
    SpecError when the filters remove every variant or the default config is among the removed;
    TooManyVariants (fast, counting only) when there are more than `budget`. `progress(kernel name,
    points so far, seconds)` is called every PROGRESS_EVERY points found and variants made.
    `keep`: the result's variants are a list; otherwise a LazyVariants that makes each variant as it
    is iterated (`taot compile --list` of millions: memory holds 8 bytes per variant), unless the
    kernel's config values could give two variants one id (then a list, renamed as for a build)."""
    start = time.perf_counter()
    report = progress or (lambda *args: None)
    dimensions = _dimensions(kernel)
    position = {dimension.key: index for index, dimension in enumerate(dimensions)}
    points = _Points(dimensions, kernel.targets)
    for target_index, target in enumerate(kernel.targets):
        walk = _Walk(kernel, label, dimensions, position, target)
        for key in walk.points(budget, lambda: _too_many(kernel, label, dimensions, walk, budget, max_variants,
                                                          start)):
            points.add(key, target_index)
            if len(points) % PROGRESS_EVERY == 0:
                report(kernel.name, len(points), time.perf_counter() - start)
    points.finish()
    if len(points) > budget:
        raise _too_many(kernel, label, dimensions, None, budget, max_variants, start, at_least=len(points))
    combinations = _combinations(dimensions, kernel.targets)
    if not points:
        raise SpecError(label, f"{kernel.key}.where", f"filters that keep at least one of the {combinations} variants",
                        "filters that remove all of them")
    kernel = _derive_defaults(kernel, label, dimensions, position, points)
    _check_default(kernel, label, position, points)
    made = LazyVariants(kernel, label, position, points,
                        lambda count: report(kernel.name, count, time.perf_counter() - start),
                        share_span=math.inf if keep else STREAM_SHARE_SPAN)
    variants = _unique(list(made)) if keep or not _ids_unique_by_construction(kernel) else made
    sizes = tuple(sorted(((dimension.label, len(dimension.values)) for dimension in dimensions),
                         key=lambda item: -item[1]))
    summary = Summary(len(points), combinations, sizes, time.perf_counter() - start)
    return Result(kernel, variants, summary)


class _Points:
    """The points that pass the filters, each a number (its value indexes in mixed radix, the first
    dimension most significant, so numbers sort as the index tuples do) and the set of targets it
    passed on (a bit per target): 8 bytes a point and its targets, where tuples took hundreds."""

    def __init__(self, dimensions, targets):
        self.dimensions, self.targets = dimensions, tuple(targets)
        self.sizes = [len(dimension.values) for dimension in dimensions]
        total = math.prod(self.sizes) * len(self.targets)
        self._numbers = array.array("q") if total < 2 ** 63 else []  # (past 64 bits, Python ints)
        self._masks = None
        self._count = 0

    def add(self, key, target_index):
        number = 0
        for index, size in zip(key, self.sizes):
            number = number * size + index
        self._numbers.append(number * len(self.targets) + target_index)
        self._count += 1

    def finish(self):
        """Sorts the points and merges each one's targets (call once, after the last add)."""
        merged = array.array("q") if isinstance(self._numbers, array.array) else []
        masks = array.array("Q") if len(self.targets) <= 64 else []
        width = len(self.targets)
        numbers = self._numbers
        in_order = all(earlier < later for earlier, later in zip(numbers, itertools.islice(numbers, 1, None)))
        for combined in numbers if in_order else sorted(numbers):  # (a walk without filters is in order)
            number, target_index = divmod(combined, width)
            if merged and merged[-1] == number:
                masks[-1] |= 1 << target_index
            else:
                merged.append(number)
                masks.append(1 << target_index)
        self._numbers, self._masks, self._count = merged, masks, len(merged)

    def __len__(self):
        return self._count

    def __iter__(self):
        """(every dimension's value in canonical order, the names of its targets) per point, in order."""
        names = {}
        for number, mask in zip(self._numbers, self._masks):
            key = []
            for size in reversed(self.sizes):
                number, index = divmod(number, size)
                key.append(index)
            key.reverse()
            if mask not in names:
                names[mask] = tuple(target.name for bit, target in enumerate(self.targets) if mask >> bit & 1)
            yield _values_of(self.dimensions, key), names[mask]


class LazyVariants:
    """A kernel's variants, made (named, grids folded) each time they are iterated rather than held."""

    def __init__(self, kernel, label, position, points, progress, share_span=math.inf):
        """`share_span`: how many variants in a row share values (_Shared); a stream's variants are
        dropped as they go, so what they share need not outlive a few thousand of them."""
        self._kernel, self._label, self._position, self._points = kernel, label, position, points
        self._progress, self._share_span = progress, share_span

    def __len__(self):
        return len(self._points)

    def __iter__(self):
        kernel, shared = self._kernel, _Shared()
        abbreviations = _abbreviations(kernel.config)
        for made, (values, targets) in enumerate(self._points, start=1):
            if made % PROGRESS_EVERY == 0:
                self._progress(made)
            if made % self._share_span == 0:
                shared = _Shared()  # (values the variants made before share, for a stream: a list keeps its own)
            bindings, config = _resolve(kernel, self._position, values, shared)
            variant_id = _variant_id(kernel, bindings, config, abbreviations)
            grid = shared.grid(kernel, self._label, bindings, config, variant_id)
            yield Variant(kernel.name, variant_id, bindings, config, grid, targets)


class _Shared:
    """Values that recur across a kernel's variants made once and shared (bindings, configs, target
    lists, grids folded for the same config): a spec of millions of variants holds each variant's id
    and little else. Shared values are never changed after they are made."""

    def __init__(self):
        self._values = {}
        self._bindings = {}
        self._configs = {}
        self._grids = {}
        self._runtime_args = None
        self._field_sources = None

    def value(self, value):
        return self._values.setdefault(value, value)

    def binding(self, arg, dtype, align, hint, block, none):
        key = (arg.name, dtype, align, hint, block, none)
        found = self._bindings.get(key)
        if found is None:
            found = self._bindings[key] = Binding(arg.name, arg.kind, dtype, align=align, hint=hint, block=block,
                                                  none=none, launch_only=arg.launch_only)
        return found

    def runtime_args(self, kernel, position):
        """Per call argument: (arg, where its dtype comes from, where its alignment comes from or None)."""
        if self._runtime_args is None:
            self._runtime_args = [(arg, _arg_dtype_source(arg, position),
                                   _arg_align_source(arg, position) if arg.rules.has_align else None)
                                  for arg in kernel.args if arg.is_runtime]
        return self._runtime_args

    def field_sources(self, kernel, position):
        """Per config field: (name, where its value comes from)."""
        if self._field_sources is None:
            self._field_sources = [(field.name, _field_source(kernel, position, field.name)) for field in kernel.config]
        return self._field_sources

    def config(self, config):
        key = tuple((name, type(value), value) for name, value in config.items())
        return self._configs.setdefault(key, config)

    def grid(self, kernel, label, bindings, config, variant_id):
        """_fold_grid, once per (int config values, arguments compiled ==1): what the fold reads."""
        key = (tuple(config[field.name] for field in kernel.config if field.kind == INT),
               tuple(binding.name for binding in bindings if binding.hint == 1))
        if key not in self._grids:
            self._grids[key] = _fold_grid(kernel, label, bindings, config, variant_id)
        return self._grids[key]


def _combinations(dimensions, targets):
    """The unfiltered product over every target's values together."""
    return math.prod(len(dimension.values) for dimension in dimensions)


def _values_of(dimensions, key):
    return [dimension.values[index] for dimension, index in zip(dimensions, key)]


def _too_many(kernel, label, dimensions, walk, budget, max_variants, start, at_least=None):
    """The error for a kernel with more than `budget` variants: the count (exact when counting it
    takes under COUNT_SECONDS), the product and its largest dimensions."""
    if at_least is None:
        exact = walk.count(deadline=start + COUNT_SECONDS)
        count = f"{exact:,}" if exact is not None else f"more than {budget:,}"
        if len(kernel.targets) > 1:
            count += f" on {walk.target.name} alone"
    else:
        count = f"at least {at_least:,}"
    sizes = sorted(((dimension.label, len(dimension.values)) for dimension in dimensions), key=lambda item: -item[1])
    largest = ", ".join([f"{name} {size}" for name, size in sizes if size > 1][:6]) or "none"
    combinations = _combinations(dimensions, kernel.targets)
    limit = f"at most {budget:,} variants (--max-variants)" if budget == max_variants else \
        f"at most {budget:,} more variants (--max-variants {max_variants:,}; the kernels before it make " \
        f"{max_variants - budget:,})"
    return TooManyVariants(label, kernel.key, limit,
                           f"{count} of {combinations:,} combinations (largest dimensions: {largest}); narrow "
                           "them with where filters or config lists, or raise --max-variants")


# ---- dimensions ----

def _dimensions(kernel):
    """Every independent choice, in canonical order (the last varies fastest): type variables, then
    per argument its type and alignment or hint, then options varied on their own, then the config
    entries."""
    dimensions = [Dimension(("typevar", name), name, values) for name, values in kernel.typevars.items()]
    config_names = set(kernel.configs[0]) if kernel.configs else set()
    for arg in kernel.args:
        if arg.kind == SCALAR:
            dimensions.append(Dimension(("scalar", arg.name), arg.name, _scalar_forms(arg)))
            continue
        if arg.rules.has_align and arg.none and arg.typevar is None:
            values = [(dtype, align) for dtype in arg.choices for align in arg.aligns if align != POINTER_NONE]
            dimensions.append(Dimension(("pointer", arg.name), arg.name, tuple(values) + ((arg.choices[0],
                                                                                           POINTER_NONE),)))
            continue
        if arg.typevar is None and _has_own_choice(arg, kernel, config_names):
            values = arg.choices
            if arg.value_source == "option" and arg.name not in kernel.options:
                values = next(field.values for field in kernel.config if field.name == arg.name)
            label = f"{arg.name} type" if arg.is_runtime else arg.name
            dimensions.append(Dimension(("choice", arg.name), label, tuple(values)))
        if arg.rules.has_align:
            dimensions.append(Dimension(("align", arg.name), f"{arg.name} align", arg.aligns))
        if arg.rules.has_hint:
            dimensions.append(Dimension(("hint", arg.name), f"{arg.name} hint", arg.hints))
    for name, option in kernel.options.items():
        allowed = None
        if option.per_target is not None:
            allowed = {target: tuple(option.values.index(value) for value in values)
                       for target, values in option.per_target.items()}
        dimensions.append(Dimension(("option", name), name, option.values, allowed))
    if kernel.configs:
        dimensions.append(Dimension(("configs",), "configs", tuple(kernel.configs), kernel.config_targets))
    return dimensions


def _scalar_forms(arg):
    """A scalar argument's forms, one dimension: (type, hint or None, is None) per int type and
    hint, per float type, and the None form."""
    forms = []
    for choice in arg.choices:
        if arg.rules.is_float(choice):
            forms.append((choice, None, False))
        else:
            forms += [(choice, hint, False) for hint in arg.hints]
    if arg.none:
        forms.append((arg.choices[0], None, True))
    return tuple(forms)


def _has_own_choice(arg, kernel, config_names):
    """Whether a non-typevar argument varies in its own dimension (constexprs set by the config
    entries or by an option of the same name do not)."""
    if arg.is_runtime:
        return True
    if arg.value_source == "configs":
        return False
    if arg.value_source == "option":
        return arg.name not in kernel.options and arg.name not in config_names
    return True


def _field_source(kernel, position, name):
    """(dimension index, function of its value) giving config field or type variable `name`."""
    identity = _identity_value
    if ("typevar", name) in position:
        return position[("typevar", name)], identity
    arg = next((arg for arg in kernel.args if arg.name == name), None)
    if arg is not None and arg.typevar is not None:
        return position[("typevar", arg.typevar)], identity
    if ("choice", name) in position and arg is not None and not arg.is_runtime:
        return position[("choice", name)], identity
    if ("option", name) in position:
        return position[("option", name)], identity
    return position[("configs",)], lambda entry: entry[name]


def _identity_value(value):
    return value


def _arg_dtype_source(arg, position):
    """(dimension index, function of its value) giving a runtime argument's dtype or scalar type."""
    if ("scalar", arg.name) in position:
        return position[("scalar", arg.name)], lambda value: value[0]
    if ("pointer", arg.name) in position:
        return position[("pointer", arg.name)], lambda value: value[0]
    if arg.typevar is not None:
        return position[("typevar", arg.typevar)], _identity_value
    return position[("choice", arg.name)], _identity_value


def _arg_align_source(arg, position):
    """(dimension index, function of its value) giving a pointer's align choice (16, "any", POINTER_NONE)."""
    if ("pointer", arg.name) in position:
        return position[("pointer", arg.name)], lambda value: value[1]
    return position[("align", arg.name)], _identity_value


# ---- what filters read ----

@dataclass(frozen=True)
class _Slot:
    """A value a filter reads: computed from the current values of dimensions `deps`."""
    deps: tuple
    compute: object   # function of the list of current dimension values


def _slot(kernel, position, key, target):
    if key[0] == "value":
        name = key[1]
        if name == "target" and not _is_kernel_name(kernel, name):
            return _Slot((), lambda current, value=target.name: value)
        if name == "arch" and not _is_kernel_name(kernel, name):  # (a kernel with AMD targets may not read it)
            return _Slot((), lambda current, value=target.capability or 0: value)
        if name == "vendor" and not _is_kernel_name(kernel, name):
            return _Slot((), lambda current, value=target.vendor: value)
        index, read = _field_source(kernel, position, name)
        return _Slot((index,), lambda current: read(current[index]))
    _, name, attribute = key
    arg = next(arg for arg in kernel.args if arg.name == name)
    if attribute in ("dtype", "type"):
        index, read = _arg_dtype_source(arg, position)
        if attribute == "dtype" or not arg.rules.addressed:
            return _Slot((index,), lambda current: read(current[index]))
        if not arg.rules.has_block:
            return _Slot((index,), lambda current: arg.rules.triton_type(Binding(name, arg.kind, read(current[index]))))
        blocks = [dim if isinstance(dim, int) else _field_source(kernel, position, dim) for dim in arg.block]
        deps = (index,) + tuple(dim[0] for dim in blocks if not isinstance(dim, int))

        def descriptor_type(current):
            dims = tuple(dim if isinstance(dim, int) else dim[1](current[dim[0]]) for dim in blocks)
            return arg.rules.triton_type(Binding(name, arg.kind, read(current[index]), block=dims))
        return _Slot(deps, descriptor_type)
    if ("scalar", name) in position:  # a scalar's form: (type, hint, is None)
        index = position[("scalar", name)]
        part = {"none": 2, "hint": 1}.get(attribute)
        if part is None:  # its align
            return _Slot((), lambda current: None)
        return _Slot((index,), lambda current: current[index][part])
    if attribute in ("align", "none"):
        if not arg.rules.has_align:
            return _Slot((), lambda current, value=(False if attribute == "none" else None): value)
        index, read = _arg_align_source(arg, position)
        if attribute == "none":
            return _Slot((index,), lambda current: read(current[index]) == POINTER_NONE)
        return _Slot((index,), lambda current: None if read(current[index]) == POINTER_NONE else read(current[index]))
    if not arg.rules.has_hint:
        return _Slot((), lambda current: None)
    index = position[("hint", name)]
    return _Slot((index,), lambda current: current[index])


def _is_kernel_name(kernel, name):
    return any(arg.name == name for arg in kernel.args) or name in kernel.typevars or \
        any(field.name == name for field in kernel.config)


class _Walk:
    """A depth-first walk over one target's product: dimensions that filters read come first, in
    the order that completes the cheapest filter soonest; each filter runs at the depth where its
    last dimension is bound. Dimensions no filter reads form a plain product at the end."""

    def __init__(self, kernel, label, dimensions, position, target):
        self.kernel, self.label, self.dimensions, self.target = kernel, label, dimensions, target
        self.allowed = [dimension.indexes(target.name) for dimension in dimensions]
        slot_keys = []
        for where in kernel.where:
            slot_keys += [key for key in where.slots if key not in slot_keys]
        self.slots = [_slot(kernel, position, key, target) for key in slot_keys]
        self.filters = [(where, index, tuple(slot_keys.index(key) for key in where.slots))
                        for index, where in enumerate(kernel.where)]
        filter_deps = [set().union(*(self.slots[s].deps for s in slots)) for _, _, slots in self.filters]
        self.prefix = self._order(filter_deps)
        placed = set(self.prefix)
        self.tail = [index for index in range(len(dimensions)) if index not in placed]
        self.tail_size = math.prod(len(self.allowed[index]) for index in self.tail)
        depth_of = {dimension: depth for depth, dimension in enumerate(self.prefix)}
        self.slots_at = [[] for _ in range(len(self.prefix) + 1)]
        for s, slot in enumerate(self.slots):
            self.slots_at[max((depth_of[d] + 1 for d in slot.deps), default=0)].append(s)
        self.filters_at = [[] for _ in range(len(self.prefix) + 1)]
        for number, deps in enumerate(filter_deps):
            self.filters_at[max((depth_of[d] + 1 for d in deps), default=0)].append(self.filters[number])

    def _order(self, filter_deps):
        sizes = [len(indexes) for indexes in self.allowed]
        order, placed, pending = [], set(), [deps for deps in filter_deps if deps]
        while pending:
            cheapest = min(pending, key=lambda deps: math.prod(sizes[d] for d in deps - placed))
            for dimension in sorted(cheapest - placed):
                order.append(dimension)
                placed.add(dimension)
            pending = [deps for deps in pending if not deps <= placed]
        return order

    def points(self, budget, too_many):
        """Yields the index tuple (canonical order) of every point that passes the filters; calls
        too_many() for the error to raise as soon as the count passes `budget`."""
        survivors = []
        count = 0
        for prefix in self._walk():
            survivors.append(prefix)
            count += self.tail_size
            if count > budget:
                raise too_many()
        tail_choices = [self.allowed[index] for index in self.tail]
        for prefix in survivors:
            for tail in itertools.product(*tail_choices):
                key = [0] * len(self.dimensions)
                for dimension, index in zip(self.prefix, prefix):
                    key[dimension] = index
                for dimension, index in zip(self.tail, tail):
                    key[dimension] = index
                yield tuple(key)

    def count(self, deadline):
        """The number of points that pass the filters, or None if counting runs past `deadline`."""
        count = 0
        for steps, _ in enumerate(self._walk()):
            count += self.tail_size
            if steps % 4096 == 0 and time.perf_counter() > deadline:
                return None
        return count

    def _walk(self):
        current = [None] * len(self.dimensions)
        slot_values = [None] * len(self.slots)
        if not self._enter(0, current, slot_values):
            return
        chosen = [0] * len(self.prefix)
        yield from self._visit(0, current, slot_values, chosen)

    def _visit(self, depth, current, slot_values, chosen):
        if depth == len(self.prefix):
            yield tuple(chosen)
            return
        dimension = self.prefix[depth]
        values = self.dimensions[dimension].values
        for index in self.allowed[dimension]:
            current[dimension] = values[index]
            chosen[depth] = index
            if self._enter(depth + 1, current, slot_values):
                yield from self._visit(depth + 1, current, slot_values, chosen)

    def _enter(self, depth, current, slot_values):
        """Computes the slots complete at `depth` and runs its filters; False when one fails."""
        for s in self.slots_at[depth]:
            slot_values[s] = self.slots[s].compute(current)
        for where, number, slots in self.filters_at[depth]:
            try:
                if not where.holds([slot_values[s] for s in slots]):
                    return False
            except Exception as error:  # e.g. comparing a dtype name with an int: the filter is wrong
                bound = {self.dimensions[d].label: current[d] for d in self.prefix[:depth]}
                raise SpecError(self.label, f"{self.kernel.key}.where[{number}]",
                                "a filter that evaluates for every variant",
                                f"{describe(where.text)}, which {_evaluation_problem(error)} "
                                f"with {_describe_point(bound, self.target)}") from None
        return True


_KINDS = {"str": "a name (dtype, type or string)", "int": "a number", "float": "a number", "bool": "a truth value",
          "NoneType": "None"}


def _evaluation_problem(error):
    """What went wrong evaluating a filter, in the spec's terms rather than Python's exception classes."""
    if isinstance(error, ZeroDivisionError):
        return "divides by zero"
    if isinstance(error, TypeError):
        kinds = re.findall(r"'(\w+)'", str(error))
        operation = re.search(r"'([^']+)' not supported", str(error))
        named = [_KINDS.get(kind, kind) for kind in kinds if kind in _KINDS]
        if operation and len(named) >= 2:
            return f"applies {operation.group(1)} to {named[-2]} and {named[-1]}"
        return "combines values of different kinds"
    return f"cannot be evaluated ({error})"


def _describe_point(bound, target):
    parts = [f"{label} = {describe(_plain(value))}" for label, value in bound.items()]
    return ", ".join(parts + [f"target {target.name}"])


def _plain(value):
    return dict(value) if isinstance(value, dict) else value


# ---- one point -> bindings and config ----

def _resolve(kernel, position, values, shared):
    """(bindings, config) of one point, given every dimension's value in canonical order; bindings
    and config equal to earlier ones are the earlier objects (`shared`, a _Shared)."""
    bindings = []
    for arg, dtype_source, align_source in shared.runtime_args(kernel, position):
        index, read = dtype_source
        dtype = read(values[index])
        align = hint = block = None
        none = False
        if align_source is not None:
            index, read = align_source
            choice = read(values[index])
            none = choice == POINTER_NONE
            align = 0 if choice in (ALIGN_ANY, POINTER_NONE) else 16
        if ("scalar", arg.name) in position:
            _, form_hint, none = values[position[("scalar", arg.name)]]
            hint = 0 if form_hint is None else _MANIFEST_HINTS[form_hint]
        elif arg.rules.has_hint:
            hint = _MANIFEST_HINTS[values[position[("hint", arg.name)]]]
        if arg.rules.has_block:
            block = tuple(dim if isinstance(dim, int) else _field_value(kernel, position, values, dim)
                          for dim in arg.block)
        bindings.append(shared.binding(arg, dtype, align, hint, block, none))
    config = {name: read(values[index]) for name, (index, read) in shared.field_sources(kernel, position)}
    return shared.value(tuple(bindings)), shared.config(config)


def _field_value(kernel, position, values, name):
    index, read = _field_source(kernel, position, name)
    return read(values[index])


def _fold_grid(kernel, label, bindings, config, variant_id):
    if kernel.grid is None:
        return None  # no grid of its own
    values = {field.name: config[field.name] for field in kernel.config if field.kind == INT}
    ones = {binding.name for binding in bindings if binding.hint == 1}
    programs = []
    for index, tree in enumerate(kernel.grid):
        try:
            programs.append(fold_grid(tree, values, ones))
        except ExpressionProblem as problem:
            raise SpecError(label, f"{kernel.key}.grid[{index}]", "a grid expression that can be computed",
                            f"{describe(kernel.grid_text[index])}: {problem} in variant {variant_id}") from None
    return tuple(programs)


# ---- the default config ----

def _derive_defaults(kernel, label, dimensions, position, points):
    """Defaults taot chose (fields the spec gave no default for) are those of the first config entry
    that some variant has, for fields the entries set; for the others, the field's first value
    that some variant has (a `where` filter may leave a rule's field only `true`)."""
    if all(field.default_given for field in kernel.config):
        return kernel
    entry = {}
    if kernel.configs:
        configs_index = position[("configs",)]
        entry_index = min(dimensions[configs_index].values.index(values[configs_index]) for values, _ in points)
        entry = kernel.configs[entry_index]
    fields = []
    for field in kernel.config:
        if not field.default_given and field.name in entry:
            field = replace(field, default=entry[field.name])
        elif not field.default_given:
            index, read = _field_source(kernel, position, field.name)
            kept = {_value_key(read(values[index])) for values, _ in points}
            if _value_key(field.default) not in kept:
                field = replace(field, default=next(value for value in field.values if _value_key(value) in kept))
        fields.append(field)
    return replace(kernel, config=tuple(fields))


def _value_key(value):
    return (type(value).__name__, value)  # keeps True apart from 1


def _check_default(kernel, label, position, points):
    default = {field.name: field.default for field in kernel.config}
    if not all(field.default_given for field in kernel.config):
        return  # taot chose it; the runtime prefers the variants closest to it
    sources = [(_value_key(default[field.name]), *_field_source(kernel, position, field.name))
               for field in kernel.config]
    if any(all(_value_key(read(values[index])) == wanted for wanted, index, read in sources) for values, _ in points):
        return
    text = ", ".join(f"{name} = {describe(value)}" for name, value in default.items())
    raise SpecError(label, f"{kernel.key}.default", "a default config that some variant has after the where filters",
                    f"{text}, which the filters remove")


# ---- ids ----

def _abbreviations(fields):
    """Short names for config fields in ids: initials for constexprs (BLOCK_SIZE -> BS), fixed letters
    for options (num_warps -> w); fields whose short names collide use their full names."""
    short = {}
    for field in fields:
        if field.is_option and not field.is_constexpr:
            short[field.name] = ABBREVIATIONS.get(field.name, field.name)
        else:
            short[field.name] = "".join(part[0] for part in field.name.split("_") if part) or field.name
    counts = {}
    for abbreviation in short.values():
        counts[abbreviation] = counts.get(abbreviation, 0) + 1
    return {name: (abbreviation if counts[abbreviation] == 1 else name) for name, abbreviation in short.items()}


def _value_token(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value) if value >= 0 else "m" + str(-value)
    if isinstance(value, float):
        return repr(value).replace("-", "m").replace("+", "").replace(".", "p")
    text = "".join(character for character in str(value) if character.isascii() and character.isalnum())
    return text or "empty"


def _variant_id(kernel, bindings, config, abbreviations):
    args = {arg.name: arg for arg in kernel.args}
    tokens = [kernel.name] + [token for token in (binding.rules.id_token(binding, args[binding.name]) for binding in bindings)
                              if token is not None]
    tokens += [abbreviations[name] + _value_token(value) for name, value in config.items()]
    return shorten_id("_".join(tokens))


def variant_id(kernel, bindings, config):
    """The id a variant of `kernel` with these bindings and config gets (as enumeration names them),
    for variants made without a spec (taot import-cache)."""
    return _variant_id(kernel, bindings, config, _abbreviations(kernel.config))


def shorten_id(full_id):
    """Ids longer than MAX_ID_LENGTH keep a readable prefix and end in a hash of the full id."""
    if len(full_id) <= MAX_ID_LENGTH:
        return full_id
    digest = hashlib.sha256(full_id.encode()).hexdigest()[:12]
    return full_id[:MAX_ID_LENGTH - len(digest) - 1].rstrip("_") + "_" + digest


def _unique(variants):
    """Ids are unique by construction; should two still meet, each gets a hash of its content appended."""
    counts = {}
    for variant in variants:
        counts[variant.id] = counts.get(variant.id, 0) + 1
    result = []
    for variant in variants:
        if counts[variant.id] > 1:
            content = repr((variant.bindings, sorted(variant.config.items(), key=lambda item: item[0])))
            suffix = hashlib.sha256(content.encode()).hexdigest()[:8]
            variant = replace(variant, id=shorten_id(variant.id + "_" + suffix))
        result.append(variant)
    return result


def _ids_unique_by_construction(kernel):
    """Whether no two variants of `kernel` can get one id: every config field's values have distinct id
    tokens ("a-b" and "ab", or True and 1, do not). Where they may collide, enumeration keeps the
    variants to rename the ones that meet (_unique), also for a stream."""
    return all(len({_value_token(value) for value in field.values}) == len(field.values) for field in kernel.config)


def check_unique_ids(variants_by_kernel, label):
    """Variant ids name artifact folders, so they must be unique across the library's kernels."""
    owner = {}
    for kernel_name, variants in variants_by_kernel.items():
        for variant in variants:
            if variant.id in owner and owner[variant.id] != kernel_name:
                raise SpecError(label, "kernel", "kernel names whose variant ids do not collide",
                                f"variant id {variant.id} from both {owner[variant.id]} and {kernel_name} "
                                "(rename one of the kernels)")
            owner[variant.id] = kernel_name
