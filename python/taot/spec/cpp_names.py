# The names generated C/C++ code cannot use, as codegen/src/names.cpp and the manifest reader refuse
# them, so that a spec naming one fails when it is read, not after its kernels compiled
# (tests/python/test_cpp_names.py checks that the lists agree with the code generator's).

# C++20 keywords and alternative tokens, C11 keywords C++ lacks, and standard macros that would
# expand in a declaration: a config field named so gets a trailing underscore as a C++ member; a
# library or kernel may not be named so.
RESERVED_WORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t
class compl concept const consteval constexpr constinit const_cast continue co_await co_return
co_yield decltype default delete do double dynamic_cast else enum explicit export extern false float
for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq
private protected public register reinterpret_cast requires return short signed sizeof static
static_assert static_cast struct switch template this thread_local throw true try typedef typeid
typename union unsigned using virtual void volatile wchar_t while xor xor_eq
restrict _Alignas _Alignof _Atomic _Bool _Complex _Generic _Imaginary _Noreturn _Static_assert _Thread_local
NULL offsetof errno assert complex imaginary noreturn
""".split())

# Names a generated library defines itself, which a kernel may not take.
RESERVED_KERNEL_NAMES = frozenset(("preload", "unload", "library", "detail", "std", "taot", "CUstream"))


def kernel_name_problem(name):
    """Why `name` cannot name a kernel of a generated library, or None."""
    if name in RESERVED_WORDS:
        return f'"{name}" is a C or C++ keyword'
    if name in RESERVED_KERNEL_NAMES:
        return (f'"{name}" is reserved in a generated library (' + ", ".join(sorted(RESERVED_KERNEL_NAMES)) +
                " are)")
    return None
