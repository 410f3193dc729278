# Every spec error names the file, the key path and what was expected.
import pytest

from taot.errors import SpecError
from conftest import base_spec


def spec_error(project, spec, name="spec.toml"):
    with pytest.raises(SpecError) as caught:
        project.load(spec, name)
    return str(caught.value)


def kernel(spec):
    return spec["kernel"][0]


def test_example_message_is_exact(project):
    spec = base_spec()
    kernel(spec)["args"]["n"]["hint"] = [16, 8]
    assert spec_error(project, spec) == 'spec.toml: kernel[0].args.n.hint[1]: expected 1, 16 or "none", got 8'


def test_file_not_found(project):
    from taot.spec.validate import load_spec
    with pytest.raises(SpecError) as caught:
        load_spec(project.root / "missing.toml", label="missing.toml")
    assert str(caught.value) == "missing.toml: expected an existing spec file (.toml or .py), got no such file"


def test_unknown_suffix(project):
    message = spec_error(project, "x = 1\n", name="spec.yaml")
    assert message.startswith("spec.yaml: expected a spec file ending in .toml or .py")


def test_toml_syntax_error_names_line(project):
    message = spec_error(project, '[library]\nname = "x"\ntargets = [\n[[kernel]\n')
    assert message.startswith("spec.toml: line 4, column")
    assert "expected valid TOML, got a syntax error" in message


@pytest.mark.parametrize("where, key", [
    ("root", "colour"),
    ("library", "library.colour"),
    ("kernel", "kernel[0].colour"),
    ("arg", "kernel[0].args.x_ptr.colour"),
])
def test_unknown_key_lists_allowed_keys(project, where, key):
    spec = base_spec()
    table = {"root": spec, "library": spec["library"], "kernel": kernel(spec),
             "arg": kernel(spec)["args"]["x_ptr"]}[where]
    table["colour"] = "red"
    message = spec_error(project, spec)
    assert message.startswith(f"spec.toml: {key}: expected one of the keys ")
    assert message.endswith("got an unknown key")
    if where == "arg":
        assert "type, align, hint, constexpr, dtype" in message


def test_missing_library(project):
    spec = base_spec()
    del spec["library"]
    assert spec_error(project, spec) == \
        "spec.toml: library: expected a [library] table, got nothing (the key is missing)"


@pytest.mark.parametrize("mutate, key, expected, got", [
    (lambda s: kernel(s).update(grid={"x": 1}), "kernel[0].grid", "1 to 3 grid entries", "a table"),
    (lambda s: kernel(s)["args"].update(scale=5), "kernel[0].args.scale", "a table with one of type", "5"),
    (lambda s: kernel(s)["args"].update(BLOCK={"constexpr": [{"a": 1}]}), "kernel[0].args.BLOCK.constexpr[0]",
     "an int, float, bool or string", "a table"),
    (lambda s: kernel(s)["args"].update(BLOCK={"constexpr": [64, "big"]}), "kernel[0].args.BLOCK.constexpr",
     "values of one type", '[64, "big"]'),
    (lambda s: kernel(s)["args"].update(BLOCK={"constexpr": [64, 1.5]}), "kernel[0].args.BLOCK.constexpr",
     "values of one type", "[64, 1.5]"),
    (lambda s: kernel(s)["options"].update(num_warps=["4"]), "kernel[0].options.num_warps[0]", "a positive int", '"4"'),
    (lambda s: kernel(s)["options"].update(num_warps=[3]), "kernel[0].options.num_warps[0]", "a power of two", "3"),
    (lambda s: kernel(s)["options"].update(debug=[1]), "kernel[0].options.debug[0]", "true or false", "1"),
    (lambda s: kernel(s).update(source=7), "kernel[0].source", "the kernel's Python file", "7"),
    (lambda s: kernel(s).update(where=[3]), "kernel[0].where[0]", "a filter expression string", "3"),
    (lambda s: kernel(s)["args"]["n"].update(align=[16]), "kernel[0].args.n.align", "no align for int arguments",
     "a value"),
    (lambda s: kernel(s)["args"]["x_ptr"].update(hint=[16]), "kernel[0].args.x_ptr.hint",
     "no hint for pointer arguments", "a value"),
    (lambda s: kernel(s)["args"].update(scale={"type": "fp32", "constexpr": [1]}), "kernel[0].args.scale",
     "exactly one of the keys type, constexpr, dtype", "both type and constexpr"),
    (lambda s: kernel(s)["args"].update(BLOCK={"type": "i32"}), "kernel[0].args.BLOCK.type",
     "constexpr = [...] or dtype = [...] (BLOCK is tl.constexpr in the function)", '"i32"'),
    (lambda s: kernel(s)["args"].update(n={"type": ["i32", "*fp32"]}), "kernel[0].args.n.type[1]",
     "types of one kind, like the first (int)", 'a pointer type "*fp32"'),
])
def test_wrong_type(project, mutate, key, expected, got):
    spec = base_spec()
    mutate(spec)
    message = spec_error(project, spec)
    assert message.startswith(f"spec.toml: {key}: expected {expected}")
    assert message.endswith(f"got {got}")


