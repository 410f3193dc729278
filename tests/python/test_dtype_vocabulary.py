"""The front end's dtype names (python/taot/spec/dtypes.py) are the runtime's: the X-macro list in
runtime/include/taot/dtype_list.h, which the C ABI, the C++ runtime, the code generator and the
Python bindings are all made from."""
import re

from conftest import REPO

from taot.spec import dtypes

HEADER = REPO / "runtime" / "include" / "taot" / "dtype_list.h"

# X(ENUM, name, value, bytes, dlpack_code, dlpack_bits, "typestr", "torch_name")
ROW = re.compile(r'^\s*X\((\w+), (\w+), (\d+), (\d+), (\w+), (\d+), "(\w*)", "(\w+)"\)\s*\\?$')


def header_rows():
    lines = HEADER.read_text().splitlines()
    start = lines.index(next(line for line in lines if line.startswith("#define TAOT_DTYPES(X)")))
    body = []
    for line in lines[start + 1:]:  # the macro's lines: each but the last ends with a backslash
        body.append(line)
        if not line.rstrip().endswith("\\"):
            break
    rows = [ROW.match(line) for line in body]
    assert all(rows), [line for line, row in zip(body, rows) if not row]
    return [row.groups() for row in rows]


def test_header_rows_are_well_formed():
    rows = header_rows()
    assert len(rows) == 15
    slots = int(re.search(r"#define TAOT_DTYPE_SLOTS (\d+)", HEADER.read_text()).group(1))
    values = [int(row[2]) for row in rows]
    assert len(set(values)) == len(values) and all(0 < value < slots for value in values), values
    assert all(row[0] == row[1].upper() for row in rows), "the C enumerator is the upper-case Triton name"
    assert all(int(row[3]) in (1, 2, 4, 8) for row in rows)


def test_front_end_dtype_names_equal_the_runtime_list():
    names = [row[1] for row in header_rows()]
    assert set(dtypes.DTYPES) == set(names)
    assert len(dtypes.DTYPES) == len(set(dtypes.DTYPES))


def test_front_end_torch_names_equal_the_runtime_list():
    assert dtypes.TORCH_NAMES == {row[1]: row[7] for row in header_rows()}
