# Triton's interpreter (TRITON_INTERPRET=1: kernels run on the CPU with NumPy), as `taot check
# --against interpreter` uses it.
from triton.runtime import interpreter


def interpreted_function(value):
    """The InterpretedFunction inside `value` (triton.jit makes one under TRITON_INTERPRET=1), out of
    the @triton.autotune / @triton.heuristics wrappers (each keeps what it wraps in .fn)."""
    while not isinstance(value, interpreter.InterpretedFunction):
        value = value.fn
    return value


def index_scalars_as_numpy_2_4_allows():
    """Triton's interpreter (3.5 to 3.9) holds each int argument as a 1-element 1-d array
    (`_implicit_cvt`) and turns a tensor into a Python int (`range(0, K, BLOCK_K)` over an argument K)
    with `int(self.handle.data)` (`_patch_lang_tensor`: `__index__`). NumPy 2.4 refuses int() of an
    array with ndim > 0 ("only 0-dimensional arrays can be converted to Python scalars"), so such a
    kernel fails in the interpreter whatever it is given. Index through the array's single element
    instead (the fix proposed in triton-lang/triton#9171); same result where int() worked."""
    patch_tensor = interpreter._patch_lang_tensor

    def patch_tensor_and_index(tensor, scope):
        patch_tensor(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    interpreter._patch_lang_tensor = patch_tensor_and_index
