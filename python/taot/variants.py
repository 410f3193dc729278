# Enumerate a kernel's variants: the product of all choices, filtered, named, with grids folded.
import hashlib
import itertools
from dataclasses import dataclass

from .checks import describe
from .errors import SpecError
from .expressions import ArgView, ExpressionProblem, fold_grid
from .model import ALIGN_ANY, INT, POINTER, TENSORDESC

MAX_ID_LENGTH = 100
OPTION_ABBREVIATIONS = {"num_warps": "w", "num_stages": "s", "num_ctas": "c", "maxnreg": "r",
                        "enable_fp_fusion": "fpfus", "enable_reflect_ftz": "ftz",
                        "launch_cooperative_grid": "coop", "launch_pdl": "pdl", "debug": "dbg",
                        "sanitize_overflow": "sov"}
_MANIFEST_HINTS = {1: 1, 16: 16, "none": 0}


@dataclass(frozen=True)
class Binding:
    """A non-constexpr argument in one variant. align: 16 or 0 (pointers); hint: 1, 16 or 0 (ints);
    block: the block shape of a tensor descriptor, in ints."""
    name: str
    kind: str
    type: str          # element dtype for pointers and descriptors, scalar type otherwise
    align: int = None
    hint: int = None
    block: tuple = None

    @property
    def triton_type(self):
        """The type in Triton's signature: "*fp16", "tensordesc<fp16[64, 32]>", "i32"."""
        if self.kind == POINTER:
            return "*" + self.type
        if self.kind == TENSORDESC:
            return f"tensordesc<{self.type}[{', '.join(map(str, self.block))}]>"
        return self.type


@dataclass(frozen=True)
class Variant:
    kernel: str
    id: str
    bindings: tuple    # Binding per non-constexpr argument, in argument order
    config: dict       # config field name -> value (dtype fields hold dtype names)
    grid: tuple        # three postfix programs (lists of op dicts)


def enumerate_variants(kernel, label):
    """Every variant of `kernel` that passes its filters, in a stable order; SpecError when the filters
    remove every variant or the default config is among the removed."""
    dimensions = _dimensions(kernel)
    abbreviations = _abbreviations(kernel.config)
    total = 0
    variants = []
    for values in itertools.product(*(choices for _, choices in dimensions)):
        total += 1
        choice = {key: value for (key, _), value in zip(dimensions, values)}
        bindings, config, views = _resolve(kernel, choice)
        if not _passes(kernel, label, config, views, bindings):
            continue
        variant_id = _variant_id(kernel.name, bindings, config, abbreviations)
        grid = _fold_grid(kernel, label, bindings, config, variant_id)
        variants.append(Variant(kernel.name, variant_id, bindings, config, grid))
    if not variants:
        raise SpecError(label, f"{kernel.key}.where", f"filters that keep at least one of the {total} variants",
                        "filters that remove all of them")
    _check_default(kernel, label, variants)
    return _unique(variants)


def _dimensions(kernel):
    """(key, choices) for every independent choice; the last varies fastest."""
    dimensions = [(("typevar", name), values) for name, values in kernel.typevars.items()]
    for arg in kernel.args:
        if arg.typevar is None:
            dimensions.append((("choice", arg.name), arg.choices))
        if arg.kind == POINTER:
            dimensions.append((("align", arg.name), arg.aligns))
        if arg.kind == INT:
            dimensions.append((("hint", arg.name), arg.hints))
    dimensions += [(("option", name), values) for name, values in kernel.options.items()]
    return dimensions


def _resolve(kernel, choice):
    """(bindings, config, filter namespace) for one point of the product."""
    bindings, config, views = [], {}, {}
    for arg in kernel.args:
        value = choice[("typevar", arg.typevar)] if arg.typevar else choice[("choice", arg.name)]
        if not arg.is_runtime:
            config[arg.name] = value
            continue
        align = choice.get(("align", arg.name))
        hint = choice.get(("hint", arg.name))
        block = None
        if arg.kind == TENSORDESC:
            block = tuple(dim if isinstance(dim, int) else choice[("choice", dim)] for dim in arg.block)
        binding = Binding(arg.name, arg.kind, value, align=None if align is None else (0 if align == ALIGN_ANY else 16),
                          hint=None if hint is None else _MANIFEST_HINTS[hint], block=block)
        bindings.append(binding)
        views[arg.name] = ArgView(value, binding.triton_type, align, hint)
    for name in kernel.options:
        config[name] = choice[("option", name)]
    namespace = dict(config)
    namespace.update({name: choice[("typevar", name)] for name in kernel.typevars})
    namespace.update(views)
    return tuple(bindings), config, namespace


def _passes(kernel, label, config, namespace, bindings):
    for index, where in enumerate(kernel.where):
        try:
            if not where.holds(namespace):
                return False
        except Exception as error:  # e.g. comparing a dtype name with an int: the filter is wrong
            raise SpecError(label, f"{kernel.key}.where[{index}]", "a filter that evaluates for every variant",
                            f"{describe(where.text)}, which raised {type(error).__name__}: {error} "
                            f"with {_describe_point(config, bindings)}") from None
    return True


def _describe_point(config, bindings):
    parts = [f"{binding.name}: {binding.type}" for binding in bindings]
    parts += [f"{name} = {describe(value)}" for name, value in config.items()]
    return ", ".join(parts)


def _fold_grid(kernel, label, bindings, config, variant_id):
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


def _check_default(kernel, label, variants):
    default = {field.name: field.default for field in kernel.config}
    if any(variant.config == default for variant in variants):
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
        if field.is_option:
            short[field.name] = OPTION_ABBREVIATIONS.get(field.name, field.name)
        else:
            short[field.name] = "".join(part[0] for part in field.name.split("_") if part) or field.name
    counts = {}
    for abbreviation in short.values():
        counts[abbreviation] = counts.get(abbreviation, 0) + 1
    return {name: (abbreviation if counts[abbreviation] == 1 else name) for name, abbreviation in short.items()}


def _binding_token(binding):
    if binding.kind == POINTER:
        return binding.type + ("a16" if binding.align == 16 else "")
    if binding.kind == INT:
        return binding.type + {16: "d16", 1: "eq1", 0: ""}[binding.hint]
    return binding.type


def _value_token(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value) if value >= 0 else "m" + str(-value)
    if isinstance(value, float):
        return repr(value).replace("-", "m").replace("+", "").replace(".", "p")
    return str(value)


def _variant_id(kernel_name, bindings, config, abbreviations):
    tokens = [kernel_name] + [_binding_token(binding) for binding in bindings]
    tokens += [abbreviations[name] + _value_token(value) for name, value in config.items()]
    return shorten_id("_".join(tokens))


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
            variant = Variant(variant.kernel, shorten_id(variant.id + "_" + suffix), variant.bindings,
                              variant.config, variant.grid)
        result.append(variant)
    return result


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
