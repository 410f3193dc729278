"""The names the front end refuses for kernels (python/taot/spec/cpp_names.py) are the code
generator's (codegen/src/names.cpp, codegen/src/manifest.cpp), and a spec naming one fails when it
is read, before any compile."""
import re
import textwrap

import pytest

from conftest import REPO
from taot.errors import SpecError
from taot.spec import cpp_names
from taot.spec.validate import load_spec


def test_reserved_words_are_the_code_generators():
    text = (REPO / "codegen/src/names.cpp").read_text()
    listed = text[text.index("words = {"):text.index("};", text.index("words = {"))]
    assert set(re.findall(r'"(\w+)"', listed)) == cpp_names.RESERVED_WORDS


def test_reserved_kernel_names_are_the_code_generators():
    text = (REPO / "codegen/src/manifest.cpp").read_text()
    listed = re.search(r"is_reserved_kernel_name\(.*?\{(.*?)\};", text, re.S).group(1)
    assert set(re.findall(r'"(\w+)"', listed)) == cpp_names.RESERVED_KERNEL_NAMES


@pytest.mark.parametrize("name, expected", [("float", "C or C++ keyword"), ("preload", "reserved in a generated")])
def test_a_kernel_named_so_fails_when_the_spec_is_read(tmp_path, name, expected):
    (tmp_path / "k.py").write_text("import triton\n\n@triton.jit\ndef k(x):\n    pass\n")
    (tmp_path / "spec.toml").write_text(textwrap.dedent(f"""
        [library]
        name = "lib"
        targets = ["sm_90"]

        [[kernel]]
        name = "{name}"
        source = "k.py"
        function = "k"
        grid = [1]
        args = {{ x = "i32" }}
    """))
    with pytest.raises(SpecError) as caught:
        load_spec(tmp_path / "spec.toml", label="spec.toml")
    assert "kernel[0].name" in str(caught.value) and expected in str(caught.value)
