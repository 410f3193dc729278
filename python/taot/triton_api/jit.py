# The JIT's specialization and cache keys: what Triton's JIT makes of a call (its own argument binder
# and _pack_args, as JITFunction.run runs them), the source and cache key the compile is stored under,
# and the backend options a cache entry's metadata records. import-cache, its recovery of an entry's
# inputs and from-ir's Triton-cache side reach Triton's JIT only through here. Whatever differs
# between releases (3.7+ gives constexprs an empty attrs entry: versions.Release.constexpr_attrs_entries)
# is the installed Triton's own code running, not an imitation of it.
import contextlib
import dataclasses
import functools
import hashlib

from .compiler import backend, backend_hash, explicit_options

DIVISIBLE = ["tt.divisibility", 16]         # the attribute an attrs entry holds for a 16-divisible argument
NO_DEFAULT = object()                       # Parameter.default of a parameter without one


@dataclasses.dataclass(frozen=True)
class Parameter:
    """One parameter of a @triton.jit function, as the JIT binds it."""
    name: str
    index: int
    is_constexpr: bool
    default: object       # the default value (a tl.constexpr stays one), or NO_DEFAULT


@dataclasses.dataclass(frozen=True)
class Specialization:
    """What the JIT hands triton.compile for one call (ASTSource's arguments): signature (parameter
    name -> Triton type such as "*fp32", "i32", "u1", or "constexpr"), constexprs ((index,) -> value)
    and attrs ((index,) -> [[attribute, value], ...], in parameter order)."""
    signature: dict
    constexprs: dict
    attrs: dict

    def divisible(self):
        """Indexes of the parameters whose argument the JIT found 16-divisible."""
        return frozenset(path[0] for path, entry in self.attrs.items() if DIVISIBLE in entry)


# ---- the function ----

def parameters(function):
    """The parameters of a @triton.jit function (a JITFunction), in order."""
    return [Parameter(param.name, index, bool(param.is_constexpr), param.default if param.has_default else NO_DEFAULT)
            for index, param in enumerate(function.params)]


def function_key(function):
    """The JIT's cache key of the function's source (its text, the globals and the functions it calls);
    computing it may raise what resolving those raises."""
    return function.cache_key


def function_source(function):
    """The function's Python source text ("" when the JIT keeps none)."""
    return getattr(function, "src", "") or ""


def function_file(function):
    """The Python file the function was defined in."""
    return function.fn.__code__.co_filename


def compiled_file_name(function):
    """The name triton.compile gives a source's files (cache entries, override and dump folders)."""
    return function.__name__[:150]


# ---- keys ----

@functools.lru_cache(maxsize=None)
def triton_key():
    """The installed Triton's part of every cache key (its version and the hash of its sources)."""
    from triton.runtime.cache import triton_key as key
    return key()


def source(function, specialization):
    """The source the JIT compiles for this specialization: an ASTSource, or for a Gluon kernel a
    GluonASTSource (gluon.source; its hash and cache key are computed as an ASTSource's)."""
    from . import gluon
    return gluon.source(function, specialization.signature, dict(specialization.constexprs),
                        dict(specialization.attrs))


def source_hash(function, specialization):
    """ASTSource.hash() of the specialization: what keys Triton's override and dump folders."""
    return source(function, specialization).hash()


def cache_hash(function, capability, specialization, options, env):
    """The hash triton.compile gives compiling the specialization for `capability` with `options` (a
    backend options object) and these environment variables: a cache entry's metadata "hash".
    Raises OSError when the options name a library file that is not here."""
    from triton.runtime.cache import get_cache_key
    key = get_cache_key(source(function, specialization), backend(capability), options, env)
    return hashlib.sha256(key.encode()).hexdigest()


# A search over many specializations hashes them without building ASTSources: these three give what
# cache_hash gives, from its parts (ASTSource.hash's text and get_cache_key's). Callers confirm a
# match with cache_hash, so a release that changes either formula costs matches, never a wrong one.

def fast_source_hash(key_of_function, signature, constexprs, attrs):
    """source_hash from the function's key, the signature (name -> type), the constexprs ((index,) ->
    value) and the attrs."""
    signature_text = [value for _, value in sorted(signature.items())]
    constants = "-".join(key_text(value) for _, value in sorted(constexprs.items()))
    return hashlib.sha256(f"{key_of_function}-{str(attrs)}-{signature_text}-{constants}".encode()).hexdigest()


def key_suffix(capability, options, env):
    """What a cache key adds after the source's hash. OSError when the options name a library file
    that is not here."""
    return f"-{backend_hash(capability)}-{options.hash()}-{str(sorted(env.items()))}"


def fast_cache_hash(hash_of_source, suffix):
    """cache_hash from a source hash and a key_suffix."""
    return hashlib.sha256(f"{triton_key()}-{hash_of_source}{suffix}".encode()).hexdigest()


