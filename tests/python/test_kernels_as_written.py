# Kernels as their users write them: @triton.autotune and @triton.heuristics read, config lists,
# string constexprs, None pointers, option-named constexprs, per-kernel targets and per-target
# options, launch-only arguments and num_sms in grids.
import json
import textwrap

import pytest

from conftest import REPO
from taot import triton_api
from taot.errors import SpecError
from taot.compile.jobs import variant_inputs
from taot.spec.validate import load_spec

HEADER = "import triton\nimport triton.language as tl\n\n"


def write(tmp_path, source, spec, name="spec.toml"):
    (tmp_path / "k.py").write_text(HEADER + textwrap.dedent(source))
    path = tmp_path / name
    path.write_text(textwrap.dedent(spec))
    return path


def load(tmp_path, source, spec, **kwargs):
    return load_spec(write(tmp_path, source, spec), label="spec.toml", **kwargs)


def error(tmp_path, source, spec, **kwargs):
    with pytest.raises(SpecError) as caught:
        load(tmp_path, source, spec, **kwargs)
    return str(caught.value)


AUTOTUNED = '''
def prune(configs, named_args, **kwargs):
    return configs

@triton.autotune(
    configs=[triton.Config({"BLOCK": 128}, num_warps=4, num_stages=2),
             triton.Config({"BLOCK": 256}, num_warps=8),
             triton.Config({"BLOCK": 512, "EVEN": True}, num_warps=8, num_stages=4)],
    key=["n"], prune_configs_by={"early_config_prune": prune, "top_k": 2}, reset_to_zero=["out_ptr"])
@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr = False):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
'''

KERNEL_SPEC = '''
[library]
name = "lib"
targets = ["sm_90"]

[[kernel]]
name = "kernel"
source = "k.py"
grid = ["cdiv(n, BLOCK)"]
{extra}

[kernel.args]
x_ptr = "*fp32"
out_ptr = "*fp32"
n = "i32"
{args}
'''


def spec(extra="", args=""):
    return KERNEL_SPEC.format(extra=extra, args=args)


def configs_of(library, kernel="kernel"):
    return [(variant.config, variant.targets) for variant in library.variants[kernel]]


def test_autotune_configs_are_the_config_list(tmp_path):
    library = load(tmp_path, AUTOTUNED, spec())
    kernel = library.kernels[0]
    assert [variant.config for variant in library.variants["kernel"]] == [
        {"BLOCK": 128, "EVEN": False, "num_warps": 4, "num_stages": 2},
        {"BLOCK": 256, "EVEN": False, "num_warps": 8, "num_stages": 3},   # Triton's default stages
        {"BLOCK": 512, "EVEN": True, "num_warps": 8, "num_stages": 4},
    ]
    assert kernel.tuning_key == ("n",)
    fields = {field.name: field for field in kernel.config}
    assert fields["BLOCK"].default == 128 and fields["num_warps"].default == 4  # the first config
    assert "num_ctas" not in fields  # every config leaves it at Triton's default
    assert any("prune_configs_by (early_config_prune, perf_model)" in note or
               "prune_configs_by (early_config_prune)" in note for note in kernel.notes)
    inputs = variant_inputs(kernel, library.variants["kernel"][2])
    assert inputs["constexprs"] == {"BLOCK": 512, "EVEN": True}
    assert inputs["options"] == {"num_warps": 8, "num_stages": 4}


def test_autotune_configs_are_timed_at_first_call_with_the_decorators_buffers(tmp_path):
    kernel = load(tmp_path, AUTOTUNED, spec()).kernels[0]
    assert kernel.autotune.at_first_call is True
    assert kernel.autotune.fields == ("BLOCK", "EVEN", "num_warps", "num_stages")  # what the configs vary
    assert kernel.autotune.reset_to_zero == ("out_ptr",) and kernel.autotune.restore_value == ()


def test_the_spec_overrides_what_first_call_autotuning_takes(tmp_path):
    kernel = load(tmp_path, AUTOTUNED, spec('autotune = { at_first_call = false, reset_to_zero = [], '
                                            'restore_value = ["x_ptr"] }')).kernels[0]
    assert kernel.autotune.at_first_call is False
    assert kernel.autotune.reset_to_zero == () and kernel.autotune.restore_value == ("x_ptr",)


def test_spec_configs_alone_are_not_timed_at_first_call_unless_asked(tmp_path):
    plain = AUTOTUNED.split("@triton.autotune")[0] + "@triton.jit" + AUTOTUNED.split("@triton.jit")[1]
    configs = 'tuning_key = ["n"]\nconfigs = [{ BLOCK = 128 }, { BLOCK = 256, num_warps = 8 }]'
    kernel = load(tmp_path, plain, spec(configs)).kernels[0]
    assert kernel.autotune.at_first_call is False and kernel.autotune.fields == ("BLOCK", "num_warps")
    asked = load(tmp_path, plain, spec(configs + "\nautotune = { at_first_call = true }")).kernels[0]
    assert asked.autotune.at_first_call is True
    assert load(tmp_path, plain, spec('configs = [{ BLOCK = 128 }, { BLOCK = 256 }]')).kernels[0].autotune is None


