# The validated spec: what a library, its kernels, arguments, options and config fields are.
from dataclasses import dataclass, field
from pathlib import Path

from . import arg_kinds
from .arg_kinds import ARG_KINDS, POINTER_NONE

# Argument kinds' names (what each means: arg_kinds.py). "constexpr" and "dtype" arguments are
# compile-time values and become config fields; config fields' kinds are int, float, bool, dtype, string.
POINTER, INT, FLOAT, BOOL, CONSTEXPR, DTYPE, TENSORDESC, SCALAR = (kind.name for kind in (
    arg_kinds.POINTER, arg_kinds.INT, arg_kinds.FLOAT, arg_kinds.BOOL, arg_kinds.CONSTEXPR, arg_kinds.DTYPE,
    arg_kinds.TENSORDESC, arg_kinds.SCALAR))
STRING = "string"  # the kind of a config field whose values are strings (ACTIVATION = "leaky_relu")

ALIGN_ANY = "any"
HINT_NONE = "none"


@dataclass(frozen=True)
class ArgSpec:
    """One parameter of the kernel function and the choices the spec gives for it.

    pointer: `choices` are element dtypes, `aligns` a subset of (16, "any");
    tensordesc: `choices` are element dtypes, `block` the block shape, each entry an int or the name
    of an int constexpr argument (resolved per variant);
    int/float/bool: `choices` are scalar types (i32, i64 / fp32, fp64 / i1), ints have `hints` ⊆ (1, 16, "none");
    constexpr: `choices` are values; dtype: `choices` are dtype names. `output`: the kernel writes
    through this pointer (declared in the spec; torch custom ops mark it as mutated); `rank`: the
    number of dimensions an array passed from Python must have (None: any); `none`: variants with
    this pointer None are compiled too (its aligns then end in POINTER_NONE);
    scalar (None, int or float, chosen at launch): `choices` are its int and float types, `hints`
    apply to its int forms, `none` adds the None form.
    When `typevar` is set, the choices follow that type variable instead of varying on their own.
    `launch_only`: an int the grid and launch-time rules read that the function does not take (it
    follows the function's parameters). `value_source`: where a constexpr's value comes from when
    it does not vary on its own: "configs" (the config entries; `choices` lists their values),
    "option" (a constexpr named like an option takes the option's values) or "heuristic" (an
    undescribed constexpr a bool heuristic computes: False and True)."""
    name: str
    index: int
    kind: str
    choices: tuple
    typevar: str = None
    aligns: tuple = ()
    hints: tuple = ()
    output: bool = False
    rank: int = None
    block: tuple = ()
    none: bool = False
    launch_only: bool = False
    value_source: str = None

    @property
    def rules(self):
        """What its kind means (arg_kinds.ArgKind)."""
        return ARG_KINDS[self.kind]

    @property
    def is_runtime(self):
        return self.rules.runtime


@dataclass(frozen=True)
class ConfigField:
    """A compile-time choice the caller can name at launch: a constexpr argument, an option, or both
    (a constexpr parameter named like an option gets the option's value, as with Triton's JIT)."""
    name: str
    kind: str        # int | float | bool | dtype | string
    values: tuple    # every value a variant may have, in spec order
    default: object
    is_option: bool
    is_constexpr: bool = False
    default_given: bool = True  # False: taot chose the default (the first config entry that survives)
    required: bool = False      # every launch must give it: a constexpr of several values with no default in the
                                # function that no config list, rule, option or [kernel.default] gives (as the JIT)


@dataclass(frozen=True)
class AutotuneSpec:
    """How the runtime tunes a kernel at the first launch of each tuning-key value (docs/runtime.md):
    whether it does unless switched off, the config fields timed (those the config entries vary), and
    the pointer arguments whose memory timed runs restore."""
    at_first_call: bool
    fields: tuple           # config field names, in config order
    reset_to_zero: tuple = ()
    restore_value: tuple = ()


@dataclass(frozen=True)
class KernelSpec:
    name: str
    function: str
    source: Path            # absolute path of the kernel's Python file (of the module, for a module reference)
    cache_key: str          # the JIT function's cache key (covers its source and callees)
    grid_text: tuple        # three entries as written; None: no grid of its own (launches give it)
    grid: tuple             # three checked ASTs (see expressions.parse_grid), or None
    where: tuple            # expressions.Filter objects
    typevars: dict          # name -> tuple of dtype names, in spec order
    args: tuple             # ArgSpec per function parameter, in order, then the launch-only arguments
    options: dict           # option name -> OptionValues, for options varied on their own (spec order)
    config: tuple           # ConfigField: constexpr args in order, then options
    key: str = "kernel[0]"  # key path in the spec, for messages
    targets: tuple = ()     # targets.Target this kernel is compiled for
    configs: tuple = ()     # config entries (dicts field -> value): @triton.autotune's, then the spec's
    tuning_key: tuple = ()  # names whose values key tuned tables
    autotune: AutotuneSpec = None  # first-call autotuning; None: never (no key, or fewer than two configs)
    heuristics: tuple = ()  # (field, expressions.Rule) in evaluation order
    requires: tuple = ()    # expressions.Rule every launched variant must satisfy
    tuning: tuple = ()      # absolute paths of the tuned-table files to bake in, in spec order
    notes: tuple = ()       # what taot does not carry ahead of time (autotune pruning, pre_hooks)
    parameter_names: tuple = ()  # the function's parameter names in order, constexprs among them (positional calls)
    module: str = None      # the installed module named by `function = "module:function"`, or None (a file)
    config_targets: dict = None  # target name -> indexes of the `configs` its import gave (None: all have all)
    target_cache_keys: dict = None  # target name -> cache key, where the imports per target give different keys

    def runtime_args(self):
        return [arg for arg in self.args if arg.is_runtime]

    def parameters(self):
        """The function's parameters (the arguments without the launch-only ones)."""
        return [arg for arg in self.args if not arg.launch_only]


@dataclass(frozen=True)
class OptionValues:
    """The values of an option varied on its own: `values` for every target, or per target name
    (`per_target`, when the spec gives a table such as { sm_80 = 2, sm_90 = [3, 4] })."""
    values: tuple
    per_target: dict = None

    def for_target(self, target_name):
        return self.values if self.per_target is None else self.per_target[target_name]


@dataclass(frozen=True)
class LibrarySpec:
    name: str
    targets: tuple          # targets.Target of every kernel together, in spec order
    kernels: tuple          # KernelSpec
    path: Path              # absolute path of the spec file
    label: str              # the spec file as named on the command line, for messages
    variants: dict = field(default_factory=dict)   # kernel name -> list of variants.Variant
    summaries: dict = field(default_factory=dict)  # kernel name -> variants.Summary
    device: dict = field(default_factory=dict)     # target name -> device_facts.DeviceFacts kernel imports saw