@pytest.mark.parametrize("mutate, key", [
    (lambda s: kernel(s)["args"]["x_ptr"].update(align=[]), "kernel[0].args.x_ptr.align"),
    (lambda s: kernel(s)["types"].update(T=[]), "kernel[0].types.T"),
    (lambda s: kernel(s)["options"].update(num_warps=[]), "kernel[0].options.num_warps"),
    (lambda s: s["library"].update(targets=[]), "library.targets"),
    (lambda s: s.update(kernel=[]), "kernel"),
])
def test_empty_lists(project, mutate, key):
    spec = base_spec()
    mutate(spec)
    message = spec_error(project, spec)
    assert message.startswith(f"spec.toml: {key}: expected ")
    assert message.endswith("got an empty list")


def test_duplicate_values(project):
    spec = base_spec()
    kernel(spec)["args"]["BLOCK"] = {"constexpr": [64, 64]}
    assert spec_error(project, spec) == \
        ("spec.toml: kernel[0].args.BLOCK.constexpr[1]: expected no duplicate values in "
         "kernel[0].args.BLOCK.constexpr, got 64 again")


@pytest.mark.parametrize("mutate, key, got", [
    (lambda s: kernel(s)["types"].update(T=["fp32", "float33"]), "kernel[0].types.T[1]", '"float33"'),
    (lambda s: kernel(s)["args"].update(out_ptr="*fp33"), "kernel[0].args.out_ptr.type", '"*fp33"'),
    (lambda s: kernel(s)["args"].update(ACC={"dtype": ["f32"]}), "kernel[0].args.ACC.dtype[0]", '"f32"'),
    (lambda s: kernel(s)["args"].update(scale="float"), "kernel[0].args.scale.type", '"float"'),
])
def test_unknown_dtype(project, mutate, key, got):
    spec = base_spec()
    mutate(spec)
    message = spec_error(project, spec)
    assert message.startswith(f"spec.toml: {key}: expected ")
    assert "fp32" in message and message.endswith(f"got {got}")


def test_unknown_target(project):
    spec = base_spec()
    spec["library"]["targets"] = ["sm_90", "sm_91"]
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: library.targets[1]: expected a target, one of sm_80, sm_86")
    assert message.endswith('got "sm_91"')


def test_same_capability_twice(project):
    spec = base_spec()
    spec["library"]["targets"] = ["sm_90", "sm_90a"]
    assert spec_error(project, spec) == ('spec.toml: library.targets[1]: expected targets of distinct compute '
                                         'capabilities, got "sm_90a", which builds the same code as "sm_90"')


def test_missing_source_file(project):
    spec = base_spec()
    kernel(spec)["source"] = "nowhere.py"
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: kernel[0].source: expected an existing Python file (paths are relative "
                              'to the spec file), got "nowhere.py", which does not exist')


def test_source_that_fails_to_import(project):
    (project.root / "broken.py").write_text("import triton\n\nraise ValueError('boom')\n")
    spec = base_spec()
    kernel(spec)["source"] = "broken.py"
    assert spec_error(project, spec) == ("spec.toml: kernel[0].source: expected a Python file that imports cleanly, "
                                         "got ValueError at line 3: boom")


def test_function_not_found_lists_jit_functions(project):
    spec = base_spec()
    kernel(spec)["function"] = "scale_kernal"
    assert spec_error(project, spec) == ("spec.toml: kernel[0].function: expected a @triton.jit function of "
                                         "kernel.py (it has: other_kernel, scale_kernel), got \"scale_kernal\", "
                                         "which it does not define")