@pytest.mark.parametrize("table, message", [
    ('{ reset_to_zero = ["n"] }', 'kernel[0].autotune.reset_to_zero[0]: expected a pointer argument (x_ptr, out_ptr), '
                                  'got "n"'),
    ('{ at_first_call = "yes" }', "kernel[0].autotune.at_first_call: expected true or false"),
    ('{ when = "always" }', "kernel[0].autotune.when: expected one of the keys at_first_call, reset_to_zero, "
                            "restore_value, got an unknown key"),
    ('{ at_first_call = true }\ntuning_key = []', "kernel[0].autotune: expected a kernel with a tuning key and several "
                                                 "configs, got an autotune table for a kernel with no tuning key"),
])
def test_a_bad_autotune_table_names_its_key(tmp_path, table, message):
    assert message in error(tmp_path, AUTOTUNED, spec("autotune = " + table))


def test_a_config_pre_hook_is_named_as_work_the_caller_must_do(tmp_path):
    source = AUTOTUNED.replace('triton.Config({"BLOCK": 256}, num_warps=8)',
                               'triton.Config({"BLOCK": 256}, num_warps=8, pre_hook=zero_out)')
    library = load(tmp_path, "def zero_out(nargs):\n    nargs['out_ptr'].zero_()\n" + source, spec())
    (note,) = [note for note in library.kernels[0].notes if "pre_hook" in note]
    assert note.startswith("configs[1] has a pre_hook (zero_out), which Triton runs before every launch")
    assert "the caller must do its work" in note


UNSPECIALIZED = '''
@triton.jit(do_not_specialize=["n"], do_not_specialize_on_alignment=["x_ptr"])
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
'''


def test_specializing_what_do_not_specialize_names_is_noted(tmp_path):
    text = spec(args="BLOCK = { constexpr = 128 }").replace('x_ptr = "*fp32"', 'x_ptr = { type = "*fp32", align = 16 }')
    text = text.replace('n = "i32"', 'n = { type = "i32", hint = [16, "none"] }')
    notes = [note for note in load(tmp_path, UNSPECIALIZED, text).kernels[0].notes if "never specializes" in note]
    assert notes == [
        "kernel[0].args.x_ptr.align: x_ptr is in @triton.jit(do_not_specialize_on_alignment=...), so Triton's JIT "
        "never specializes it; align = 16 compiles variants that do (chosen by value at launch); leave align out to "
        "compile as the JIT does",
        "kernel[0].args.n.hint: n is in @triton.jit(do_not_specialize=...), so Triton's JIT never specializes it; "
        "hint = 16 compiles variants that do (chosen by value at launch); leave hint out to compile as the JIT does"]
    plain = load(tmp_path, UNSPECIALIZED, spec(args="BLOCK = { constexpr = 128 }")).kernels[0]
    assert not [note for note in plain.notes if "never specializes" in note], plain.notes


ANNOTATED = '''
@triton.jit
def kernel(x_ptr, out_ptr, n: tl.int64, scale: tl.float32, flip: bool, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n) * scale
    tl.store(out_ptr + offsets, -x if flip else x, mask=offsets < n)
'''


def annotated_spec(n="i64", scale="fp32", flip="bool"):
    return spec(args=f'scale = "{scale}"\nflip = "{flip}"\nBLOCK = {{ constexpr = 128 }}').replace(
        'n = "i32"', f"n = {{ type = {json.dumps(n)} }}")


def test_annotated_scalars_are_passed_as_annotated(tmp_path):
    library = load(tmp_path, ANNOTATED, annotated_spec())
    (variant,) = library.variants["kernel"]
    inputs = variant_inputs(library.kernels[0], variant)
    assert (inputs["signature"]["n"], inputs["signature"]["scale"], inputs["signature"]["flip"]) == ("i64", "fp32", "i1")


@pytest.mark.parametrize("changed, message", [
    (dict(n="i32"), 'kernel[0].args.n.type: expected "i64" (n is annotated tl.int64 in the function, and Triton\'s '
                    'JIT passes it as i64), got "i32"'),
    (dict(n=["i32", "i64"]), 'kernel[0].args.n.type: expected "i64" (n is annotated tl.int64'),
    (dict(scale="fp64"), 'kernel[0].args.scale.type: expected "fp32" (scale is annotated tl.float32'),
    (dict(flip="i32"), 'kernel[0].args.flip.type: expected "i1" (flip is annotated bool'),
])
def test_a_spec_type_against_the_annotation_is_an_error(tmp_path, changed, message):
    assert message in error(tmp_path, ANNOTATED, annotated_spec(**changed))


