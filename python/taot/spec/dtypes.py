# Element and scalar type names accepted in specs, and their Triton spellings.
from .arg_kinds import SCALAR_TYPE_KINDS

# Every dtype a pointer may point to, in the order error messages list them.
DTYPES = ("fp32", "fp16", "bf16", "fp64", "fp8e4nv", "fp8e5",
          "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "i1")

# The attribute of the torch module that is each dtype (str(torch.bfloat16) == "torch.bfloat16"), as
# runtime/include/taot/dtype_list.h lists them.
TORCH_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64",
               "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "i8": "int8", "i16": "int16",
               "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
               "u64": "uint64", "i1": "bool"}

# Scalar (by-value) argument types, grouped by the manifest's argument kind.
SCALAR_KINDS = {type_name: kind.name for type_name, kind in SCALAR_TYPE_KINDS.items()}
SCALAR_ALIASES = {"bool": "i1"}

# tl.dtype(...) takes these names.
_TRITON_DTYPE_NAMES = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                       "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "i1": "int1"}


def scalar_kind(type_name):
    """'int', 'float' or 'bool' for a scalar type name (aliases resolved), None if not a scalar type."""
    return SCALAR_KINDS.get(SCALAR_ALIASES.get(type_name, type_name))


def canonical_scalar(type_name):
    return SCALAR_ALIASES.get(type_name, type_name)


def triton_dtype(name):
    """The triton.language dtype object for a spec dtype name (used for dtype-valued constexprs)."""
    import triton.language as tl
    return tl.dtype(_TRITON_DTYPE_NAMES.get(name, name))


def spec_dtype_name(dtype):
    """The spec name of a triton.language dtype object, None for dtypes a spec cannot name."""
    reverse = {triton: spec for spec, triton in _TRITON_DTYPE_NAMES.items()}
    name = reverse.get(dtype.name, dtype.name)
    return name if name in DTYPES else None
