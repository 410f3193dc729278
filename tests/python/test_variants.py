# Variant enumeration: counts, ids, type variables, filters, grid folding, and the Python spec form.
import re

import pytest

from conftest import REPO, base_spec
from taot.spec.expressions import fold_grid, parse_grid
from taot.errors import SpecError
from taot.spec.validate import load_spec


def ids(library, kernel="scale_kernel"):
    return [variant.id for variant in library.variants[kernel]]


def test_base_spec_has_every_combination(project):
    library = project.load(base_spec())
    variants = library.variants["scale_kernel"]
    assert len(variants) == 2 * 2 * 2 * 2 * 2
    assert variants[0].id == "scale_kernel_fp32a16_fp32_i32d16_fp32_B64_Afp32_w4"
    assert variants[-1].id == "scale_kernel_fp16_fp16_i32_fp32_B128_Afp32_w8"
    assert len(set(ids(library))) == len(variants)
    assert all(re.fullmatch(r"[A-Za-z0-9_]+", variant_id) for variant_id in ids(library))


def test_type_variable_ties_its_arguments(project):
    library = project.load(base_spec())
    for variant in library.variants["scale_kernel"]:
        types = {binding.name: binding.type for binding in variant.bindings}
        assert types["x_ptr"] == types["out_ptr"]


def test_vector_add_example_has_192_variants_for_two_targets():
    library = load_spec(REPO / "examples/vector_add/vector_add.toml")
    variants = library.variants["add_kernel"]
    assert len(variants) == 3 * 8 * 2 * 2 * 2
    assert [target.name for target in library.targets] == ["sm_80", "sm_90"]
    assert "add_kernel_fp32a16_fp32a16_fp32a16_i32d16_BS1024_w4_s3" in {variant.id for variant in variants}


def test_where_filters_on_values_type_variables_and_arguments(project):
    spec = base_spec()
    spec["kernel"][0]["where"] = ["T != 'fp16' or BLOCK == 128",
                                  "x_ptr.align == 16 or n.hint == 'none'",
                                  "num_warps in (4, 8) and scale.type == 'fp32'"]
    library = project.load(spec)
    kept = library.variants["scale_kernel"]
    # fp32: 16 variants, of which align any + hint 16 (4) are dropped -> 12; fp16: BLOCK 128 only -> 8, minus 2 -> 6
    assert len(kept) == 12 + 6
    for variant in kept:
        binding = {b.name: b for b in variant.bindings}
        assert binding["x_ptr"].type == "fp32" or variant.config["BLOCK"] == 128
        assert binding["x_ptr"].align == 16 or binding["n"].hint == 0


def test_manifest_config_values_follow_the_filters(project, tmp_path):
    from taot.library.manifest import _config_field
    spec = base_spec()
    spec["kernel"][0]["where"] = ["num_warps == 4"]
    spec["kernel"][0]["default"] = {"BLOCK": 128, "num_warps": 4}
    library = project.load(spec)
    kernel = library.kernels[0]
    fields = [_config_field(field, library.variants["scale_kernel"]) for field in kernel.config]
    assert fields == [
        {"name": "BLOCK", "kind": "int", "values": [64, 128], "default": 128},
        {"name": "ACC", "kind": "dtype", "values": ["fp32"], "default": "fp32"},
        {"name": "num_warps", "kind": "int", "values": [4], "default": 4},
    ]


def test_dtype_constexpr_can_follow_a_type_variable(project):
    spec = base_spec()
    spec["kernel"][0]["args"]["ACC"] = {"dtype": "T"}
    spec["kernel"][0]["default"]["ACC"] = "fp32"
    library = project.load(spec)
    for variant in library.variants["scale_kernel"]:
        assert variant.config["ACC"] == variant.bindings[0].type
    assert library.kernels[0].config[1].kind == "dtype"