DEBUG_JIT = '''
@triton.jit(debug=True)
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.device_assert(n > 0, "n must be positive")
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
'''


@pytest.mark.parametrize("options, debug", [("", True), ("[kernel.options]\ndebug = false", False)])
def test_jit_debug_is_the_kernels_default_debug_option(tmp_path, options, debug):
    library = load(tmp_path, DEBUG_JIT, spec(args="BLOCK = { constexpr = 128 }\n" + options))
    (variant,) = library.variants["kernel"]
    assert variant_inputs(library.kernels[0], variant)["options"].get("debug", False) is debug


def test_own_values_that_replace_the_config_lists_are_noted(tmp_path):
    library = load(tmp_path, AUTOTUNED, spec(args="BLOCK = { constexpr = [256, 1024] }"))
    assert {variant.config["BLOCK"] for variant in library.variants["kernel"]} == {256, 1024}
    notes = [note for note in library.kernels[0].notes if "replaces the config list" in note]
    assert notes == ["[kernel.args] BLOCK = 256, 1024 replaces the config list's BLOCK values (128, 256, 512): "
                     "128, 512 are not compiled"], library.kernels[0].notes
    kept = load(tmp_path, AUTOTUNED, spec(args="BLOCK = { constexpr = [128, 256, 512, 1024] }"))
    assert not [note for note in kept.kernels[0].notes if "replaces the config list" in note]


def test_a_misspelt_helper_is_a_spec_error_at_the_line_that_uses_it(tmp_path):
    (tmp_path / "act_helpers.py").write_text(HEADER + "@triton.jit\ndef gelu_tanh(x):\n    return x\n")
    source = """
    import act_helpers as ah

    @triton.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offsets, mask=offsets < n)
        tl.store(out_ptr + offsets, ah.gelu_tanhh(x), mask=offsets < n)
    """
    assert error(tmp_path, source, spec(args="BLOCK = { constexpr = 128 }")) == (
        "spec.toml: kernel[0].name: expected a function whose globals and attributes all resolve, got k.py:11: "
        "AttributeError: module 'act_helpers' has no attribute 'gelu_tanhh' (did you mean gelu_tanh?)")



def test_a_misspelt_name_in_a_helper_in_another_module_is_found_in_that_helper(tmp_path):
    # Every Triton release finds it when the spec loads (3.8 on would find it only at compile time).
    (tmp_path / "scaling.py").write_text(HEADER + "@triton.jit\ndef scale(x):\n    return x * 2\n")
    (tmp_path / "act_helpers.py").write_text(HEADER + "import scaling\n\n\n@triton.jit\ndef gelu_tanh(x):\n"
                                             "    y = x + 1\n    return scaling.scalle(y)\n")
    source = """
    from act_helpers import gelu_tanh

    @triton.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, gelu_tanh(tl.load(x_ptr + offsets, mask=offsets < n)), mask=offsets < n)
    """
    assert error(tmp_path, source, spec(args="BLOCK = { constexpr = 128 }")) == (
        "spec.toml: kernel[0].name: expected a function whose globals and attributes all resolve, got "
        "act_helpers.py:10: AttributeError: module 'scaling' has no attribute 'scalle' (did you mean scale?)")


DTYPE_HEURISTIC = '''
@triton.heuristics({"IS_FP16": lambda args: str(args["x_ptr"].dtype) == "torch.float16"})
@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, IS_FP16: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    tl.store(out_ptr + offsets, x.to(tl.float32) * (2.0 if IS_FP16 else 1.0), mask=offsets < n)
'''


def test_a_heuristic_on_a_dtype_is_left_to_the_spec_when_it_describes_the_field(tmp_path):
    typed = spec('[kernel.types]\nT = ["fp16", "bf16"]', "BLOCK = { constexpr = 128 }").replace('x_ptr = "*fp32"',
                                                                                             'x_ptr = "*T"')
    message = error(tmp_path, DTYPE_HEURISTIC, typed)
    assert "kernel[0].function(@triton.heuristics).IS_FP16" in message
    assert "or describe IS_FP16 under [kernel.args] with the values to compile" in message
    tied = typed.replace('grid = ["cdiv(n, BLOCK)"]', 'grid = ["cdiv(n, BLOCK)"]\nwhere = ["IS_FP16 == (T == \'fp16\')"]')
    library = load(tmp_path, DTYPE_HEURISTIC, tied + "IS_FP16 = { constexpr = [true, false] }\n"
                                                   "[kernel.default]\nIS_FP16 = false\n")
    assert [(v.config["IS_FP16"], v.id.split("_")[1]) for v in library.variants["kernel"]] == [(True, "fp16"),
                                                                                              (False, "bf16")]
    assert not library.kernels[0].heuristics
    (note,) = [note for note in library.kernels[0].notes if "IS_FP16" in note]
    assert note.startswith("@triton.heuristics IS_FP16 (k.py:5) is not evaluated at launch")