def test_function_not_jit(project):
    spec = base_spec()
    kernel(spec)["function"] = "plain_function"
    assert spec_error(project, spec) == ('spec.toml: kernel[0].function: expected the name of a @triton.jit function, '
                                         'got "plain_function", which is a plain Python function, not @triton.jit')


def test_argument_missing(project):
    spec = base_spec()
    del kernel(spec)["args"]["scale"]
    assert spec_error(project, spec) == (
        "spec.toml: kernel[0].args.scale: expected a description of parameter scale of scale_kernel (every "
        "parameter without a constexpr default needs one), got nothing (the key is missing)")


def test_unknown_argument(project):
    spec = base_spec()
    kernel(spec)["args"]["y_ptr"] = "*fp32"
    assert spec_error(project, spec) == ("spec.toml: kernel[0].args.y_ptr: expected a parameter of scale_kernel: "
                                         "x_ptr, out_ptr, n, scale, BLOCK, ACC (int arguments the function does not "
                                         "take go in launch_args), got an unknown argument")


@pytest.mark.parametrize("grid, problem", [
    ("cdiv(m, BLOCK)", "unknown name m (int arguments, constexprs and options: BLOCK, n, num_sms, num_warps)"),
    ("cdiv(scale, BLOCK)", "unknown name scale"),
    ("n / BLOCK", "operator Div is not allowed (use // for division)"),
    ("foo(n, 2)", "the only calls are cdiv(a, b), min(a, b) and max(a, b)"),
    ("n[0]", "Subscript syntax is not allowed in a grid expression"),
    ("cdiv(n, BLOCK", "invalid Python syntax"),
    ("2.5", "2.5 is not an int literal"),
])
def test_bad_grid_expression(project, grid, problem):
    spec = base_spec()
    kernel(spec)["grid"] = [grid]
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: kernel[0].grid[0]: expected an expression over ints, int arguments")
    assert problem in message


@pytest.mark.parametrize("grid, meant", [
    (["triton.cdiv(n, BLOCK)"], '["cdiv(n, BLOCK)"]'),
    (["tl.cdiv(n, META['BLOCK'])", 2], '["cdiv(n, BLOCK)", 2]'),
    (["lambda META: (triton.cdiv(n, META['BLOCK']), 1)"], '["cdiv(n, BLOCK)", 1]'),
    (["lambda meta: (min(num_sms, triton.cdiv(n, meta[\"BLOCK\"])),)"], '["min(num_sms, cdiv(n, BLOCK))"]'),
    (["(triton.cdiv(n, BLOCK), n)"], '["cdiv(n, BLOCK)", "n"]'),
])
def test_a_grid_written_as_python_launch_code_gets_its_spec_form(project, grid, meant):
    spec = base_spec()
    kernel(spec)["grid"] = grid
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: kernel[0].grid[0]: expected an expression over ints"), message
    assert message.endswith(f"; write it as grid = {meant}"), message


@pytest.mark.parametrize("grid", [["lambda META: (triton.cdiv(m, META['BLOCK']),)"], ["triton.cdiv(n, BLOCK)", 1, 1, 1],
                                  ["triton.next_power_of_2(n)"]])
def test_no_spec_form_is_offered_when_it_would_not_be_valid(project, grid):
    spec = base_spec()
    kernel(spec)["grid"] = grid
    assert "write it as" not in spec_error(project, spec)


@pytest.mark.parametrize("grid, hint", [
    ("cdiv(scale, BLOCK)", "; scale is a float argument, and a grid reads int ones"),
    ("cdiv(n_rows, 4)", '; an int the grid reads that the kernel does not take goes in [kernel.launch_args] '
                        '(n_rows = "i32")'),
])
def test_an_unknown_grid_name_says_what_it_is(project, grid, hint):
    spec = base_spec()
    kernel(spec)["grid"] = [grid]
    message = spec_error(project, spec)
    assert message.endswith(hint), message


def test_grid_with_too_many_entries(project):
    spec = base_spec()
    kernel(spec)["grid"] = [1, 1, 1, 1]
    assert spec_error(project, spec).startswith("spec.toml: kernel[0].grid: expected 1 to 3 grid entries")


