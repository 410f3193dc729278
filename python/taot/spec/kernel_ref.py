# A [[kernel]]'s `source` and `function` keys: a file and a function in it, or an installed module
# and a function (`function = "pkg.ops.norm:_norm_fwd_kernel"`), imported once per target with that
# target's device facts; the config lists the imports give are joined, each config kept on the
# targets whose import gave it.
import dataclasses
from pathlib import Path

from ..errors import Problem
from . import source as kernel_source


@dataclasses.dataclass(frozen=True)
class FoundKernel:
    """The kernel as the spec names it. `decorated`: the first target's decorators.Decorated, its
    @triton.autotune configs being those of every target's import together; `entry_targets[i]`:
    the target names whose import gave configs[i] (None: all); `per_target`: target name ->
    Decorated of its import; `notes`: device queries the imports could not answer."""
    function: str
    source: kernel_source.KernelSource
    path: Path                 # the file that defines the function
    decorated: object
    entry_targets: tuple = ()
    per_target: dict = None
    notes: tuple = ()


def locate(node, spec_folder, targets, device):
    """FoundKernel of the [[kernel]] table `node` (a keypath.Node), imported for every target
    (targets.Target) with its facts from `device` (device_facts.Device). SpecError naming the key."""
    function_node = node.key("function") if node.key("function").present() else node.key("name")
    text = function_node.string("a function name, or an installed module and a function (\"pkg.ops:kernel\")")
    try:
        module_name, function = kernel_source.split_reference(text)
    except Problem as problem:
        raise function_node.error(problem.expected, problem.got) from None
    if module_name is not None:
        if node.key("source").present():
            raise node.key("source").error(f"no source: function names module {module_name}, which is imported by "
                                           "name (give either source and a function, or \"module:function\")",
                                           f'"{node.key("source").value}" as well')
        source = kernel_source.KernelSource(module=module_name, search=str(spec_folder))
        source_node = function_node
    else:
        if not node.key("source").present():
            raise node.key("source").missing("the kernel's Python file (or function = \"module:function\" for "
                                             "an installed module)")
        source = kernel_source.KernelSource(path=_source_path(node.key("source"), spec_folder))
        source_node = node.key("source")
    if not function.isidentifier():
        raise function_node.error("a function name that is an identifier")
    per_target, notes = {}, {}
    for target in targets:
        facts = device.facts(target)
        try:
            module = kernel_source.import_kernel_module(source, facts)
        except Problem as problem:
            raise source_node.error(problem.expected, f"{problem.got} (importing for {target.name})"
                                    if len(targets) > 1 else problem.got) from None
        for note in kernel_source.probe_notes(source, facts):
            notes.setdefault(note, []).append(target.name)
        try:
            per_target[target.name] = kernel_source.find_kernel(module, function, source.label())
        except Problem as problem:
            raise function_node.error(problem.expected, problem.got) from None
    path = source.path if source.module is None else kernel_source.module_file(source)
    decorated, entry_targets = _joined(per_target, [target.name for target in targets])
    notes = tuple(f"{', '.join(names)}: {note}" for note, names in notes.items())
    return FoundKernel(function, source, Path(path), decorated, entry_targets, per_target, notes)


def _source_path(node, spec_folder):
    text = node.string("the kernel's Python file, relative to the spec file")
    source = (spec_folder / text).resolve()
    if not source.is_file():
        raise node.error("an existing Python file (paths are relative to the spec file)",
                         f'"{text}", which does not exist ({source})')
    return source


def _joined(per_target, target_names):
    """(the first target's Decorated with every target's autotune configs, in order of first
    appearance; per config the targets that have it, None where all do)."""
    first = per_target[target_names[0]]
    if first.autotune is None:
        return first, ()
    configs, owners = [], []
    for name in target_names:
        tuner = per_target[name].autotune
        for config in (tuner.configs if tuner is not None else ()):
            if config in configs:
                owners[configs.index(config)].append(name)
            else:
                configs.append(config)
                owners.append([name])
    if len(configs) == len(first.autotune.configs) and all(len(owner) == len(target_names) for owner in owners):
        return first, ()
    autotune = dataclasses.replace(first.autotune, configs=tuple(configs))
    entry_targets = tuple(None if len(owner) == len(target_names) else tuple(owner) for owner in owners)
    return dataclasses.replace(first, autotune=autotune), entry_targets


def config_targets(completed, entry_targets, same, target_names):
    """(the completed config entries without duplicates, {target name: indexes of the entries it
    has} or None when every target has every entry). `completed`: one entry per raw entry, in
    order; `entry_targets`: the targets of the first raw entries (None: all; entries past its end,
    the spec's own, are on all); `same(a, b)`: whether two entries are one."""
    unique, owners = [], []
    for index, entry in enumerate(completed):
        targets = entry_targets[index] if index < len(entry_targets) else None
        targets = set(target_names if targets is None else targets)
        match = next((position for position, earlier in enumerate(unique) if same(entry, earlier)), None)
        if match is None:
            unique.append(entry)
            owners.append(targets)
        else:
            owners[match] |= targets
    if all(owner >= set(target_names) for owner in owners):
        return unique, None
    return unique, {name: tuple(index for index, owner in enumerate(owners) if name in owner) for name in target_names}


def target_cache_keys(found):
    """{target name: the cache key of its import's function} when the imports give different keys
    (a global tl.constexpr computed from the device); None when they agree."""
    keys = {name: decorated.jit.cache_key for name, decorated in (found.per_target or {}).items()}
    return keys if len(set(keys.values())) > 1 else None