CHUNKS_HEURISTIC = '''
def _num_chunks(args):
    n = args["n"]
    return triton.cdiv(n, 128)

@triton.heuristics({"NCHUNK": _num_chunks})
@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, NCHUNK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * NCHUNK, mask=offsets < n)
'''


def test_an_untranslated_heuristic_is_an_error_even_when_its_field_is_described(tmp_path):
    # Describing NCHUNK's values alone would leave it at its default where the JIT computes cdiv(n, 128).
    described = spec(args="BLOCK = { constexpr = 128 }\nNCHUNK = { constexpr = [1, 8, 40] }\n"
                          "[kernel.default]\nNCHUNK = 1")
    message = error(tmp_path, CHUNKS_HEURISTIC, described)
    assert "kernel[0].function(@triton.heuristics).NCHUNK" in message, message
    assert "write it in the spec instead: [kernel.heuristics] NCHUNK" in message, message
    library = load(tmp_path, CHUNKS_HEURISTIC, described + '\n[kernel.heuristics]\nNCHUNK = "cdiv(n, 128)"\n')
    assert [(name, rule.text) for name, rule in library.kernels[0].heuristics] == [("NCHUNK", "cdiv(n, 128)")]


def test_spec_extends_and_narrows_the_decorators_configs(tmp_path):
    extra = '''where = ["BLOCK != 256"]
configs = [{ BLOCK = 1024, num_warps = 16 }]
tuning_key = ["n"]'''
    library = load(tmp_path, AUTOTUNED, spec(extra))
    blocks = [config["BLOCK"] for config, _ in configs_of(library)]
    assert blocks == [128, 512, 1024]
    assert configs_of(library)[-1][0] == {"BLOCK": 1024, "EVEN": False, "num_warps": 16, "num_stages": 3}


def test_spec_option_values_cross_every_config(tmp_path):
    library = load(tmp_path, AUTOTUNED, spec('[kernel.options]\nnum_stages = [3, 5]'))
    pairs = [(config["BLOCK"], config["num_stages"]) for config, _ in configs_of(library)]
    assert pairs == [(128, 3), (256, 3), (512, 3), (128, 5), (256, 5), (512, 5)]


def test_default_is_the_first_config_that_survives_the_filters(tmp_path):
    library = load(tmp_path, AUTOTUNED, spec('where = ["BLOCK > 128"]'))
    fields = {field.name: field.default for field in library.kernels[0].config}
    assert fields["BLOCK"] == 256 and fields["num_warps"] == 8


def test_config_entry_names_are_checked(tmp_path):
    message = error(tmp_path, AUTOTUNED, spec('configs = [{ BLOK = 64 }]'))
    assert message.startswith("spec.toml: kernel[0].configs[0].BLOK: expected a constexpr parameter or option: "
                              "BLOCK, EVEN, num_warps")
    assert message.endswith('got "BLOK", an unknown name')
    message = error(tmp_path, AUTOTUNED, spec('configs = [{ n = 64 }]'))
    assert message.endswith('got "n", a parameter that is not tl.constexpr')


HEURISTIC = '''
FACTOR = 2

@triton.heuristics(values={"BLOCK": lambda args: triton.next_power_of_2(args["n"]) * FACTOR,
                           "num_warps": lambda args: 8 if args["BLOCK"] >= 2048 else 4,
                           "HAS_BIAS": lambda args: args["bias_ptr"] is not None})
@triton.jit
def kernel(x_ptr, bias_ptr, out_ptr, n, BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr):
    pass
'''

HEURISTIC_SPEC = '''
[library]
name = "lib"
targets = ["sm_90"]

[[kernel]]
name = "kernel"
source = "k.py"
grid = [1]

[kernel.args]
x_ptr = "*fp32"
bias_ptr = { type = "*fp32", none = true }
out_ptr = "*fp32"
n = "i32"
BLOCK = { constexpr = [1024, 2048, 4096] }

[kernel.options]
num_warps = [4, 8]
'''


