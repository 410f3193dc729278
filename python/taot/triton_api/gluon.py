# Gluon kernels (`@gluon.jit`, triton.experimental.gluon): everything taot does differently for them,
# in one place. A Gluon function is a JITFunction (a GluonJITFunction, whose is_gluon() is true), so
# Triton's JIT binds, specializes, keys and launches it as any other: the same binder and _pack_args,
# the same function cache key, the same ASTSource.hash and get_cache_key, the same launch ABI (a Gluon
# TensorDescriptor is passed as a tl one is). It differs in three things only, each handled here:
#   - the source the JIT compiles is a GluonASTSource (language GLUON), from whose IR the backend
#     starts at its "ttgir" stage (gluon_to_ttgir in place of make_ttir + make_ttgir): a Gluon compile
#     has no .ttir;
#   - a tensor-descriptor argument's type carries its shared-memory layout
#     ("tensordesc<fp16[64, 64],NVMMASharedLayout(swizzle_byte_width=128, ...)>"), which the host
#     picks; taot compiles the layout Triton's NVMMASharedLayout.get_default_for gives the block;
#   - the kernel fixes its own layouts, so num_warps must agree with them (a layout of 4 warps in a
#     variant of 8 is an MLIR error), and Gluon's API changes between releases: compile_error_hint.
import re

from . import VERSION

TENSORDESC = re.compile(r"tensordesc<\s*([A-Za-z0-9_]+)\s*\[([^\]]*)\]\s*>")   # a tl descriptor type: no layout
# What a Gluon builtin says when a release removed it (3.9: "async_copy_global_to_shared has been removed;
# call async_load instead").
RENAMED = re.compile(r"\bhas been removed\b")
WARP_MISMATCH = re.compile(r"Layout has (\d+) warps per CTA, but the context requires (\d+) warps per CTA")


def available():
    """Whether the installed Triton has Gluon (triton.experimental.gluon)."""
    try:
        from triton.experimental.gluon import _runtime  # noqa: F401
    except ImportError:
        return False
    return True


def is_gluon(function):
    """Whether a @triton.jit-like function object is a Gluon kernel (`@gluon.jit`)."""
    test = getattr(function, "is_gluon", None)
    return bool(test()) if callable(test) else False


def source(function, signature, constexprs, attrs):
    """The source object Triton's JIT compiles `function` from: a GluonASTSource for a Gluon kernel
    (Triton's own class; its language and first stage differ), an ASTSource otherwise."""
    if is_gluon(function):
        from triton.experimental.gluon._runtime import GluonASTSource
        return GluonASTSource(function, dict(signature), constexprs, attrs)
    from triton.compiler import ASTSource
    return ASTSource(function, dict(signature), constexprs, attrs)


def signature(function, types):
    """`types` (parameter name -> Triton type) as Triton's JIT specializes `function`: for a Gluon
    kernel each descriptor type without a layout ("tensordesc<fp16[64, 64]>", the spec's form) gets
    the one the host gives a Gluon TensorDescriptor by default, NVMMASharedLayout.get_default_for(block,
    dtype), spelled as the installed Triton's JIT spells it. Other types, and any other kernel's
    signature, are returned as they are."""
    if not is_gluon(function):
        return dict(types)
    return {name: _with_default_layout(value) if isinstance(value, str) else value for name, value in types.items()}


def default_layout(dtype_name, block):
    """Gluon's default shared-memory layout of a descriptor block of dtype `dtype_name` ("fp16")."""
    from triton.experimental.gluon import language as gl
    from ..spec.dtypes import triton_dtype
    return gl.NVMMASharedLayout.get_default_for(list(block), triton_dtype(dtype_name))


def descriptor_type(dtype_name, block, layout=None):
    """The type Triton's JIT gives a Gluon TensorDescriptor of dtype `dtype_name`, block `block` and
    shared layout `layout` (default: default_layout): the JIT's own mangling of a stand-in descriptor."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from triton.runtime.jit import mangle_type
    from ..spec.dtypes import triton_dtype
    from .jit import StandInPointer
    block = [int(size) for size in block]
    layout = layout if layout is not None else default_layout(dtype_name, block)
    # Strides of 16 elements keep TensorDescriptor's 16-byte row pitch check quiet for any dtype; only
    # the dtype, block and layout reach the type.
    strides = [16] * (len(block) - 1) + [1]
    descriptor = TensorDescriptor(StandInPointer(triton_dtype(dtype_name), True), list(block), strides, block, layout)
    return mangle_type(descriptor)


def _with_default_layout(type_text):
    match = TENSORDESC.fullmatch(type_text.strip())
    if match is None:
        return type_text
    block = [int(size) for size in match.group(2).split(",")]
    return descriptor_type(match.group(1), block)


def compile_error_hint(function, error_text):
    """A line to add to a failed compile's message of a Gluon kernel ("" when none helps): the
    num_warps rule when the kernel's layouts use another warp count than the variant's, and the
    release when the kernel calls what the installed Gluon does not have."""
    if not is_gluon(function):
        return ""
    mismatch = WARP_MISMATCH.search(error_text)
    if mismatch:
        used, compiled = mismatch.groups()
        return (f"\nhint: a Gluon kernel's layouts fix its warp count: this variant compiles with num_warps = "
                f"{compiled} and a layout of the kernel spans {used} warps; give the spec the num_warps its "
                f"layouts use, or build them from gl.num_warps()")
    if ("AttributeError" in error_text and "gluon" in error_text) or RENAMED.search(error_text):
        return (f"\nhint: Gluon's API changes between Triton releases and this is Triton {VERSION}: the kernel "
                f"may be written for another release")
    return ""
