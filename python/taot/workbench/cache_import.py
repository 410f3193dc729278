# Make a library from the kernels a Triton cache holds (taot import-cache): each cache entry becomes
# one image of a variant, the entries of one @triton.jit function one kernel. The cubins are copied,
# not compiled again; beside manifest.json goes a spec that compiles the same variants.
#
# A kernel is imported exactly when its Python file is still there and the entries' compile inputs
# can be recovered from it (cache_recovery: the inputs whose Triton cache key is the entry's): its
# spec is validated and enumerated like any other, and every entry is matched to the (variant,
# target) that spec compiles, so the ids and the manifest are those `taot compile` of the spec gives.
# Otherwise the kernel is imported from its IR alone: its runtime parameters and Triton options are
# known, its constexpr values are not (they are compiled into the cubins), and the spec says so.
import dataclasses
import hashlib
import json
import os
import re
import tomllib
from pathlib import Path

from ..compile import artifacts
from ..spec import source as kernel_source
from ..compile.engine import plan_jobs, remove_stale_artifacts
from . import cache_recovery
from .cache_recovery import NotRecovered
from ..spec.keypath import describe
from ..spec.dtypes import DTYPES, spec_dtype_name, triton_dtype
from ..errors import Problem, SpecError, TaotError
from ..spec.expressions import ExpressionProblem, fold_grid, parse_grid
from ..fsutil import canonical_json, write_if_changed
from ..compile.ir_files import DEFAULT_MODE
from ..compile.jobs import INPUTS_FORMAT, json_safe, variant_hash
from ..library.manifest import artifact_dir, build_manifest, render
from ..spec.arg_kinds import ARG_KINDS, SIGNATURE_SCALAR_TYPES
from ..spec.model import INT, POINTER, ArgSpec, ConfigField, KernelSpec, LibrarySpec
from ..spec.validate import OPTION_DEFAULTS, OPTION_KINDS, validate_spec
from ..spec.writer import one_or_list as _one_or_list, render_spec, unique as _unique
from ..spec.targets import arch_name, arch_order, target_of_arch
from ..spec.variants import Binding, Variant, check_unique_ids, variant_id
from ..triton_api import RELEASE, VERSION, versions
from ..triton_api import compiler as triton_compiler, options as triton_options
from ..triton_api import jit as triton_jit

# Options every kernel's config lists (as Triton's JIT always sets them); the others only when some
# entry was compiled with a value other than Triton's default.
ALWAYS_OPTIONS = triton_options.ALWAYS_LISTED
STALE_CAUSES = ("it was compiled from another version of the function, by another Triton build or ptxas, or with "
                "constexpr values that neither its IR nor the function's source shows")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclasses.dataclass
class ImportedKernel:
    """One kernel of the library: its entries, how they were imported and what the spec says."""
    name: str
    kernel: KernelSpec
    variants: list
    hashes: dict             # variant id -> hash (the manifest's "hash")
    placements: list         # Placement per image
    table: dict              # the spec's [[kernel]] table
    exact: bool
    reason: str = None       # why it was imported from the IR alone
    comments: list = dataclasses.field(default_factory=list)
    arg_comments: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Placement:
    """A cache entry copied into artifacts/<variant>/<target>/, recorded with `inputs`."""
    entry: object
    variant_id: str
    target: str
    artifact_dir: Path
    inputs: dict
    job: object = None  # the compile job of the variant (exact imports): what the spec compiles


@dataclasses.dataclass
class ImportResult:
    library: str
    manifest_path: Path
    spec_path: Path
    kernels: list            # ImportedKernel
    notes: list              # what the user should know (left-out entries, approximations)
    removed_dirs: list


def select_entries(contents, wanted):
    """The entries of the functions named in `wanted` (all when empty). TaotError naming the
    functions the cache holds when one is not there."""
    names = sorted({entry.name for entry in contents.entries})
    missing = [name for name in wanted if name not in names]
    if missing:
        raise TaotError(f"--kernel {missing[0]}: the cache holds no kernel of that name (it holds: {', '.join(names)})")
    return [entry for entry in contents.entries if not wanted or entry.name in wanted]