def test_heuristics_become_rules_in_order_and_filter_what_they_decide(tmp_path):
    library = load(tmp_path, HEURISTIC, HEURISTIC_SPEC)
    kernel = library.kernels[0]
    assert [(field, rule.text) for field, rule in kernel.heuristics] == [
        ("BLOCK", "next_power_of_2(n) * 2"), ("num_warps", "8 if BLOCK >= 2048 else 4"),
        ("HAS_BIAS", "bias_ptr is not None")]
    seen = set()
    for variant in library.variants["kernel"]:
        bias = next(binding for binding in variant.bindings if binding.name == "bias_ptr")
        assert variant.config["HAS_BIAS"] == (not bias.none)
        assert variant.config["num_warps"] == (8 if variant.config["BLOCK"] >= 2048 else 4)
        seen.add((variant.config["BLOCK"], bias.none))
    assert len(library.variants["kernel"]) == 6 and len(seen) == 6


def test_a_spec_with_heuristics_loads_twice_in_one_process(tmp_path):
    # The translation works on a copy of the source's parsed tree, which is cached per file.
    first = load(tmp_path, HEURISTIC, HEURISTIC_SPEC).kernels[0].heuristics
    second = load(tmp_path, HEURISTIC, HEURISTIC_SPEC).kernels[0].heuristics
    assert [(field, rule.text) for field, rule in first] == [(field, rule.text) for field, rule in second]


def test_heuristic_written_as_a_def(tmp_path):
    source = '''
def block_for(args):
    """A docstring is fine."""
    return max(64, triton.next_power_of_2(args["n"]))

@triton.heuristics({"BLOCK": block_for})
@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass
'''
    library = load(tmp_path, source, spec(args="BLOCK = { constexpr = [64, 128] }"))
    assert library.kernels[0].heuristics[0][1].text == "max(64, next_power_of_2(n))"


def test_untranslatable_heuristic_names_itself_and_shows_the_spec_form(tmp_path):
    source = '''
@triton.heuristics({"EVEN": lambda args: args["x_ptr"].dtype == "float16"})
@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pass
'''
    message = error(tmp_path, source, spec(args="BLOCK = { constexpr = 64 }"))
    assert message.startswith("spec.toml: kernel[0].function(@triton.heuristics).EVEN: expected a @triton.heuristics "
                              "value that is an expression of the arguments and config fields")
    assert "k.py:5: `args['x_ptr'].dtype` reads .dtype of a tensor" in message
    assert '[kernel.heuristics] EVEN = "<expression>"' in message
    # written in the spec instead, it is taken
    library = load(tmp_path, source, spec('[kernel.heuristics]\nEVEN = "n % BLOCK == 0"', "BLOCK = { constexpr = 64 }"))
    assert library.kernels[0].heuristics[0][1].text == "n % BLOCK == 0"


def test_non_bool_heuristic_needs_listed_values(tmp_path):
    source = '''
@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.jit
def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass
'''
    message = error(tmp_path, source, spec())
    assert "expected values for BLOCK" in message and "[kernel.args] BLOCK = { constexpr = [...] }" in message


def test_rule_reading_a_later_rule_is_refused(tmp_path):
    message = error(tmp_path, AUTOTUNED, spec('[kernel.heuristics]\nBLOCK = "EVEN"\nEVEN = "n % 16 == 0"'))
    assert "expected a rule that reads only config fields computed before it" in message


STRINGS_AND_NONE = '''
@triton.jit
def kernel(x_ptr, bias_ptr, out_ptr, n, ACTIVATION: tl.constexpr, num_stages: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offsets, mask=offsets < n)
    if bias_ptr is not None:
        x += tl.load(bias_ptr + offsets, mask=offsets < n)
    if ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    tl.store(out_ptr + offsets, x, mask=offsets < n)
'''

STRINGS_SPEC = '''
[library]
name = "lib"
targets = ["sm_80", "sm_90"]

[[kernel]]
name = "kernel"
source = "k.py"
grid = ["cdiv(n, BLOCK)"]
where = ["ACTIVATION != 'relu' or not bias_ptr.none", "arch >= 90 or num_stages == 2"]

[kernel.args]
x_ptr = "*fp32"
bias_ptr = { type = ["*fp32", "*fp16"], none = true }
out_ptr = "*fp32"
n = "i32"
ACTIVATION = { constexpr = ["", "relu"] }
BLOCK = { constexpr = 256 }

[kernel.options]
num_stages = { sm_80 = 2, sm_90 = [2, 3] }

[kernel.default]
ACTIVATION = ""
'''