@pytest.mark.parametrize("where, problem", [
    ("BLOK == 64", "unknown name BLOK"),
    ("open('x')", "calls other than min(...), max(...), abs(...), next_power_of_2(...) and cdiv(...) are not allowed"),
    ("x_ptr.dtype.upper", "attributes are allowed only on argument names"),
    ("x_ptr.size > 1", "unknown attribute .size"),
    ("BLOCK in [n for n in (1, 2)]", "ListComp syntax is not allowed"),
    ("BLOCK in [64, num_warps]", "lists and tuples are allowed only after `in`"),
    ("lambda: 1", "Lambda syntax is not allowed"),
    ("BLOCK ==", "invalid Python syntax"),
])
def test_bad_where_expression(project, where, problem):
    spec = base_spec()
    kernel(spec)["where"] = ["BLOCK > 0", where]
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: kernel[0].where[1]: expected a filter over constexprs, options")
    assert problem in message


def test_where_that_fails_to_evaluate(project):
    spec = base_spec()
    kernel(spec)["where"] = ["x_ptr.dtype > 3"]
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: kernel[0].where[0]: expected a filter that evaluates for every variant, "
                              'got "x_ptr.dtype > 3", which applies > to a name (dtype, type or string) and a number '
                              'with T = "fp32", target sm_90')
    assert "TypeError" not in message and "instances of" not in message


def test_filter_that_removes_every_variant(project):
    spec = base_spec()
    kernel(spec)["where"] = ["BLOCK > 64", "BLOCK < 128"]
    assert spec_error(project, spec) == ("spec.toml: kernel[0].where: expected filters that keep at least one of "
                                         "the 32 variants, got filters that remove all of them")


def test_default_missing(project):
    spec = base_spec()
    del kernel(spec)["default"]["num_warps"]
    assert spec_error(project, spec) == ("spec.toml: kernel[0].default.num_warps: expected the default value of "
                                         "num_warps, one of 4 or 8 (it has several values), got nothing (the key is "
                                         "missing)")


def test_default_not_among_values(project):
    spec = base_spec()
    kernel(spec)["default"]["BLOCK"] = 256
    assert spec_error(project, spec) == \
        "spec.toml: kernel[0].default.BLOCK: expected one of the values of BLOCK: 64 or 128, got 256"


def test_default_for_unknown_field(project):
    spec = base_spec()
    kernel(spec)["default"]["num_stages"] = 3
    assert spec_error(project, spec) == ("spec.toml: kernel[0].default.num_stages: expected a config field: BLOCK, "
                                         "ACC, num_warps, got an unknown field")


def test_default_removed_by_filter(project):
    spec = base_spec()
    kernel(spec)["where"] = ["not (BLOCK == 128 and num_warps == 4)"]
    assert spec_error(project, spec) == (
        'spec.toml: kernel[0].default: expected a default config that some variant has after the where filters, '
        'got BLOCK = 128, ACC = "fp32", num_warps = 4, which the filters remove')


def test_unknown_option(project):
    spec = base_spec()
    kernel(spec)["options"]["num_warp"] = [4]
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: kernel[0].options.num_warp: expected one of the options num_warps, "
                              "num_stages, num_ctas, maxnreg")
    assert message.endswith('got "num_warp"')


def test_triton_option_taot_does_not_vary(project):
    spec = base_spec()
    kernel(spec)["options"]["arch"] = ["sm90"]
    assert spec_error(project, spec).endswith('got "arch" (a Triton option that taot does not vary per variant)')


def test_option_rejected_by_triton_for_a_target(project):
    spec = base_spec()
    spec["library"]["targets"] = ["sm_80"]
    kernel(spec)["options"]["num_ctas"] = [2]
    from taot.compile.engine import plan_jobs
    library = project.load(spec)
    with pytest.raises(SpecError) as caught:
        plan_jobs(library, project.root / "out")
    message = str(caught.value)
    assert message.startswith(
        "spec.toml: kernel[0].options: expected options Triton accepts for sm_80, got num_ctas > 1")
    assert "variant scale_kernel_fp32a16_fp32_i32d16_fp32_B64_Afp32_w4_c2" in message


def test_duplicate_kernel_names(project):
    spec = base_spec()
    spec["kernel"].append(dict(kernel(spec)))
    assert spec_error(project, spec) == ('spec.toml: kernel[1].name: expected a kernel name not used by another '
                                         'kernel, got "scale_kernel", also the name of kernel[0]')