def import_cache(entries, outdir, library_name, grids, ir=DEFAULT_MODE, cache_label="the cache", notice=None,
                 use_source=True):
    """Write OUTDIR/manifest.json, artifacts/ and <library>.toml for `entries` (triton_cache.Entry).
    `grids` maps a kernel name (or None, for every kernel) to its 1 to 3 grid entries (a kernel with
    none has no grid of its own: every launch gives it); with
    use_source=False every kernel is imported from its IR alone. The caller holds OUTDIR's lock.
    Raises TaotError for damaged entries or a grid that names unknown values."""
    say = notice or (lambda line: None)
    outdir = Path(outdir).resolve()
    spec_path = outdir / f"{library_name}.toml"
    notes = []
    usable = _usable_entries(entries, notes)
    groups = _group_by_function(usable)
    kernels = []
    for name, group in groups.items():
        grid = grids.get(name, grids.get(None))
        kernel = _import_kernel(name, group, grid, spec_path, library_name, outdir, ir, notes, use_source)
        kernels.append(kernel)
        how = "exactly" if kernel.exact else f"from the IR alone: {kernel.reason}"
        targets = ", ".join(target.name for target in kernel.kernel.targets)
        say(f"{name}: {plural(len(kernel.variants), 'variant')} for {targets} from "
            f"{plural(len(kernel.placements), 'cache entry', 'cache entries')}, imported {how}")
    try:
        check_unique_ids({kernel.name: kernel.variants for kernel in kernels}, str(spec_path))
    except SpecError as error:
        raise TaotError(str(error)) from None
    library = _library(library_name, kernels, spec_path)
    manifest_path = outdir / "manifest.json"
    try:
        for kernel in kernels:
            for placement in kernel.placements:
                if placement.job is not None and swap_record(placement.entry) is not None:
                    _place_swapped(placement, kernel.kernel.function, outdir, say)
                else:
                    if swap_record(placement.entry) is not None:  # from the IR alone: no spec compiles it
                        notes.append(f"{placement.entry.label} was swapped by taot from-ir: its edited kernel is "
                                     "what the library has for it, imported from its IR")
                    _place(placement, kernel.kernel.function, library_name, ir)
        write_if_changed(spec_path, _spec_text(library, kernels, cache_label))
        hashes = {variant_id: value for kernel in kernels for variant_id, value in kernel.hashes.items()}
        write_if_changed(manifest_path, render(build_manifest(library, outdir, hashes)))
    except BaseException:
        manifest_path.unlink(missing_ok=True)  # it may name artifacts replaced since
        raise
    planned = [placement for kernel in kernels for placement in kernel.placements]
    removed = remove_stale_artifacts(outdir, planned, library_name)
    return ImportResult(library_name, manifest_path, spec_path, kernels, notes, removed)


# ---- entries ----

def _usable_entries(entries, notes):
    """Entries taot can launch; TaotError for damaged ones and ones taot cannot take (the library
    would silently lack a variant the program used), a note for those of another Triton or an
    unknown target."""
    refused = [entry for entry in entries if entry.problem]
    if refused:
        first = refused[0]
        more = f" (and {len(refused) - 1} more such entries)" if len(refused) > 1 else ""
        advice = "remove the entry's folder (Triton compiles it again when the program next needs it) or leave " \
                 "its kernel out with --kernel" if first.damaged else "leave its kernel out with --kernel"
        raise TaotError(f"cache entry {first.label}: {first.problem}{more}; {advice}")
    usable, other_releases = [], {}
    for entry in entries:
        version = entry.metadata.get("triton_version")
        if versions.release_of(str(version)) is not RELEASE:
            other_releases.setdefault(str(version), []).append(entry.label)
        elif target_of_arch(entry.arch) is None:
            notes.append(f"left out {entry.label}: compiled for {arch_name(entry.arch)}, which "
                         "taot does not know")
        else:
            usable.append(entry)
    for version, labels in sorted(other_releases.items()):
        shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
        notes.append(f"left out {plural(len(labels), 'entry', 'entries')} ({shown}): {other_triton(version)}")
    if not usable:
        raise TaotError("none of the selected cache entries can be imported: " + "; ".join(notes))
    return usable


def other_triton(version):
    """Why entries compiled by another minor release of Triton than the one taot runs are left out."""
    minor = f"{RELEASE.minor[0]}.{RELEASE.minor[1]}"
    how = f"to import them, run taot with TAOT_PYTHON naming a Python with Triton {version}" \
        if versions.release_of(version) else \
        f"a release taot does not support (it supports Triton {versions.supported_range_text()}): they cannot be imported"
    return (f"compiled by Triton {version}; taot runs Triton {VERSION} and imports the entries of Triton {minor}.x "
            f"only (launch conventions differ between minor releases, and a cache key covers Triton's version): {how}")


def _group_by_function(entries):
    groups = {}
    for entry in entries:
        groups.setdefault(entry.name, []).append(entry)
    for name, group in groups.items():
        files = sorted({entry.source_file for entry in group if entry.source_file})
        if len(files) > 1:
            raise TaotError(f"the cache holds two functions named {name}, from {files[0]} and {files[1]}; a "
                            "library's kernel names are unique: remove the entries of the one you do not want")
    return dict(sorted(groups.items()))


def _target(arch):
    return target_of_arch(arch)


# ---- one kernel ----

def _import_kernel(name, entries, grid, spec_path, library_name, outdir, ir, notes, use_source):
    if not use_source:
        return _ir_kernel(name, entries, grid, "--no-source", None, spec_path, outdir, notes)
    function, reason = _load_function(entries[0], name)
    if function is not None:
        results = cache_recovery.recover_all(entries, function.jit)
        recovered = {key: result for key, result in results.items() if not isinstance(result, NotRecovered)}
        failed = [(entry, results[entry.key]) for entry in entries if entry.key not in recovered]
        source = entries[0].source_file
        if recovered:
            try:
                kernel = _exact_kernel(name, function, [entry for entry in entries if entry.key in recovered],
                                       recovered, grid, spec_path, library_name, outdir, ir, notes)
            except _Inexact as problem:
                reason = str(problem)
            else:
                for entry, why in failed:
                    notes.append(f"left out {entry.label}: " + (
                        f"{why}" if isinstance(why, cache_recovery.Inexpressible) else
                        f"it does not match {name} in {source} as it is now ({why}; {STALE_CAUSES})")
                        + "; --no-source imports every entry from its IR alone")
                return kernel
        else:
            others = f" (nor do the other {len(failed) - 1})" if len(failed) > 1 else ""
            reason = f"{failed[0][1]}{others}" if isinstance(failed[0][1], cache_recovery.Inexpressible) else \
                (f"its entries do not match {name} in {source} as it is now: {failed[0][1]}{others}; "
                 f"{STALE_CAUSES}")
    return _ir_kernel(name, entries, grid, reason, function, spec_path, outdir, notes)