def test_string_constexprs_none_pointers_option_named_constexprs_per_target_options(tmp_path):
    library = load(tmp_path, STRINGS_AND_NONE, STRINGS_SPEC)
    kernel = library.kernels[0]
    variants = library.variants["kernel"]
    fields = {field.name: field for field in kernel.config}
    assert fields["ACTIVATION"].kind == "string" and fields["ACTIVATION"].values == ("", "relu")
    assert fields["num_stages"].is_option and fields["num_stages"].is_constexpr
    by_id = {variant.id: variant for variant in variants}
    # None once per variant, not once per bias dtype; relu only with a bias
    nones = [variant for variant in variants if variant.bindings[1].none]
    assert {variant.config["ACTIVATION"] for variant in nones} == {""}
    assert len(nones) == 2  # num_stages 2 (both targets) and 3 (sm_90)
    assert by_id["kernel_fp32_none_fp32_i32_Aempty_ns2_B256"].targets == ("sm_80", "sm_90")
    assert by_id["kernel_fp32_none_fp32_i32_Aempty_ns3_B256"].targets == ("sm_90",)
    assert by_id["kernel_fp32_fp16_fp32_i32_Arelu_ns3_B256"].targets == ("sm_90",)
    inputs = variant_inputs(kernel, by_id["kernel_fp32_none_fp32_i32_Aempty_ns3_B256"])
    assert inputs["signature"]["bias_ptr"] == "constexpr" and inputs["constexprs"]["bias_ptr"] is None
    assert inputs["constexprs"]["num_stages"] == 3 and inputs["options"] == {"num_stages": 3}
    assert inputs["constexprs"]["ACTIVATION"] == ""


def test_string_and_none_reach_the_manifest(tmp_path):
    from taot.library.manifest import _arg, _config_field, _variant
    library = load(tmp_path, STRINGS_AND_NONE, STRINGS_SPEC)
    kernel = library.kernels[0]
    variants = library.variants["kernel"]
    assert _arg(kernel.args[1], variants)["none"] is True
    assert _config_field(kernel.config[0], variants) == {"name": "ACTIVATION", "kind": "string",
                                                         "values": ["", "relu"], "default": ""}
    none_variant = next(variant for variant in variants if variant.bindings[1].none)
    assert none_variant.bindings[1].rules.specialization(none_variant.bindings[1]) == {"arg": "bias_ptr", "dtype": "fp32", "align": 0, "none": True}


def test_per_target_table_must_name_every_target(tmp_path):
    message = error(tmp_path, STRINGS_AND_NONE, STRINGS_SPEC.replace("sm_80 = 2, sm_90 = [2, 3]", "sm_90 = 3"))
    assert message.startswith("spec.toml: kernel[0].options.num_stages.sm_80: expected the num_stages values for "
                              "sm_80 (a per-target table gives every target of the kernel)")
    message = error(tmp_path, STRINGS_AND_NONE, STRINGS_SPEC.replace("sm_80 = 2,", "sm_100 = 2,"))
    assert "kernel[0].options.num_stages.sm_100: expected a target of this kernel: sm_80, sm_90" in message


def test_kernel_targets_and_library_targets(tmp_path):
    library = load(tmp_path, STRINGS_AND_NONE, STRINGS_SPEC.replace('grid = ["cdiv(n, BLOCK)"]',
                                                                    'grid = ["cdiv(n, BLOCK)"]\ntargets = ["sm_90"]')
                   .replace("sm_80 = 2, sm_90 = [2, 3]", "sm_90 = [2, 3]"))
    assert [target.name for target in library.targets] == ["sm_90"]
    assert all(variant.targets == ("sm_90",) for variant in library.variants["kernel"])


LAUNCH = '''
@triton.jit
def kernel(x_ptr, stride, n_cols, BLOCK: tl.constexpr):
    pass
'''

LAUNCH_SPEC = '''
[library]
name = "lib"
targets = ["sm_90"]

[[kernel]]
name = "kernel"
source = "k.py"
grid = ["min(n_rows, num_sms * 4)", "cdiv(n_cols, BLOCK)"]

[kernel.launch_args]
n_rows = "i64"

[kernel.args]
x_ptr = "*fp32"
stride = "i32"
n_cols = { type = "i32", hint = [1, "none"] }
BLOCK = { constexpr = 128 }
'''


def test_launch_only_arguments_and_num_sms_in_grids(tmp_path):
    from taot.library.manifest import _arg
    library = load(tmp_path, LAUNCH, LAUNCH_SPEC)
    kernel = library.kernels[0]
    variant = library.variants["kernel"][1]  # n_cols not ==1
    assert variant.grid[0] == [{"op": "arg", "name": "n_rows"}, {"op": "num_sms"}, {"op": "lit", "value": 4},
                               {"op": "mul"}, {"op": "min"}]
    assert [binding.name for binding in variant.bindings] == ["x_ptr", "stride", "n_cols", "n_rows"]
    assert _arg(kernel.args[-1], library.variants["kernel"]) == {"name": "n_rows", "kind": "int", "types": ["i64"],
                                                                  "launch_only": True}
    assert "n_rows" not in variant_inputs(kernel, variant)["signature"]
    assert variant.id == "kernel_fp32_i32_i32_B128"


def test_launch_only_argument_must_not_be_a_parameter(tmp_path):
    message = error(tmp_path, LAUNCH, LAUNCH_SPEC.replace('n_rows = "i64"', 'stride = "i64"'))
    assert message.startswith("spec.toml: kernel[0].launch_args.stride: expected a name that is not a parameter")


