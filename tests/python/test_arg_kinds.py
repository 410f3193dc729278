"""The front end's argument kinds (python/taot/spec/arg_kinds.py) are the code generator's: the
names codegen/src/arg_kinds.cpp reads from a manifest's "kind", the key a specialization entry
gives its type by, and which kinds a grid may read."""
import re

from conftest import REPO

from taot.spec import arg_kinds
from taot.spec.variants import Binding

CODEGEN_TABLE = REPO / "codegen" / "src" / "arg_kinds.cpp"

# {ArgKind::pointer, "pointer", "pointer", "dtype", read_pointer, ..., false, pointer_param},
ROW_START = re.compile(r'\{ArgKind::(\w+), "(\w+)", "(\w*)", "(\w*)",')
ROW_END = re.compile(r"\b(true|false),\s*(\w+)(?:,\s*\w+)?\},")


def codegen_rows():
    """manifest name -> (type key, grid operand) per row of the code generator's table."""
    text = CODEGEN_TABLE.read_text()
    starts = list(ROW_START.finditer(text))
    assert len(starts) >= 6, "codegen/src/arg_kinds.cpp: no kRules rows found"
    rows = {}
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else text.index("};", start.end())
        tail = ROW_END.findall(text[start.end():end])
        assert len(tail) == 1, f"row {start.group(2)}: expected one 'grid_operand, param_sizes' tail, got {tail}"
        rows[start.group(2)] = (start.group(4), tail[0][0] == "true")
    return rows


def test_manifest_kind_names_equal_the_code_generators():
    assert list(arg_kinds.MANIFEST_KINDS) == list(codegen_rows())


def test_specialization_entries_use_the_code_generators_type_key():
    for name, (type_key, _) in codegen_rows().items():
        kind = arg_kinds.manifest_kind(name)
        if not kind.runtime:
            assert type_key == ""
            continue
        binding = Binding("x", kind.name, "fp16" if kind.addressed else (kind.types[0][0] if kind.types else "i32"),
                          align=16, hint=16,
                          block=(64,))
        entry = kind.specialization(binding)
        assert entry[type_key] == binding.type, (name, entry)
        assert set(entry) & {"dtype", "type"} == {type_key}, (name, entry)


def test_grid_operands_equal_the_code_generators():
    assert {name for name, (_, grid) in codegen_rows().items() if grid} == \
        {name for name, kind in arg_kinds.MANIFEST_KINDS.items() if kind.grid_operand}


def test_every_spec_kind_has_a_manifest_kind():
    assert {kind.manifest_name for kind in arg_kinds.ARG_KINDS.values()} == set(arg_kinds.MANIFEST_KINDS)
    assert arg_kinds.arg_kind("dtype").manifest_name == "constexpr"