def _load_function(entry, name):
    """(the kernel's spec.decorators.Decorated, None), or (None, why not)."""
    if not entry.source_file:
        return None, "the IR names no Python file"
    path = Path(entry.source_file)
    if not path.is_file():
        return None, f"its Python file {path} is not there"
    try:
        return kernel_source.find_kernel(kernel_source.import_source(path), name, path.name), None
    except Problem as problem:
        return None, f"{path}: {problem}"


class _Inexact(Problem):
    """A spec cannot compile exactly these entries; the message says why."""


# ---- exact: recovered inputs -> spec -> variants ----

def _exact_kernel(name, function, entries, recovered, grid, spec_path, library_name, outdir, ir, notes):
    jit = function.jit
    points = []  # per entry: {"args": argument values, "config": config values}, in spec terms
    described = _describe_arguments(jit, entries, recovered, points)
    options = _describe_options(entries, recovered, points)
    _check_grid(name, grid, described, options)
    targets = sorted({entry.arch for entry in entries}, key=arch_order)
    table = {"name": name, "source": _relative(triton_jit.function_file(jit), spec_path.parent), "function": name,
             "targets": [arch_name(arch) for arch in targets]}
    if grid is not None:  # none: every launch gives the grid
        table["grid"] = _grid_values(grid)
    where = _where(described, options, points, entries, targets)
    if where:
        table["where"] = [where]
    table["args"] = described
    table["options"] = {option: _one_or_list(values) for option, values in options.items()}
    table["default"] = {field: value["dtype"] if isinstance(value, dict) else value
                        for field, value in default_config([point["config"] for point in points]).items()}
    text = render_spec({"name": library_name, "targets": table["targets"]}, [(table, [], {})])
    try:
        library = validate_spec(tomllib.loads(text), spec_path, spec_path.name)
    except SpecError as error:
        raise _Inexact(f"the spec written for it does not validate: {error}") from None
    kernel = library.kernels[0]
    variants = library.variants[kernel.name]
    jobs, hashes = plan_jobs(library, outdir, ir)
    placements = _match(jit, jobs, entries, recovered, notes)
    for entry in entries:
        env = recovered[entry.key].env
        if env:
            settings = ", ".join(f"{key}={value}" for key, value in sorted(env.items()))
            notes.append(f"{entry.label} was compiled with {settings} set: set them again when compiling the spec")
    return ImportedKernel(name, kernel, variants, hashes, placements, table, exact=True)


def _describe_arguments(jit, entries, recovered, points):
    """Per parameter, its [kernel.args] entry; `points` gets each entry's values. _Inexact when a
    spec cannot say them."""
    for _ in entries:
        points.append({"args": {}, "config": {}})
    described = {}
    for param in triton_jit.parameters(jit):
        values = []
        for entry in entries:
            inputs = recovered[entry.key]
            signature = inputs.signature[param.name]
            constant = inputs.constexprs.get(param.name) if signature == "constexpr" else None
            values.append(_argument_value(param, signature, constant, param.index in inputs.divisible))
        described[param.name] = _argument_spec(param, values)
        for point, value in zip(points, values):
            if value[0] == "constexpr":
                point["config"][param.name] = value[1]
            else:
                point["args"][param.name] = value
    return described


def _argument_value(param, signature, constant, divisible):
    """One entry's value of a parameter in spec terms: ("constexpr", value), ("pointer", dtype,
    align, none), ("int", type, hint), ("float", type) or ("bool", "i1")."""
    if param.is_constexpr:
        if type(constant).__name__ == "constexpr":  # a tl.constexpr default: the spec gives its value
            constant = constant.value
        if hasattr(constant, "primitive_bitwidth") or type(constant).__name__ == "dtype":
            dtype = spec_dtype_name(constant)
            if dtype is None:
                raise _Inexact(f"constexpr {param.name} is the dtype {constant}, which a spec cannot name")
            return ("constexpr", {"dtype": dtype})
        if constant is None or not isinstance(constant, (int, float, str)):
            raise _Inexact(f"constexpr {param.name} is {constant!r}, which a spec cannot give")
        return ("constexpr", constant)
    if signature == "constexpr":  # a runtime parameter the JIT specialized: an int equal to 1, or None
        if constant is None:
            return ("pointer", None, None, True)
        if constant == 1 and not isinstance(constant, bool):
            return ("int", None, 1)
        raise _Inexact(f"{param.name} was compiled as the constant {constant!r}")
    if signature.startswith("*"):
        dtype = signature[1:]
        if dtype not in DTYPES:
            raise _Inexact(f"{param.name} is a {signature} pointer, which a spec cannot name")
        return (POINTER, dtype, 16 if divisible else "any", False)
    if signature in SIGNATURE_SCALAR_TYPES:
        kind, type_name = SIGNATURE_SCALAR_TYPES[signature]
        return (kind.name, type_name, 16 if divisible else "none") if kind.has_hint else (kind.name, type_name)
    raise _Inexact(f"{param.name} has the Triton type {signature}, which a spec cannot give")