# ---- enumeration: early filters, refusal, memory ----

BIG = '''
@triton.jit
def kernel(x_ptr, n, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr, D: tl.constexpr, E: tl.constexpr,
           F: tl.constexpr):
    pass
'''


def big_spec(where):
    values = ", ".join(str(value) for value in range(10))
    args = "\n".join(f"{name} = {{ constexpr = [{values}] }}" for name in "ABCDEF")
    default = "\n".join(f"{name} = 0" for name in "ABCDEF")
    return f'''
[library]
name = "lib"
targets = ["sm_90"]

[[kernel]]
name = "kernel"
source = "k.py"
grid = [1]
where = {json.dumps(where)}

[kernel.args]
x_ptr = "*fp32"
n = "i32"
{args}

[kernel.default]
{default}
'''


def test_million_candidates_filtered_to_two_thousand_quickly(tmp_path):
    import time
    where = ["A + B <= 3", "C == (A * B) % 10", "D < 5", "E == D", "F in (0, 9) or A == 0"]
    start = time.perf_counter()
    library = load(tmp_path, BIG, big_spec(where))
    seconds = time.perf_counter() - start
    summary = library.summaries["kernel"]
    assert summary.combinations == 10 ** 6
    expected = sum(1 for a in range(10) for b in range(10) for c in range(10) for d in range(10) for e in range(10)
                   for f in range(10) if a + b <= 3 and c == (a * b) % 10 and d < 5 and e == d
                   and (f in (0, 9) or a == 0))
    assert summary.count == expected == len(library.variants["kernel"])
    assert seconds < 5  # the benchmark (bench/enumeration.py) holds the 1 s figure


def test_too_many_variants_refused_fast_naming_the_dimensions(tmp_path):
    import time
    start = time.perf_counter()
    message = error(tmp_path, BIG, big_spec(["F != 3"]))
    assert time.perf_counter() - start < 5
    assert message == ("spec.toml: kernel[0]: expected at most 10,000 variants (--max-variants), got 900,000 of "
                       "1,000,000 combinations (largest dimensions: A 10, B 10, C 10, D 10, E 10, F 10); narrow them "
                       "with where filters or config lists, or raise --max-variants")
    assert "at most 50 variants" in error(tmp_path, BIG, big_spec(["A + B <= 3"]), max_variants=50)


def test_memory_does_not_follow_the_unfiltered_product(tmp_path):
    import tracemalloc
    tracemalloc.start()
    load(tmp_path, BIG, big_spec(["A == B", "B == C", "C == D", "D == E", "E == F"]))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20 * 1024 * 1024  # 10^6 candidate dicts would take hundreds of MB


def test_where_reads_the_target(tmp_path):
    library = load(tmp_path, STRINGS_AND_NONE, STRINGS_SPEC.replace(
        '"arch >= 90 or num_stages == 2"', '"target == \'sm_90\' or ACTIVATION == \'\'"'))
    for variant in library.variants["kernel"]:
        if variant.config["ACTIVATION"] == "relu":
            assert variant.targets == ("sm_90",)


def test_as_written_corpus_loads_unchanged():
    library = load_spec(REPO / "tests/kernels_as_written/kernels.toml")
    assert {kernel.name: len(library.variants[kernel.name]) for kernel in library.kernels} == {
        "matmul": 20, "rms_norm": 48, "bias_act": 36, "persistent_scale": 2, "layer_norm_fwd": 20, "affine": 2,
        "softcap_clamp": 4}


def test_kernels_inside_a_package_import_as_in_the_package(tmp_path, monkeypatch):
    """A kernel file of mypkg/kernels/ imports `from ..utils.act import silu` or `from mypkg.utils.act
    import silu`, whatever the current folder."""
    act = HEADER + "@triton.jit\ndef silu(x):\n    return x / (1.0 + tl.exp(-x))\n"
    for folder in ("mypkg", "mypkg/utils", "mypkg/kernels"):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "mypkg/utils/act.py").write_text(act)
    body = textwrap.dedent('''
        @triton.jit
        def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offsets, silu(tl.load(x_ptr + offsets, mask=offsets < n)), mask=offsets < n)
    ''')
    for name, line in (("relative", "from ..utils.act import silu"), ("absolute", "from mypkg.utils.act import silu")):
        (tmp_path / f"mypkg/kernels/{name}.py").write_text(HEADER + line + "\n" + body)
    monkeypatch.chdir("/")
    for name in ("relative", "absolute"):
        text = spec(args="BLOCK = { constexpr = 128 }").replace('source = "k.py"', f'source = "mypkg/kernels/{name}.py"')
        (tmp_path / f"{name}.toml").write_text(text)
        library = load_spec(tmp_path / f"{name}.toml", label=f"{name}.toml")
        assert len(library.variants["kernel"]) == 1, name


