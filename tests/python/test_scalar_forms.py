# Scalars the JIT takes in more than one form: a float or int that callers pass as None (`none =
# true`: the None form compiles it as a constexpr None, as Triton does), and a scalar that is an int
# on some calls and a float on others (`type = ["i32", "fp32"]`: Triton specializes on the Python
# type). Each form is a variant dimension; rules and filters may test any argument against None.
import json
import textwrap

import pytest

from taot.compile.jobs import variant_inputs
from taot.errors import SpecError
from taot.library.manifest import _arg, rule_entries, variant_params
from taot.spec.expressions import run_program
from taot.spec.validate import load_spec

SOURCE = '''
import triton
import triton.language as tl

@triton.heuristics(values={"HAS_SOFTCAP": lambda args: args["softcap"] is not None})
@triton.jit
def kernel(x_ptr, n, softcap, lower, HAS_SOFTCAP: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    if HAS_SOFTCAP:
        x = x / softcap
    tl.store(x_ptr + offsets, tl.maximum(x, lower), mask=offsets < n)
'''

SPEC = '''
[library]
name = "lib"
targets = ["sm_90"]

[[kernel]]
name = "kernel"
source = "k.py"
grid = ["cdiv(n, BLOCK)"]

[kernel.args]
x_ptr = "*fp32"
n = "i32"
softcap = {softcap}
lower = {lower}
BLOCK = {{ constexpr = 256 }}
'''


def load(tmp_path, softcap='{ type = "fp32", none = true }', lower='{ type = ["i32", "fp32"] }', extra=""):
    (tmp_path / "k.py").write_text(textwrap.dedent(SOURCE))
    path = tmp_path / "spec.toml"
    path.write_text(textwrap.dedent(SPEC).format(softcap=softcap, lower=lower) + extra)
    return load_spec(path, label="spec.toml")


def error(tmp_path, **kwargs):
    with pytest.raises(SpecError) as caught:
        load(tmp_path, **kwargs)
    return str(caught.value)


def entry_of(library):
    """What the manifest says of the kernel's arguments, variants (specialization, params) and rules."""
    kernel, variants = library.kernels[0], library.variants["kernel"]
    entry = {"args": [_arg(arg, variants) for arg in kernel.args],
             "variants": [{"specialization": [b.rules.specialization(b) for b in v.bindings],
                           "params": variant_params(v)} for v in variants]}
    entry.update(rule_entries(kernel))
    return entry


def forms(variant):
    return {binding.name: ("None" if binding.none else binding.type, binding.hint)
            for binding in variant.bindings if binding.name in ("softcap", "lower")}


def test_each_form_is_a_variant_and_the_rule_follows_none(tmp_path):
    library = load(tmp_path)
    found = sorted((forms(v)["softcap"][0], forms(v)["lower"][0], v.config["HAS_SOFTCAP"])
                   for v in library.variants["kernel"])
    # HAS_SOFTCAP is decided per variant by softcap's form (the rule filters), so 2 x 2 variants
    assert found == [("None", "fp32", False), ("None", "i32", False), ("fp32", "fp32", True), ("fp32", "i32", True)]
    kernel = library.kernels[0]
    assert {arg.name: arg.kind for arg in kernel.args}["softcap"] == "scalar"
    assert {arg.name: arg.kind for arg in kernel.args}["lower"] == "scalar"


def test_a_none_form_compiles_as_a_constexpr_none_and_the_int_form_keeps_its_hint(tmp_path):
    library = load(tmp_path, lower='{ type = ["i32", "fp32"], hint = [16, "none"] }')
    kernel = library.kernels[0]
    seen = set()
    for variant in library.variants["kernel"]:
        inputs = variant_inputs(kernel, variant)
        softcap, lower = forms(variant)["softcap"], forms(variant)["lower"]
        if softcap[0] == "None":
            assert inputs["signature"]["softcap"] == "constexpr" and inputs["constexprs"]["softcap"] is None
        else:
            assert inputs["signature"]["softcap"] == "fp32"
        assert inputs["signature"]["lower"] == lower[0]
        divisible = [["tt.divisibility", 16]] == inputs["attrs"].get("3")
        assert divisible == (lower == ("i32", 16)), (lower, inputs["attrs"])
        seen.add(lower)
    assert seen == {("i32", 16), ("i32", 0), ("fp32", 0)}


def test_manifest_entries_and_the_rule_program(tmp_path):
    library = load(tmp_path)
    entry = entry_of(library)
    args = {arg["name"]: arg for arg in entry["args"]}
    assert args["softcap"] == {"name": "softcap", "kind": "scalar", "types": ["fp32"], "none": True}
    assert args["lower"] == {"name": "lower", "kind": "scalar", "types": ["i32", "fp32"]}
    for variant in entry["variants"]:
        spec = {s["arg"]: s for s in variant["specialization"]}
        assert ("softcap" in variant["params"]) == (not spec["softcap"].get("none", False))
    program = entry["heuristics"][0]["program"]
    assert program == [{"op": "isnone", "name": "softcap"}, {"op": "not"}]
    assert run_program(program, {"softcap": None}) == 0
    assert run_program(program, {"softcap": 2.0}) == 1


def test_rules_may_test_any_argument_against_none(tmp_path):
    # n is an int no call passes as None: the test is constant, as the JIT would find it
    library = load(tmp_path, extra='\n[kernel.heuristics]\nHAS_SOFTCAP = "softcap is not None and n is not None"\n')
    entry = entry_of(library)
    program = entry["heuristics"][0]["program"]
    assert {"op": "lit", "value": 1} in program
    assert run_program(program, {"softcap": None, "n": 5}) == 0
    assert run_program(program, {"softcap": 1.5, "n": 5}) == 1


def test_spec_errors_name_the_argument(tmp_path):
    message = error(tmp_path, lower='{ type = ["i32", "fp32", "fp64"] }')
    assert "kernel[0].args.lower.type" in message and "int types and one float type" in message
    message = error(tmp_path, lower='{ type = "i1", none = true }')
    assert "none = true only on pointers and int or float scalars" in message and "lower" in message
    message = error(tmp_path, softcap='{ type = "fp32", none = true, hint = 16 }')
    assert "no hint: softcap takes no int" in message
    message = error(tmp_path, softcap='{ type = "fp32", none = "yes" }')
    assert "true or false" in message