def _argument_spec(param, values):
    """The [kernel.args] entry that takes every value in `values` (one per entry)."""
    kinds = {value[0] for value in values}
    if kinds == {"constexpr"}:
        constants = _unique([value[1] for value in values])
        if all(isinstance(value, dict) for value in constants):
            return {"dtype": _one_or_list([value["dtype"] for value in constants])}
        value_kinds = {type(value) for value in constants}
        if len(value_kinds) > 1:
            raise _Inexact(f"constexpr {param.name} takes values of several kinds ({describe(constants)})")
        return {"constexpr": _one_or_list(sorted(constants))}
    if len(kinds) > 1:
        raise _Inexact(f"{param.name} is a {' and a '.join(sorted(kinds))} in different entries")
    kind = ARG_KINDS[kinds.pop()]
    return kind.spec_entry([_value_binding(param.name, kind, value) for value in values])


def _value_binding(name, kind, value):
    """The Binding an _argument_value tuple of a runtime parameter says."""
    if kind.has_align:
        return Binding(name, kind.name, value[1], align=16 if value[2] == 16 else 0, none=value[3])
    if kind.has_hint:
        return Binding(name, kind.name, value[1], hint=_BINDING_HINTS[value[2]])
    return Binding(name, kind.name, value[1])


_BINDING_HINTS = {16: 16, 1: 1, "none": 0}


def _describe_options(entries, recovered, points):
    """The options a spec gives (name -> sorted values) and each point's option values. _Inexact
    when an entry was compiled with an option a spec cannot set."""
    compiled = [triton_jit.option_values(recovered[entry.key].options) for entry in entries]
    chosen = {}
    for name in OPTION_KINDS:  # the installed Triton's options (3.5 has no enable_reflect_ftz)
        if not any(name in each for each in compiled):
            continue  # another vendor's option
        values = [each.get(name) for each in compiled]
        if name in ALWAYS_OPTIONS or any(value != OPTION_DEFAULTS.get(name) for value in values):
            if any(value is None for value in values):
                raise _Inexact(f"some entries set {name} and others do not")
            chosen[name] = values
    for index, entry in enumerate(entries):
        given = {name: values[index] for name, values in chosen.items()}
        parsed = json_safe(triton_compiler.parse_options(entry.arch, given))
        actual = json_safe(compiled[index])
        for field, value in actual.items():
            if parsed.get(field) != value:
                raise _Inexact(f"{entry.label} was compiled with the Triton option {field} = {describe(value)}, which "
                               "a spec cannot set")
        points[index]["config"].update(given)
    return {name: sorted(_unique(values)) for name, values in chosen.items()}


def _where(described, options, points, entries, targets):
    """A filter keeping exactly the entries' (variant, target) points of the spec's product, or None
    when the product is exactly those points."""
    product = 1
    for spec in described.values():
        product *= _choices(spec)
    for values in options.values():
        product *= len(values)
    keys = {}
    for point, entry in zip(points, entries):
        key = canonical_json(_point_terms(point))
        keys.setdefault(key, (point, set()))[1].add(arch_name(entry.arch))
    everywhere = all(found == {arch_name(arch) for arch in targets} for _, found in keys.values())
    if product == len(keys) and everywhere:
        return None
    varying = _varying(points)
    clauses = []
    for point, found in keys.values():
        terms = _terms(point, varying, described)
        if not everywhere:
            names = sorted(found, key=lambda text: int(text[3:]))
            terms.append(f"target == '{names[0]}'" if len(names) == 1 else f"target in {names}")
        clauses.append("(" + (" and ".join(terms) or "True") + ")")
    return "(\n    " + "\n    or ".join(sorted(clauses)) + "\n)"


def _check_grid(name, grid, described, options):
    """A grid the spec cannot use is the user's to fix: TaotError naming it (before the spec, whose
    refusal would otherwise read as a kernel that cannot be imported exactly)."""
    int_args = [arg for arg, spec in described.items() if spec.get("hint") is not None]
    int_fields = [arg for arg, spec in described.items()
                  if all(isinstance(value, int) and not isinstance(value, bool)
                         for value in _as_list(spec.get("constexpr", [None])))]
    int_fields += [option for option in options if OPTION_KINDS[option] == INT]
    for index, text in enumerate(grid or ()):
        try:
            parse_grid(text, int_args, int_fields)
        except ExpressionProblem as problem:
            raise TaotError(f"--grid for {name}: entry {index} ({text}): {problem}") from None


def _choices(spec):
    """How many values the spec's product gives an argument."""
    if "constexpr" in spec or "dtype" in spec:
        return len(_as_list(spec.get("constexpr", spec.get("dtype"))))
    count = len(_as_list(spec["type"]))
    if "align" in spec:
        count *= len(_as_list(spec["align"]))
    if "hint" in spec:
        count *= len(_as_list(spec["hint"]))
    return count + (1 if spec.get("none") else 0)


def _point_terms(point):
    return {"args": {name: list(value) for name, value in point["args"].items()}, "config": point["config"]}


