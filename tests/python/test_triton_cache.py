"""Reading a Triton cache entry's tt.func without Triton: parameter names, kinds, hints and the
kernel's file, and the refusals that name the argument (taot/triton_cache.py)."""
import pytest

from taot.workbench.triton_cache import CacheProblem, function_location, integer_constants, parse_parameters

SOURCE = '''#loc = loc("/work/my kernels/k\\C3\\A9.py":12:0)
#loc7 = loc("/work/my kernels/k\\C3\\A9.py":14:8)
module {
  tt.func private @helper(%a: i32 loc("a"(#loc7))) -> i32 {
    tt.return %a : i32
  } loc(#loc7)
  tt.func public @kern(%x_ptr: !tt.ptr<f16> {tt.divisibility = 16 : i32} loc("x_ptr"(#loc)), %arg1: i64 {tt.divisibility = 16 : i32} loc("n_rows"(#loc)), %scale: f32 loc("scale"(#loc)), %flag: i1 loc("flag"(#loc)), %y: !tt.ptr<i8> loc("y"(#loc))) attributes {noinline = false} {
    %c = arith.constant 1024 : i32 loc(#loc7)
    %r = tt.make_range {end = 1024 : i32, start = 0 : i32} : tensor<1024xi32> loc(#loc7)
    tt.return loc(#loc7)
  } loc(#loc)
} loc(#loc)
'''


def test_parameters_are_named_by_their_locations_with_kinds_and_hints():
    parameters = parse_parameters(SOURCE, "kern")
    assert [(p.name, p.kind, p.type, p.divisibility) for p in parameters] == [
        ("x_ptr", "pointer", "fp16", 16), ("n_rows", "int", "i64", 16), ("scale", "float", "fp32", 0),
        ("flag", "bool", "i1", 0), ("y", "pointer", "i8", 0)]


def test_the_kernels_file_is_the_location_its_arguments_name():
    assert function_location(SOURCE, "kern") == ("/work/my kernels/k\u00e9.py", 12)


def test_integer_constants_come_most_frequent_first():
    assert integer_constants(SOURCE)[:2] == [1024, 0]


@pytest.mark.parametrize("argument, message", [
    ("%d: !tt.tensordesc<tensor<64x64xf16>> loc(\"d\"(#loc))", "argument d of @kern is a tensor descriptor"),
    ("%h: f16 loc(\"h\"(#loc))", "argument h of @kern has type f16, which taot cannot pass"),
    ("%p: !tt.ptr<f8E4M3FNUZ> loc(\"p\"(#loc))", "argument p of @kern points to f8E4M3FNUZ"),
])
def test_arguments_taot_cannot_pass_are_named(argument, message):
    text = SOURCE.replace('%flag: i1 loc("flag"(#loc))', argument)
    with pytest.raises(CacheProblem, match=message.replace("(", r"\(")):
        parse_parameters(text, "kern")


def test_a_missing_function_is_named():
    with pytest.raises(CacheProblem, match="no tt.func @other"):
        parse_parameters(SOURCE, "other")
