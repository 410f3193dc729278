# Host-side tensor descriptor arguments in specs: `type = "tensordesc<T[BLOCK, 16]>"` gives each
# variant a dtype and a block (ints or int constexprs), Triton's signature string, and manifest
# entries; every malformed descriptor type is a named error.
import pytest

from taot.errors import SpecError
from conftest import base_spec


def descriptor_spec(type_text="tensordesc<T[BLOCK, 16]>", **keys):
    spec = base_spec()
    spec["kernel"][0]["args"]["x_ptr"] = dict({"type": type_text}, **keys)
    return spec


def spec_error(project, spec):
    with pytest.raises(SpecError) as caught:
        project.load(spec)
    return str(caught.value)


def test_each_variant_binds_the_dtype_and_the_block_from_its_config(project):
    from taot.compile.jobs import variant_inputs
    from taot.library.manifest import _arg
    library = project.load(descriptor_spec())
    kernel = library.kernels[0]
    variants = library.variants["scale_kernel"]
    seen = set()
    for variant in variants:
        binding = variant.bindings[0]
        assert binding.kind == "tensordesc"
        assert binding.block == (variant.config["BLOCK"], 16)
        expected = f"tensordesc<{binding.type}[{variant.config['BLOCK']}, 16]>"
        assert binding.triton_type == expected
        assert variant_inputs(kernel, variant)["signature"]["x_ptr"] == expected
        assert binding.rules.specialization(binding) == {"arg": "x_ptr", "dtype": binding.type, "block": [variant.config["BLOCK"], 16]}
        seen.add((binding.type, binding.block))
    assert seen == {(dtype, (block, 16)) for dtype in ("fp32", "fp16") for block in (64, 128)}
    entry = _arg(kernel.args[0], variants)
    assert entry == {"name": "x_ptr", "kind": "tensordesc", "dtypes": ["fp32", "fp16"], "output": False, "rank": 2,
                     "blocks": [[64, 16], [128, 16]]}


def test_a_literal_block_output_flag_and_the_string_shorthand(project):
    spec = base_spec()
    spec["kernel"][0]["args"]["x_ptr"] = "tensordesc<fp16[8, 32, 64]>"
    spec["kernel"][0]["args"]["out_ptr"] = {"type": "tensordesc<T[BLOCK]>", "output": True}
    library = project.load(spec)
    x_desc, out_desc = library.kernels[0].args[:2]
    assert (x_desc.choices, x_desc.block, x_desc.output) == (("fp16",), (8, 32, 64), False)
    assert (out_desc.choices, out_desc.block, out_desc.output) == (("fp32", "fp16"), ("BLOCK",), True)


def test_where_filters_see_the_descriptor_type(project):
    spec = descriptor_spec()
    spec["kernel"][0]["where"] = ["x_ptr.type == 'tensordesc<fp16[64, 16]>' or x_ptr.dtype == 'fp32'"]
    variants = project.load(spec).variants["scale_kernel"]
    assert {(v.bindings[0].type, v.config["BLOCK"]) for v in variants} == {("fp16", 64), ("fp32", 64), ("fp32", 128)}


@pytest.mark.parametrize("type_text, expected", [
    ("tensordesc<fp32>", "expected a descriptor type \"tensordesc<DTYPE[B0, B1, ...]>\""),
    ("tensordesc<fp32[]>", "expected a descriptor type"),
    ("tensordesc<fp32[1, 2, 4, 8, 16, 32]>", "expected a descriptor type"),
    ("tensordesc<f33[16]>", "the dtype one of fp32, fp16"),
    ("tensordesc<i1[16]>", "the dtype one of"),
    ("tensordesc<fp32[48]>", "expected block dims that are powers of two, got 48 in"),
    ("tensordesc<fp32[BLOCK-1]>", 'got the block dim "BLOCK-1"'),
])
def test_malformed_descriptor_types_are_named(project, type_text, expected):
    message = spec_error(project, descriptor_spec(type_text))
    assert message.startswith("spec.toml: kernel[0].args.x_ptr.type: "), message
    assert expected in message, message


def test_block_dims_must_name_int_constexprs_with_power_of_two_values(project):
    message = spec_error(project, descriptor_spec("tensordesc<T[BM, 16]>"))
    assert message == ('spec.toml: kernel[0].args.x_ptr.type: expected block dims that name int constexpr arguments '
                       'of the kernel: BLOCK, got "BM"')
    message = spec_error(project, descriptor_spec("tensordesc<T[ACC, 16]>"))
    assert 'got "ACC"' in message  # a dtype constexpr
    spec = descriptor_spec()
    spec["kernel"][0]["args"]["BLOCK"] = {"constexpr": [64, 96]}
    spec["kernel"][0]["default"]["BLOCK"] = 64
    message = spec_error(project, spec)
    assert message == ("spec.toml: kernel[0].args.x_ptr.type: expected block dims whose values are powers of two "
                       "(BLOCK gives the block dim), got BLOCK = 96")


@pytest.mark.parametrize("key, value", [("align", 16), ("hint", 16), ("rank", 2)])
def test_pointer_and_int_keys_are_refused_on_descriptors(project, key, value):
    message = spec_error(project, descriptor_spec(**{key: value}))
    assert message.startswith(f"spec.toml: kernel[0].args.x_ptr.{key}: expected no {key} for tensordesc arguments"), message