def _varying(points):
    """(argument, position in its value tuple) and (None, config name) whose value differs between
    points (an argument compiled as a constant has no type or alignment to differ)."""
    varying = set()
    for name in points[0]["args"]:
        for position in (1, 2, 3):
            seen = {repr(point["args"][name][position]) for point in points
                    if len(point["args"][name]) > position and point["args"][name][position] is not None}
            if len(seen) > 1:
                varying.add((name, position))
    for name in points[0]["config"]:
        if len({canonical_json(point["config"][name]) for point in points}) > 1:
            varying.add((None, name))
    return varying


def _terms(point, varying, described):
    """The conditions that hold for this point alone, over what varies: `x_ptr.align == 16`, ... An
    int compiled as the constant 1 has no type of its own, but the spec has a variant of it per type
    it lists: the first is kept (they compile the same kernel)."""
    attributes = {"pointer": {1: "dtype", 2: "align"}, "int": {1: "type", 2: "hint"}, "float": {1: "type"},
                  "bool": {}}
    terms = []
    for name, value in point["args"].items():
        if value[0] == "pointer" and (name, 3) in varying:
            terms.append(f"{name}.none" if value[3] else f"not {name}.none")
        for position, attribute in attributes[value[0]].items():
            if (name, position) in varying and value[position] is not None:
                terms.append(f"{name}.{attribute} == {_literal(value[position])}")
        if value[0] == "int" and value[1] is None and (name, 1) in varying:
            types = _as_list(described[name]["type"])
            terms.append(f"{name}.type == {_literal(types[0])}")
    for name, value in point["config"].items():
        if (None, name) in varying:
            terms.append(f"{name} == {_literal(value['dtype'] if isinstance(value, dict) else value)}")
    return terms


def _literal(value):
    return repr(value)  # Python literals: ints, floats, True/False, 'strings'


def _match(jit, jobs, entries, recovered, notes):
    """The placement of every job: the entry compiled from the same inputs for the same target.
    _Inexact when the spec's jobs and the entries do not pair up one to one."""
    env_now = triton_compiler.cache_invalidating_env()
    indexes = {param.name: param.index for param in triton_jit.parameters(jit)}
    by_inputs = {}
    for entry in entries:
        inputs = recovered[entry.key]
        key = (arch_name(entry.arch), _compiled_terms(inputs.signature, inputs.constexprs, inputs.divisible),
               canonical_json(json_safe(triton_jit.option_values(inputs.options))))
        by_inputs.setdefault(key, []).append(entry)
    placements = []
    for job in jobs:
        inputs = job.inputs
        options = triton_jit.options_object(job.arch, inputs["options"])
        divisible = {int(index) for index, value in inputs["attrs"].items() if triton_jit.DIVISIBLE in value}
        key = (job.target, _compiled_terms(inputs["signature"], inputs["constexprs"], divisible),
               canonical_json(json_safe(triton_jit.option_values(options))))
        candidates = by_inputs.pop(key, None)
        if not candidates:
            raise _Inexact(f"the spec written for it compiles {job.variant_id} for {job.target}, which the cache does "
                           "not hold")
        constexprs = {(indexes[arg],): triton_dtype(value["dtype"]) if isinstance(value, dict) else value
                      for arg, value in inputs["constexprs"].items()}
        # The key compiling the job now gives, with the attrs each entry was compiled with (the JIT's
        # or a direct call's: their empty entries change the key, not the code).
        now = {entry.key: triton_jit.cache_hash(jit, job.arch, triton_jit.Specialization(
            inputs["signature"], constexprs, recovered[entry.key].attrs), options, env_now) for entry in candidates}
        chosen = next((entry for entry in candidates if entry.triton_hash == now[entry.key]), candidates[0])
        for other in candidates:
            if other is not chosen:
                notes.append(f"left out {other.label}: the same variant as {chosen.label} ({job.variant_id} for "
                             f"{job.target}), compiled with other environment settings")
        # An entry whose key is what compiling the job gives now is recorded with the job's inputs, so a
        # later `taot compile` of the spec into this folder finds it up to date; others get compiled again.
        record = inputs if chosen.triton_hash == now[chosen.key] else _imported_inputs(chosen, job.target)
        placements.append(Placement(chosen, job.variant_id, job.target, Path(job.artifact_dir), record, job))
    if by_inputs:
        (target, _, _), left = next(iter(by_inputs.items()))
        raise _Inexact(f"the spec written for it does not compile the variant of {left[0].label} for {target}")
    return placements


def _compiled_terms(signature, constexprs, divisible):
    """What decides a compile's code, in the terms jobs.variant_inputs writes (bools are "i1" in a
    spec; the JIT says "u1"; dtype constexprs are {"dtype": name}): the signature, the constexprs and
    the 16-divisible parameters (attrs entries without attributes change the key, not the code)."""
    signature = {name: "i1" if kind == "u1" else kind for name, kind in signature.items()}
    constexprs = {name: {"dtype": spec_dtype_name(value)} if type(value).__name__ == "dtype" else value
                  for name, value in constexprs.items()}
    return canonical_json({"signature": signature, "constexprs": constexprs, "divisible": sorted(divisible)})


def _imported_inputs(entry, target_name):
    """What an imported entry's record says it came from: never equal to what a compile asks for."""
    return {"format": INPUTS_FORMAT, "triton_version": entry.metadata.get("triton_version"),
            "imported_from_triton_cache": {"entry": entry.key, "function": entry.name, "hash": entry.triton_hash},
            "target": {"name": target_name, "capability": entry.arch}}


