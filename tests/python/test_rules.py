# Launch-time rules: heuristics and `requires` compiled to postfix programs (docs/manifest.md), checked
# against Python's own evaluation of the rule's text; the case file the runtime's tests read is current.
import json
import sys
import textwrap

import pytest

from conftest import REPO
from taot.errors import SpecError
from taot.spec.expressions import run_program
from taot.spec.validate import load_spec

sys.path.insert(0, str(REPO / "tests" / "rules"))
import make_rule_cases  # noqa: E402


def test_rule_case_file_is_current():
    assert (REPO / "tests/rules/rule_cases.json").read_text() == make_rule_cases.render()


def test_programs_compute_what_python_computes_for_the_text():
    data = json.loads(make_rule_cases.render())
    constants = data["constants"]
    count = 0
    for case in data["cases"]:
        for n, m, flag, bias_is_none, block, even, result in case["runs"]:
            values = dict(constants, n=n, m=m, flag=bool(flag), bias=None if bias_is_none else 1, BLOCK=block,
                          EVEN=bool(even))
            assert run_program(case["program"], values) == result, (case["rule"], values)
            count += 1
    assert count > 3000


def test_untaken_branches_are_not_evaluated():
    data = json.loads(make_rule_cases.render())
    guarded = next(case for case in data["cases"] if case["rule"] == "n // m if m != 0 else -1")
    assert [op["op"] for op in guarded["program"]][:4] == ["arg", "lit", "ne", "jz"]
    assert all(run[-1] == -1 for run in guarded["runs"] if run[1] == 0)


KERNEL = '''
import triton
import triton.language as tl

@triton.jit
def kernel(x_ptr, bias_ptr, n_cols, eps, BLOCK: tl.constexpr, ACT: tl.constexpr):
    pass
'''

SPEC = '''
[library]
name = "lib"
targets = ["sm_90"]

[[kernel]]
name = "kernel"
source = "k.py"
grid = ["n_rows"]
requires = {requires}

[kernel.launch_args]
n_rows = "i32"

[kernel.args]
x_ptr = "*fp32"
bias_ptr = {{ type = "*fp32", none = true }}
n_cols = "i32"
eps = "fp32"
BLOCK = {{ constexpr = [256, 1024, 4096] }}
ACT = {{ constexpr = ["", "relu"] }}

[kernel.heuristics]
BLOCK = "max(256, next_power_of_2(n_cols))"

[kernel.default]
BLOCK = 1024
ACT = ""
'''


def load(tmp_path, requires):
    (tmp_path / "k.py").write_text(textwrap.dedent(KERNEL))
    (tmp_path / "spec.toml").write_text(SPEC.format(requires=json.dumps(requires)))
    return load_spec(tmp_path / "spec.toml", label="spec.toml")


def test_requires_reach_the_manifest_as_programs(tmp_path):
    from taot.spec.expressions import rule_program
    library = load(tmp_path, ["n_cols <= BLOCK", "n_rows * n_cols < 2147483648", "BLOCK >= 512 or bias_ptr is None"])
    kernel = library.kernels[0]
    assert [rule.text for rule in kernel.requires] == ["n_cols <= BLOCK", "n_rows * n_cols < 2147483648",
                                                      "BLOCK >= 512 or bias_ptr is None"]
    # the last reads only the config and None-ness: it also drops variants (BLOCK 256 with a bias)
    for variant in library.variants["kernel"]:
        bias = next(binding for binding in variant.bindings if binding.name == "bias_ptr")
        assert variant.config["BLOCK"] >= 512 or bias.none
    assert len(library.variants["kernel"]) == 3 * 2 * 2 - 2
    program = [{"op": "arg", "name": "n_cols"}, {"op": "field", "name": "BLOCK"}, {"op": "le"}]
    assert rule_program(kernel.requires[0], ["n_cols", "eps", "n_rows"]) == program


def test_pow_is_not_a_rule_operator(tmp_path):
    with pytest.raises(SpecError) as caught:
        load(tmp_path, ["n_rows * n_cols < 2 ** 31"])
    assert "kernel[0].requires[0]: expected a rule over scalar arguments" in str(caught.value)
    assert "Pow syntax is not allowed in a rule" in str(caught.value)


@pytest.mark.parametrize("rule, problem", [
    ("n_cols <= BLOK", "unknown name BLOK"),
    ("ACT == 1", "unknown name ACT"),   # a string field: rules compute numbers
    ("n_cols != 'relu'", "constant 'relu' is not allowed (rules compute numbers)"),
    ("x_ptr > 0", "pointer x_ptr can only be tested with `is None`"),
])
def test_bad_requires_are_named(tmp_path, rule, problem):
    with pytest.raises(SpecError) as caught:
        load(tmp_path, [rule])
    message = str(caught.value)
    assert message.startswith("spec.toml: kernel[0].requires[0]: expected a rule over scalar arguments"), message
    assert problem in message, message


def load_with_heuristic(tmp_path, rule):
    (tmp_path / "k.py").write_text(textwrap.dedent(KERNEL))
    spec = SPEC.format(requires=json.dumps(["n_cols > 0"])).replace('BLOCK = "max(256, next_power_of_2(n_cols))"', f"BLOCK = {json.dumps(rule)}")
    (tmp_path / "spec.toml").write_text(spec)
    return load_spec(tmp_path / "spec.toml", label="spec.toml")


@pytest.mark.parametrize("rule, text, shown", [
    ("8192 if n_cols > 4096 else max(256, next_power_of_2(n_cols))", None, "8192"),
    ("2048", None, "2048"),
    ("512 if n_cols > 300 else (4096 if n_cols > 200 else 128)",
     "512 if n_cols > 300 else 4096 if n_cols > 200 else 128", "512 or 128"),
])
def test_a_literal_heuristic_result_never_compiled_is_noted(tmp_path, rule, text, shown):
    kernel = load_with_heuristic(tmp_path, rule).kernels[0]
    notes = [note for note in kernel.notes if "no variant was compiled with" in note]
    it = "them" if " or " in shown else "it"
    assert notes == [f'kernel[0].heuristics.BLOCK: BLOCK = "{text or rule}" can give {shown}, which no variant was '
                     f"compiled with (compiled: 256, 1024, 4096), so calls that get {it} fail at launch: add {it} to "
                     "BLOCK's values or change the rule"], kernel.notes


@pytest.mark.parametrize("rule", ["4096 if n_cols > 1024 else 1024", "max(256, next_power_of_2(n_cols))",
                                  "min(8192, next_power_of_2(n_cols))"])
def test_compiled_or_computed_heuristic_results_are_not_noted(tmp_path, rule):
    kernel = load_with_heuristic(tmp_path, rule).kernels[0]
    assert not [note for note in kernel.notes if "no variant was compiled with" in note], kernel.notes


def test_a_rule_for_an_option_without_values_says_to_list_them(tmp_path):
    (tmp_path / "k.py").write_text(textwrap.dedent(KERNEL))
    spec = SPEC.format(requires=json.dumps(["n_cols > 0"])).replace(
        'BLOCK = "max(256, next_power_of_2(n_cols))"', 'num_warps = "8 if n_cols > 2048 else 4"')
    (tmp_path / "spec.toml").write_text(spec)
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "spec.toml", label="spec.toml")
    assert str(caught.value).endswith('got a rule for "num_warps"; an option is a config field when its values are '
                                      "listed: [kernel.options] num_warps = [...], the values the rule may give"), \
        str(caught.value)