def key_text(value):
    """How a source hash spells a constexpr value."""
    return value.cache_key if hasattr(value, "cache_key") else str(value)


# ---- the JIT's binder ----

class StandInPointer:
    """What the binder reads from a tensor argument: its dtype and its address (16-aligned or not);
    for AMD's binder also the bytes it spans (ptr_range), over 2 GB: no buffer-op specialization."""

    def __init__(self, dtype, aligned):
        self.dtype = dtype
        self.address = 0x10000 if aligned else 0x10008

    def data_ptr(self):
        return self.address

    def ptr_range(self):
        return 2 ** 32


# Scalar stand-ins by Triton type and 16-divisibility: values the binder reads as that type.
_SCALARS = {("i32", True): 16, ("i32", False): 17, ("i64", True): 2**32 + 16, ("i64", False): 2**32 + 17,
            ("u64", True): 2**63 + 16, ("u64", False): 2**63 + 17}


def stand_in(triton_type, divisible):
    """An argument the JIT's binder reads as of `triton_type` ("*fp32", "*u8", "i32", "i64", "u64",
    "fp32", "u1", ...), 16-divisible (aligned) or not. A type a plain Python value cannot have (fp64,
    i1) gets the nearest one; the binder says what it makes of it (an annotation may force the type)."""
    if triton_type.startswith("*"):
        from ..spec.dtypes import triton_dtype
        return StandInPointer(triton_dtype(triton_type[1:].lstrip("k")), divisible)
    if triton_type in ("fp16", "bf16", "fp32", "fp64"):
        return 1.5
    if triton_type in ("u1", "i1"):
        return True
    return _SCALARS.get((triton_type, bool(divisible)), 17)


class _Binders:
    """The JIT's binder of each (function, capability), made once (making one runs exec)."""

    def __init__(self):
        self._made = {}

    def get(self, function, capability):
        key = (id(function), capability)
        if key not in self._made:
            from triton.runtime.jit import create_function_from_signature
            binder = create_function_from_signature(function.signature, function.params, backend(capability))
            self._made[key] = (function, binder)  # the function is kept so its id stays its own
        return self._made[key][1]


_BINDERS = _Binders()


def specialize(function, capability, arguments):
    """What JITFunction.run hands triton.compile for a call of `function` with `arguments` (parameter
    name -> value: stand_in() for runtime arguments, the value itself for constexprs and for runtime
    arguments passed as 1 or None). Runs the installed Triton's binder and _pack_args, so the result is
    that release's. Raises TypeError or ValueError for arguments the binder refuses."""
    binder = _BINDERS.get(function, capability)
    with _within_2gb_without_torch():
        bound, specialization, options = binder(**arguments)
    # The options _pack_args parses are no part of the specialization; explicit ones keep 3.9's
    # fp-fusion notice quiet.
    _, signature, constexprs, attrs = function._pack_args(backend(capability), explicit_options({}), bound,
                                                          specialization, options)
    return Specialization(dict(signature), dict(constexprs), dict(attrs))


@contextlib.contextmanager
def _within_2gb_without_torch():
    """While active, AMD's binder asks a stand-in's ptr_range() whether it spans at most 2 GB (its
    "S" specialization, tt.pointer_range = 32) as it does for any object that has one, without
    importing torch first (HIPBackend.is_within_2gb does: taot runs without torch)."""
    try:
        from triton.backends.amd.compiler import HIPBackend
    except ImportError:
        yield
        return
    original = HIPBackend.__dict__.get("is_within_2gb")
    if original is None:  # a Triton without buffer-op specialization
        yield
        return
    HIPBackend.is_within_2gb = staticmethod(lambda arg: hasattr(arg, "ptr_range") and arg.ptr_range() <= 2 ** 31 - 1)
    try:
        yield
    finally:
        HIPBackend.is_within_2gb = original


# ---- backend options ----

def options_from_metadata(capability, metadata):
    """The backend options object a cache entry was compiled with (its fields are in its metadata;
    fields the metadata lacks take their defaults). ValueError saying why when they do not fit."""
    defaults = options_object(capability, {})
    values = {field.name: _tupled(metadata[field.name]) for field in dataclasses.fields(defaults)
              if field.name in metadata}
    try:
        return type(defaults)(**values)
    except (TypeError, AssertionError, ValueError) as error:
        raise ValueError(f"its options are not {type(defaults).__name__}'s ({error})") from None


def options_object(capability, given):
    """The backend options object of a compile with these options (name -> value), the one a cache
    key hashes (compiler.parse_options gives its fields)."""
    return backend(capability).parse_options(explicit_options(given))


def option_values(options):
    """A backend options object's fields, name -> value."""
    return dict(options.__dict__)


def _tupled(value):
    """JSON lists back to the tuples the options hold."""
    if isinstance(value, list):
        return tuple(_tupled(item) for item in value)
    return value