# ---- from the IR alone ----

def _ir_kernel(name, entries, grid, reason, function, spec_path, outdir, notes):
    """The kernel as the entries' tt.func signatures and metadata show it: runtime parameters (an
    entry lacking one compiled it as 1 or None) and options; constexpr values unknown."""
    order = _merged_parameters(name, entries, function)
    kinds = {}
    for entry in entries:
        for parameter in entry.parameters:
            kinds.setdefault(parameter.name, set()).add(parameter.kind)
    for arg_name, found in kinds.items():
        if len(found) > 1:
            raise TaotError(f"the cache's entries of {name} disagree on argument {arg_name} ({' and '.join(sorted(found))}): "
                            "they come from different versions of the function; remove the stale entries")
    per_entry = []
    for entry in entries:
        present = {parameter.name: parameter for parameter in entry.parameters}
        bindings = []
        for arg_name in order:
            parameter = present.get(arg_name)
            kind = next(iter(kinds[arg_name]))
            if parameter is None and not (ARG_KINDS[kind].has_align or ARG_KINDS[kind].has_hint):
                raise TaotError(f"cache entry {entry.label} lacks the {kind} argument {arg_name} that other entries of "
                                f"{name} take: they come from different versions of the function")
            bindings.append(parameter)
        per_entry.append(bindings)
    args = []
    for index, arg_name in enumerate(order):
        kind = next(iter(kinds[arg_name]))
        types = _unique([bindings[index].type for bindings in per_entry if bindings[index] is not None])
        args.append(ArgSpec(arg_name, index, ARG_KINDS[kind].name, tuple(types)))
    fields = _ir_option_fields(name, entries, notes)
    targets = tuple(_target(arch) for arch in sorted({entry.arch for entry in entries}, key=arch_order))
    int_args = [arg.name for arg in args if arg.rules.grid_operand]
    int_fields = [field.name for field in fields if field.kind == INT]
    grid_text, trees = _parse_grid(name, grid, int_args, int_fields, reason)
    source = Path(entries[0].source_file or f"{name}.py")
    cache_key = "triton-cache:" + ",".join(sorted(entry.triton_hash for entry in entries))
    kernel = KernelSpec(name=name, function=name, source=source, cache_key=cache_key, grid_text=grid_text,
                        grid=trees, where=(), typevars={}, args=tuple(args), options={}, config=fields,
                        targets=targets)
    variants, placements, hashes = _ir_variants(kernel, entries, per_entry, outdir)
    _note_alike(name, variants, notes)
    table, comments, arg_comments = _ir_spec(name, kernel, variants, grid, entries, function, reason, spec_path)
    return ImportedKernel(name, kernel, variants, hashes, placements, table, exact=False, reason=reason,
                          comments=comments, arg_comments=arg_comments)


def _merged_parameters(name, entries, function):
    """Every parameter some entry takes, in the function's order (the source's when it loads, else
    the order the entries agree on)."""
    order = []
    for entry in entries:
        previous = -1
        for parameter in entry.parameters:
            if parameter.name in order:
                position = order.index(parameter.name)
                if position < previous:
                    raise TaotError(f"the cache's entries of {name} take their arguments in different orders: they "
                                    "come from different versions of the function; remove the stale entries")
                previous = position
            else:
                previous += 1
                order.insert(previous, parameter.name)
    if function is not None:
        known = [param.name for param in triton_jit.parameters(function.jit)]
        if all(arg_name in known for arg_name in order):
            order.sort(key=known.index)
    return order


def default_config(configs):
    """The default of a kernel made from a cache: the config most entries have, the smallest of
    those (numbers compared as numbers) when several are as common."""
    counts = {}
    for config in configs:
        key = canonical_json(config)
        counts[key] = (counts.get(key, (0, config))[0] + 1, config)

    def order(item):
        count, config = item
        return -count, [(0, value, "") if isinstance(value, (int, float)) else (1, 0, canonical_json(value))
                        for value in config.values()]
    return min(counts.values(), key=order)[1]


def _ir_option_fields(name, entries, notes):
    fields = []
    default = default_config([{option: entry.metadata.get(option) for option in OPTION_KINDS} for entry in entries])
    for option, kind in OPTION_KINDS.items():
        values = [entry.metadata.get(option) for entry in entries]
        if option not in ALWAYS_OPTIONS and all(value == OPTION_DEFAULTS.get(option) for value in values):
            continue
        if any(value is None for value in values):
            if any(value is not None for value in values):
                notes.append(f"{name}: some entries set {option} and others do not; it is not a config field")
            continue
        fields.append(ConfigField(option, kind, tuple(sorted(_unique(values))), default[option], is_option=True))
    return tuple(fields)


def _parse_grid(name, grid, int_args, int_fields, reason):
    if grid is None:
        return None, None  # no grid of its own
    texts = list(grid) + ["1"] * (3 - len(grid))
    trees = []
    for index, text in enumerate(texts):
        try:
            trees.append(parse_grid(text, int_args, int_fields))
        except ExpressionProblem as problem:
            raise TaotError(f"--grid for {name}: entry {index} ({text}): {problem}; {name} is imported from its IR "
                            f"alone ({reason}), so its constexpr values are not known") from None
    return tuple(texts), tuple(trees)


