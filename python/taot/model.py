# The validated spec: what a library, its kernels, arguments, options and config fields are.
from dataclasses import dataclass, field
from pathlib import Path

# Argument kinds. "constexpr" and "dtype" arguments are compile-time values and become config fields.
POINTER, INT, FLOAT, BOOL, CONSTEXPR, DTYPE = "pointer", "int", "float", "bool", "constexpr", "dtype"
TENSORDESC = "tensordesc"  # a host-side tensor descriptor (Triton's TensorDescriptor)
RUNTIME_KINDS = (POINTER, INT, FLOAT, BOOL, TENSORDESC)

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
    number of dimensions an array passed from Python must have (None: any).
    When `typevar` is set, the choices follow that type variable instead of varying on their own."""
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

    @property
    def is_runtime(self):
        return self.kind in RUNTIME_KINDS


@dataclass(frozen=True)
class ConfigField:
    """A compile-time choice the caller can name at launch: a constexpr argument or an option."""
    name: str
    kind: str        # int | float | bool | dtype
    values: tuple    # as listed in the spec
    default: object
    is_option: bool


@dataclass(frozen=True)
class KernelSpec:
    name: str
    function: str
    source: Path            # absolute path of the kernel's Python file
    cache_key: str          # the JIT function's cache key (covers its source and callees)
    grid_text: tuple        # three entries as written
    grid: tuple             # three checked ASTs (see expressions.parse_grid)
    where: tuple            # expressions.Filter objects
    typevars: dict          # name -> tuple of dtype names, in spec order
    args: tuple             # ArgSpec per function parameter, in order
    options: dict           # option name -> tuple of values, in spec order
    config: tuple           # ConfigField: constexpr args in order, then options
    key: str = "kernel[0]"  # key path in the spec, for messages

    def runtime_args(self):
        return [arg for arg in self.args if arg.is_runtime]


@dataclass(frozen=True)
class LibrarySpec:
    name: str
    targets: tuple          # targets.Target, in spec order
    kernels: tuple          # KernelSpec
    path: Path              # absolute path of the spec file
    label: str              # the spec file as named on the command line, for messages
    variants: dict = field(default_factory=dict)  # kernel name -> list of variants.Variant