def test_constexpr_with_function_default_may_be_omitted(project):
    (project.root / "defaults.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def k(x_ptr, BLOCK: tl.constexpr = 32, DT: tl.constexpr = tl.float16):\n    pass\n")
    library = project.load({"library": {"name": "d", "targets": "sm_90"},
                            "kernel": [{"name": "k", "source": "defaults.py", "grid": 1,
                                        "args": {"x_ptr": "*fp32"}}]})
    assert [variant.id for variant in library.variants["k"]] == ["k_fp32_B32_Dfp16"]
    fields = library.kernels[0].config
    assert [(f.name, f.kind, f.values, f.default) for f in fields] == [("BLOCK", "int", (32,), 32),
                                                                      ("DT", "dtype", ("fp16",), "fp16")]


def test_long_ids_keep_a_prefix_and_end_in_a_hash(project):
    names = [f"PARAM_{index}" for index in range(10)]
    params = ", ".join(f"{name}: tl.constexpr" for name in names)
    (project.root / "wide.py").write_text(
        f"import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef wide(x_ptr, {params}):\n    pass\n")
    args = {name: {"constexpr": [123456789]} for name in names}
    args["x_ptr"] = "*fp32"
    args["PARAM_0"] = {"constexpr": [123456789, 987654321]}
    library = project.load({"library": {"name": "w", "targets": ["sm_90"]},
                            "kernel": [{"name": "wide", "source": "wide.py", "grid": [1], "args": args,
                                        "default": {"PARAM_0": 123456789}}]})
    variant_ids = [variant.id for variant in library.variants["wide"]]
    assert len(set(variant_ids)) == 2
    assert variant_ids[0].startswith("wide_fp32_P0123456789_P1123456789_")
    for variant_id in variant_ids:
        assert len(variant_id) == 100
        assert re.fullmatch(r"[A-Za-z0-9_]+_[0-9a-f]{12}", variant_id)


def test_short_ids_for_each_kind_of_value(project):
    (project.root / "values.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
        "def v(n, f, EVEN: tl.constexpr, EPS: tl.constexpr, OFFSET: tl.constexpr):\n    pass\n")
    library = project.load({"library": {"name": "v", "targets": ["sm_90"]},
                            "kernel": [{"name": "v", "source": "values.py", "grid": ["n"],
                                        "args": {"n": {"type": "i64", "hint": 1}, "f": "bool",
                                                 "EVEN": {"constexpr": True}, "EPS": {"constexpr": -0.5},
                                                 "OFFSET": {"constexpr": -2}},
                                        "options": {"debug": [True], "num_ctas": 1}}]})
    # EVEN and EPS share the initial E, so both are spelled out.
    assert ids(library, "v") == ["v_i64eq1_i1_EVEN1_EPSm0p5_Om2_dbg1_c1"]


@pytest.mark.parametrize("expression, values, ones, program", [
    ("cdiv(n, BLOCK)", {"BLOCK": 128}, set(), [("arg", "n"), ("lit", 128), "cdiv"]),
    ("cdiv(n, BLOCK)", {"BLOCK": 128}, {"n"}, [("lit", 1)]),
    ("cdiv(n, BLOCK) * m", {"BLOCK": 1}, {"m"}, [("arg", "n")]),
    ("max(BLOCK // 2, 3) * -n + 0", {"BLOCK": 16}, set(), [("lit", 8), ("arg", "n"), "neg", "mul"]),
    ("min(n, 4) % 3 - 1", {}, set(), [("arg", "n"), ("lit", 4), "min", ("lit", 3), "mod", ("lit", 1), "sub"]),
    ("(n + 7) // 8", {}, {"n"}, [("lit", 1)]),
    ("-(-7 // 2)", {}, set(), [("lit", 4)]),
    (3, {}, set(), [("lit", 3)]),
])
def test_grid_folding(expression, values, ones, program):
    tree = parse_grid(expression, ["n", "m"], list(values))
    expected = [{"op": op[0], ("name" if op[0] == "arg" else "value"): op[1]} if isinstance(op, tuple)
                else {"op": op} for op in program]
    assert fold_grid(tree, values, ones) == expected