def _ir_variants(kernel, entries, per_entry, outdir):
    """Variants of the entries: entries with the same bindings, options and front-end IR (the
    `.source`) on different targets are one variant; ids that still collide (entries differing in
    constexpr values only) get a digest of that IR appended."""
    groups = {}
    for entry, parameters in zip(entries, per_entry):
        bindings = tuple(_ir_binding(arg, parameter) for arg, parameter in zip(kernel.args, parameters))
        config = {field.name: entry.metadata[field.name] for field in kernel.config}
        source_digest = hashlib.sha256(entry.text("source").encode()).hexdigest()
        key = canonical_json([repr(bindings), config, source_digest])
        group = groups.setdefault(key, {"bindings": bindings, "config": config, "digest": source_digest,
                                        "entries": {}})
        group["entries"].setdefault(arch_name(entry.arch), entry)
    ids = {}
    for key, group in groups.items():
        ids[key] = variant_id(kernel, group["bindings"], group["config"])
    counts = {}
    for value in ids.values():
        counts[value] = counts.get(value, 0) + 1
    variants, placements, hashes = [], [], {}
    order = [target.name for target in kernel.targets]
    ones = {arg.name for arg in kernel.args if arg.rules.has_hint}
    for key, group in sorted(groups.items(), key=lambda item: ids[item[0]] + item[1]["digest"]):
        identifier = ids[key] if counts[ids[key]] == 1 else f"{ids[key]}_{group['digest'][:8]}"
        values = {name: value for name, value in group["config"].items() if isinstance(value, int)}
        hinted = {binding.name for binding in group["bindings"] if binding.hint == 1} & ones
        grid = None if kernel.grid is None else tuple(fold_grid(tree, values, hinted) for tree in kernel.grid)
        targets = tuple(name for name in order if name in group["entries"])
        variants.append(Variant(kernel.name, identifier, group["bindings"], dict(group["config"]), grid, targets))
        hashes[identifier] = variant_hash({"format": INPUTS_FORMAT, "imported_from_triton_cache": sorted(
            entry.triton_hash for entry in group["entries"].values())})
        for target in targets:
            entry = group["entries"][target]
            placements.append(Placement(entry, identifier, target, artifact_dir(outdir, identifier, target).resolve(),
                                        _imported_inputs(entry, target)))
    return variants, placements, hashes


def _note_alike(name, variants, notes):
    """Variants of the same bindings and config differ in constexpr values the cache does not record:
    a launch that names no variant takes the first; the grid cannot tell them apart either."""
    alike = {}
    for variant in variants:
        alike.setdefault(canonical_json([repr(variant.bindings), variant.config]), []).append(variant.id)
    for ids in alike.values():
        if len(ids) > 1:
            notes.append(f"{name}: {', '.join(ids)} take the same arguments and options and differ in constexpr "
                         f"values the cache does not record: a launch takes {ids[0]} unless it names a variant, "
                         "and all share one grid")


def _ir_binding(arg, parameter):
    rules = arg.rules
    if parameter is None:  # compiled as a constant: None for a pointer, 1 for an int
        if rules.has_align:
            return Binding(arg.name, arg.kind, arg.choices[0] if arg.choices else "fp32", align=0, none=True)
        return Binding(arg.name, arg.kind, arg.choices[0] if arg.choices else "i32", hint=1)
    divisible = 16 if parameter.divisibility == 16 else 0
    return Binding(arg.name, arg.kind, parameter.type, align=divisible if rules.has_align else None,
                   hint=divisible if rules.has_hint else None)


def _ir_spec(name, kernel, variants, grid, entries, function, reason, spec_path):
    """The spec's table for a kernel imported from its IR: what is known, and comments for the rest."""
    args = {}
    for index, arg in enumerate(kernel.args):
        args[arg.name] = arg.rules.spec_entry([variant.bindings[index] for variant in variants])
    arg_comments = {}
    if function is not None:
        ordered = {}
        for param in triton_jit.parameters(function.jit):
            if param.name in args:
                ordered[param.name] = args[param.name]
            elif param.is_constexpr:
                arg_comments[param.name] = [f"{param.name} = {{ constexpr = [...] }}: its values are compiled into the "
                                            "cubins but not recorded in the cache"]
            else:
                arg_comments[param.name] = [f"{param.name}: compiled as a constant (1, or None) in every entry"]
        args = ordered | {key: value for key, value in args.items() if key not in ordered}
    else:
        arg_comments["..."] = ["the function's constexpr parameters: their values are compiled into the cubins but "
                               "not recorded in the cache"]
    table = {"name": name, "source": _relative(str(kernel.source), spec_path.parent), "function": name,
             "targets": [target.name for target in kernel.targets]}
    if grid is not None:  # none: every launch gives the grid
        table["grid"] = _grid_values(grid)
    table["args"] = args
    table["options"] = {field.name: _one_or_list(list(field.values)) for field in kernel.config}
    comments = [f"{name}: imported from the cache's IR alone ({reason}).",
                f"The cache holds {plural(len(entries), 'entry', 'entries')} of it ({plural(len(variants), 'variant')}) "
                "but not their constexpr values:",
                "describe its constexpr parameters in [kernel.args] before compiling this spec."]
    return table, comments, arg_comments


# ---- writing ----