def test_a_pointer_in_the_autotune_key_is_left_out_with_a_note(tmp_path):
    keyed = AUTOTUNED.replace('key=["n"]', 'key=["n", "x_ptr"]')
    kernel = load(tmp_path, keyed, spec()).kernels[0]
    assert kernel.tuning_key == ("n",)
    assert "@triton.autotune key names x_ptr, a pointer argument; taot compiles variants per dtype, so the tuning " \
           "key leaves it out" in kernel.notes
    message = error(tmp_path, AUTOTUNED.replace('key=["n"]', 'key=["nn"]'), spec())
    if triton_api.RELEASE.autotune_key_checked_at_decoration:  # the module does not import (nor would it for the JIT)
        assert message.startswith("spec.toml: kernel[0].source: expected a Python file that imports cleanly, got "
                                  "ValueError at line 8: key contains names that are not kernel arguments: nn"), message
    else:
        assert message.endswith("(or give the spec's tuning_key in place of the decorator's key), got \"nn\", which is "
                                "no argument or config field"), message


def test_the_autotune_key_may_name_constexprs(tmp_path):
    # key=["BLOCK_D"] on a constexpr the caller passes (a model dimension): Triton keys on its value.
    keyed = AUTOTUNED.replace('key=["n"]', 'key=["n", "D", "EVEN"]').replace(
        "BLOCK: tl.constexpr,", "BLOCK: tl.constexpr, D: tl.constexpr, SCALE: tl.constexpr,")
    kernel = load(tmp_path, keyed, spec(args="D = { constexpr = [64, 128] }\nSCALE = { constexpr = 0.5 }")).kernels[0]
    assert kernel.tuning_key == ("n", "D", "EVEN")
    # A float constexpr in the decorator's key is left out: tuned tables key on ints and bools.
    keyed = keyed.replace('key=["n", "D", "EVEN"]', 'key=["D", "SCALE"]')
    kernel = load(tmp_path, keyed, spec(args="D = { constexpr = [64, 128] }\nSCALE = { constexpr = 0.5 }")).kernels[0]
    assert kernel.tuning_key == ("D",)
    assert ("@triton.autotune key names SCALE, a config field of float values; tuned tables key on ints, so the "
            "tuning key leaves it out") in kernel.notes


def test_the_spec_tuning_key_may_be_empty_and_names_only_what_tables_hold(tmp_path):
    kernel = load(tmp_path, AUTOTUNED, spec(extra="tuning_key = []")).kernels[0]
    assert kernel.tuning_key == ()
    message = error(tmp_path, AUTOTUNED, spec(extra='tuning_key = ["x_ptr"]'))
    assert message == ('spec.toml: kernel[0].tuning_key[0]: expected an int argument or an int or bool config field '
                       '(n, BLOCK, EVEN, num_warps, num_stages), or tuning_key = [] for no key, got "x_ptr", a pointer '
                       'argument'), message


def test_a_constexpr_without_a_function_default_is_required_unless_something_gives_it(tmp_path):
    source = '''
    @triton.jit
    def kernel(x_ptr, out_ptr, n, N_COLS: tl.constexpr, BLOCK: tl.constexpr, ONE: tl.constexpr, KEPT: tl.constexpr = 3):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n), mask=offsets < n)
    '''
    args = "N_COLS = { constexpr = [2048, 4096] }\nBLOCK = { constexpr = [128, 256] }\nONE = { constexpr = 1 }"
    # N_COLS: several values, no default in the function or the spec: every launch must give it (the
    # spec needs no default for it). BLOCK's spec default makes it optional; ONE has one value.
    library = load(tmp_path, source, spec(extra="", args=args).replace("grid = [\"cdiv(n, BLOCK)\"]",
                                                                          "grid = [\"cdiv(n, BLOCK)\"]\n\n[kernel.default]\nBLOCK = 128"))
    required = {field.name: field.required for field in library.kernels[0].config}
    assert required == {"N_COLS": True, "BLOCK": False, "ONE": False, "KEPT": False}, required
    assert library.kernels[0].parameter_names == ("x_ptr", "out_ptr", "n", "N_COLS", "BLOCK", "ONE", "KEPT")
    # A rule that computes it, or a config list that gives it, makes it optional as in the JIT.
    ruled = spec(extra='[kernel.heuristics]\nN_COLS = "4096 if n > 2048 else 2048"', args=args + "\n")
    library = load(tmp_path, source, ruled.replace("ONE = { constexpr = 1 }", "ONE = { constexpr = 1 }\n[kernel.default]\nBLOCK = 128"))
    assert not any(field.required for field in library.kernels[0].config)