@pytest.mark.parametrize("name", ["vector-add", "1lib", "class", ""])
def test_library_name_not_identifier(project, name):
    spec = base_spec()
    spec["library"]["name"] = name
    assert spec_error(project, spec).startswith(
        "spec.toml: library.name: expected a library name that is an identifier ([A-Za-z_][A-Za-z0-9_]*), got ")


def test_unused_type_variable(project):
    spec = base_spec()
    kernel(spec)["types"]["U"] = ["i32"]
    assert spec_error(project, spec).startswith("spec.toml: kernel[0].types.U: expected a type variable that some "
                                                "argument uses")


def test_scalar_type_variable_of_mixed_kinds(project):
    spec = base_spec()
    kernel(spec)["types"]["S"] = ["i32", "fp32"]
    kernel(spec)["args"]["n"] = {"type": "S"}
    assert spec_error(project, spec).startswith("spec.toml: kernel[0].args.n.type: expected a type variable whose "
                                                "values are scalar types of one kind")


def test_python_spec_without_taot_spec(project):
    message = spec_error(project, "SPEC = {}\n", name="spec.py")
    assert message == ("spec.py: taot_spec: expected a function taot_spec() that returns the spec as a dict, "
                       "got nothing (the file defines no taot_spec)")


def test_python_spec_that_raises(project):
    message = spec_error(project, "def taot_spec():\n    return {}['library']\n", name="spec.py")
    assert message == "spec.py: taot_spec(): expected a call that returns the spec, got KeyError at line 2: 'library'"


def test_python_spec_errors_use_key_paths(project):
    spec = base_spec()
    kernel(spec)["args"]["n"]["hint"] = [16, 8]
    message = spec_error(project, f"def taot_spec():\n    return {spec!r}\n", name="spec.py")
    assert message == 'spec.py: kernel[0].args.n.hint[1]: expected 1, 16 or "none", got 8'


def test_output_must_be_a_bool(project):
    spec = base_spec()
    kernel(spec)["args"]["out_ptr"] = {"type": "*T", "output": "yes"}
    assert spec_error(project, spec) == "spec.toml: kernel[0].args.out_ptr.output: expected true or false, got \"yes\""


def test_output_is_only_for_pointers(project):
    spec = base_spec()
    kernel(spec)["args"]["n"]["output"] = True
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: kernel[0].args.n.output: expected no output for int arguments"), message


def test_output_reaches_the_manifest_args(project):
    from taot.library.manifest import _arg
    spec = base_spec()
    kernel(spec)["args"]["out_ptr"] = {"type": "*T", "output": True}
    library = project.load(spec)
    args = {arg.name: arg for arg in library.kernels[0].args}
    assert args["out_ptr"].output and not args["x_ptr"].output
    assert _arg(args["out_ptr"], [])["output"] is True


@pytest.mark.parametrize("value, shown", [(0, "0"), (9, "9"), ("2", '"2"'), (True, "true")])
def test_rank_must_be_an_int_from_1_to_8(project, value, shown):
    spec = base_spec()
    kernel(spec)["args"]["out_ptr"] = {"type": "*T", "rank": value}
    assert spec_error(project, spec) == f"spec.toml: kernel[0].args.out_ptr.rank: expected an int from 1 to 8, got {shown}"


def test_rank_is_only_for_pointers(project):
    spec = base_spec()
    kernel(spec)["args"]["n"]["rank"] = 1
    message = spec_error(project, spec)
    assert message.startswith("spec.toml: kernel[0].args.n.rank: expected no rank for int arguments"), message


def test_rank_reaches_the_manifest_args_only_when_given(project):
    from taot.library.manifest import _arg
    spec = base_spec()
    kernel(spec)["args"]["out_ptr"] = {"type": "*T", "rank": 2}
    library = project.load(spec)
    args = {arg.name: arg for arg in library.kernels[0].args}
    assert _arg(args["out_ptr"], [])["rank"] == 2
    assert "rank" not in _arg(args["x_ptr"], [])


@pytest.mark.parametrize("name", ["features", "cuda", "stdio", "math", "Python"])
def test_a_library_named_like_a_system_header_is_refused(project, name):
    spec = base_spec()
    spec["library"]["name"] = name
    assert spec_error(project, spec) == (
        f"spec.toml: library.name: expected a library name whose header is not a system header's: {name}.h would "
        f"hide <{name}.h> from every file compiled with the library's include folder (try {name}_kernels), "
        f'got "{name}"')