def _place(placement, function, library_name, ir):
    """Copy the entry's cubin, metadata and IR into the artifact folder (kept when it already holds
    them, recorded with the same inputs)."""
    folder = Path(placement.artifact_dir)
    folder.mkdir(parents=True, exist_ok=True)
    if artifacts.stale_reason(folder, placement.inputs, ir) is None:
        artifacts.adopt(folder, function, library_name, ir)
        return
    entry = placement.entry
    libraries = set(artifacts.clear(folder, placement.inputs)) | {library_name}
    asm = {stage: entry.text(stage) for stage in entry.ir_stages}
    asm[entry.image] = entry.files[entry.image].read_bytes()
    artifacts.write(folder, function, asm, entry.metadata, placement.inputs, libraries, ir)


def swap_record(entry):
    """What `taot from-ir --triton-cache` left in an entry it swapped (its marker), or None."""
    from .cache_swap import MARKER
    try:
        record = json.loads((entry.folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _place_swapped(placement, function, outdir, say):
    """An entry `taot from-ir --triton-cache` swapped holds an edited kernel under the original's
    cache key: the spec's compile of the variant goes into the artifact folder (what the spec makes),
    and the entry's kernel becomes the image's override, as `taot from-ir` into the library would
    keep it (`taot from-ir --drop` restores the compiled one)."""
    from ..compile import jobs as job_module
    from ..library import overrides
    from .cache_swap import MARKER
    from .rebuild import STAGES, Rebuilt
    entry, record = placement.entry, swap_record(placement.entry)
    stage = record.get("stage")
    if stage not in STAGES or (stage != entry.image and stage not in entry.files):
        raise TaotError(f"cache entry {entry.label}: its {MARKER} names stage {stage!r}, which the entry "
                        "does not hold; remove the entry's folder")
    outcome = job_module.run_job(placement.job)
    if outcome.error is not None:
        raise TaotError(f"cache entry {entry.label} was swapped by taot from-ir; compiling the kernel it replaced "
                        f"({placement.variant_id} for {placement.target}) failed:\n{outcome.error}")
    data = entry.files[stage].read_bytes()
    later = STAGES[STAGES.index(stage) + 1:]
    rebuilt = Rebuilt(path=str(record.get("edited") or entry.files[stage]), stage=stage, data=data,
                      sha256=hashlib.sha256(data).hexdigest(),
                      stages={name: entry.text(name) for name in later if name in entry.ir_stages and name in entry.files},
                      cubin=entry.files[entry.image].read_bytes(), metadata=entry.metadata, carried=(),
                      image_stage=entry.image)
    compiled = artifacts.read_record(Path(placement.artifact_dir))
    overrides.write(outdir, placement.variant_id, placement.target, function, rebuilt, compiled["cubin"]["sha256"])
    say(f"{entry.label}: swapped by taot from-ir (an edited {stage}): kept as the override of {placement.variant_id} "
        f"for {placement.target}; the spec compiles the kernel it replaced")


def _library(name, kernels, spec_path):
    archs = sorted({target.arch for kernel in kernels for target in kernel.kernel.targets}, key=arch_order)
    return LibrarySpec(name, tuple(_target(arch) for arch in archs),
                       tuple(kernel.kernel for kernel in kernels), spec_path, spec_path.name,
                       variants={kernel.name: kernel.variants for kernel in kernels})


def _spec_text(library, kernels, cache_label):
    targets = [target.name for target in library.targets]
    sections = []
    for kernel in kernels:
        table = dict(kernel.table)
        if table.get("targets") == targets:
            del table["targets"]
        sections.append((table, kernel.comments, kernel.arg_comments))
    header = [f"Written by `taot import-cache {cache_label}`: compiles the variants of the kernels the cache held."]
    inexact = [kernel.name for kernel in kernels if not kernel.exact]
    if inexact:
        header.append(f"Not yet complete: {', '.join(inexact)} (see the comments there).")
    return render_spec({"name": library.name, "targets": targets}, sections, header)


# ---- small helpers ----

def _relative(path, folder):
    return Path(os.path.relpath(path, folder)).as_posix()


def _grid_values(grid):
    values = []
    for text in grid:
        text = str(text).strip()
        values.append(int(text) if re.fullmatch(r"-?\d+", text) else text)
    return values


def plural(count, singular, plural_form=None):
    return f"{count} {singular if count == 1 else plural_form or singular + 's'}"


def _as_list(value):
    return value if isinstance(value, list) else [value]


def parse_grid_option(text):
    """(kernel name or None, [1 to 3 grid entries]) from `[KERNEL=]X,Y,Z`; commas inside
    parentheses belong to the expression (cdiv(n, BLOCK)). ValueError saying what is wrong."""
    kernel = None
    match = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)(.*)$", text, re.DOTALL)
    if match:
        kernel, text = match.group(1), match.group(2)
    entries, depth, current = [], 0, ""
    for character in text:
        if character == "(":
            depth += 1
        elif character == ")":
            depth -= 1
        if character == "," and depth == 0:
            entries.append(current.strip())
            current = ""
        else:
            current += character
    entries.append(current.strip())
    if depth != 0:
        raise ValueError(f"unbalanced parentheses in {text!r}")
    if not 1 <= len(entries) <= 3 or not all(entries):
        raise ValueError(f"expected 1 to 3 comma-separated grid entries, got {text!r}")
    return kernel, entries