def test_variant_grid_uses_variant_values_and_hint_1(project):
    spec = base_spec()
    spec["kernel"][0]["args"]["n"]["hint"] = [1, "none"]
    spec["kernel"][0]["grid"] = ["cdiv(n, BLOCK)", "num_warps * 2", 1]
    library = project.load(spec)
    by_id = {variant.id: variant for variant in library.variants["scale_kernel"]}
    variant = by_id["scale_kernel_fp32a16_fp32_i32_fp32_B128_Afp32_w8"]
    assert variant.grid == ([{"op": "arg", "name": "n"}, {"op": "lit", "value": 128}, {"op": "cdiv"}],
                            [{"op": "lit", "value": 16}], [{"op": "lit", "value": 1}])
    assert by_id["scale_kernel_fp32a16_fp32_i32eq1_fp32_B128_Afp32_w8"].grid[0] == [{"op": "lit", "value": 1}]
    assert library.kernels[0].grid_text == ("cdiv(n, BLOCK)", "num_warps * 2", "1")


def test_python_spec_gives_the_same_variants_as_toml(project):
    toml_library = project.load(base_spec())
    python_spec = '''\
DTYPES = ["fp" + str(bits) for bits in (32, 16)]


def taot_spec():
    return {
        "library": {"name": "scale", "targets": ("sm_90",)},
        "kernel": [{
            "name": "scale_kernel", "source": "kernel.py", "grid": ["cdiv(n, BLOCK)"],
            "types": {"T": DTYPES},
            "args": {"x_ptr": {"type": "*T", "align": (16, "any")}, "out_ptr": "*T",
                     "n": {"type": "i32", "hint": [16, "none"]}, "scale": {"type": "fp32"},
                     "BLOCK": {"constexpr": [2 ** k for k in (6, 7)]}, "ACC": {"dtype": "fp32"}},
            "options": {"num_warps": [4, 8]},
            "default": {"BLOCK": 128, "num_warps": 4},
        }],
    }
'''
    python_library = project.load(python_spec, name="spec.py")
    assert ids(python_library) == ids(toml_library)
    assert python_library.kernels[0].grid_text == toml_library.kernels[0].grid_text


def test_target_override_replaces_spec_targets(project):
    project.write_spec(base_spec())
    library = load_spec(project.root / "spec.toml", target_override=["sm_80", "sm_120"])
    assert [(target.name, target.capability) for target in library.targets] == [("sm_80", 80), ("sm_120", 120)]


def test_target_override_leaves_out_per_target_options_of_targets_not_built(project):
    spec = base_spec()
    spec["library"]["targets"] = ["sm_80", "sm_90"]
    spec["kernel"][0]["options"] = {"num_warps": [4], "num_stages": {"sm_80": 2, "sm_90": [3, 4]}}
    project.write_spec(spec)
    library = load_spec(project.root / "spec.toml", target_override=["sm_90"])
    assert {variant.config["num_stages"] for variant in library.variants["scale_kernel"]} == {3, 4}
    spec["kernel"][0]["options"]["num_stages"] = {"sm_08": 2, "sm_90": 3}  # a typo is still an error
    project.write_spec(spec)
    with pytest.raises(SpecError) as caught:
        load_spec(project.root / "spec.toml", target_override=["sm_90"])
    assert "options.num_stages.sm_08: expected a target of this kernel: sm_90" in str(caught.value)


def test_enumeration_reports_its_progress(tmp_path, monkeypatch):
    """A large spec's enumeration calls progress(kernel, count, seconds) every PROGRESS_EVERY variants
    (taot compile prints it), both while walking the product and while making the variants."""
    from taot.spec import variants as variants_module
    monkeypatch.setattr(variants_module, "PROGRESS_EVERY", 4)
    (tmp_path / "k.py").write_text("import triton\nimport triton.language as tl\n\n@triton.jit\n"
                                   "def k(x, n, B: tl.constexpr):\n    pass\n")
    (tmp_path / "spec.toml").write_text('[library]\nname = "lib"\ntargets = ["sm_90"]\n\n[[kernel]]\nname = "k"\n'
                                        'source = "k.py"\ngrid = [1]\nargs = { x = "*fp32", n = "i32", '
                                        'B = { constexpr = [1, 2, 4, 8, 16, 32, 64, 128] } }\ndefault = { B = 1 }\n')
    seen = []
    library = load_spec(tmp_path / "spec.toml", progress=lambda kernel, count, seconds: seen.append((kernel, count)))
    assert len(library.variants["k"]) == 8
    assert seen == [("k", 4), ("k", 8), ("k", 4), ("k", 8)]
