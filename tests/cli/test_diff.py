"""`taot diff` through the real binary: two variants of a library built here (the config
difference named, resources, op counts, a unified diff of a stage), two stage files, two cubins,
and errors that name the problem."""
import gzip
import json
import re

import pytest

from workbench_library import build_library, cuobjdump_usage, images


@pytest.fixture(scope="module")
def library(tmp_path_factory, taot_bin):
    return build_library(taot_bin, tmp_path_factory.mktemp("diff"))


@pytest.fixture(scope="module")
def manifest(library):
    return json.loads((library / "manifest.json").read_text())


def diff(run_taot, *args):
    result = run_taot("diff", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def image_of(manifest, variant_suffix, target):
    for variant, _, image in images(manifest):
        if variant.endswith(variant_suffix) and image["target"] == target:
            return variant, image
    raise AssertionError(variant_suffix)


def test_two_variants_name_the_config_difference(run_taot, library, manifest):
    text = diff(run_taot, library, "B1024_w4_r255", "B8192_w4_r255", "--target", "sm_90")
    a, _ = image_of(manifest, "B1024_w4_r255", "sm_90")
    b, _ = image_of(manifest, "B8192_w4_r255", "sm_90")
    assert text.startswith(f"a: softmax_kernel {a} sm_90\nb: softmax_kernel {b} sm_90\n"), text
    assert re.search(r"^config \(a -> b\):\n  BLOCK  1024 -> 8192\n", text, re.MULTILINE), text
    assert "maxnreg" not in text.split("specialization")[0], "only what differs"
    assert "specialization: same" in text
    registers = re.search(r"^  registers\s+(\d+) -> (\d+)$", text, re.MULTILINE)
    assert registers, text
    a_usage = cuobjdump_usage(library / image_of(manifest, "B1024_w4_r255", "sm_90")[1]["cubin"])
    b_usage = cuobjdump_usage(library / image_of(manifest, "B8192_w4_r255", "sm_90")[1]["cubin"])
    assert tuple(map(int, registers.groups())) == (a_usage["REG"], b_usage["REG"])
    assert "op counts (ttgir" in text and re.search(r"^\s+tt\.load\s+1\s+1$", text, re.MULTILINE)
    assert "--- " not in text, "no line diff unless a stage is asked for"


def test_lib_colon_variant_is_the_same_as_lib_then_two_variants(run_taot, library):
    assert diff(run_taot, f"{library}:B1024_w4_r32", f"{library}:B8192_w4_r32") == \
        diff(run_taot, library, "B1024_w4_r32", "B8192_w4_r32")


def test_a_stage_diff_is_unified_and_without_locations(run_taot, library):
    text = diff(run_taot, library, "B1024_w4_r255", "B8192_w4_r255", "--stage", "ttgir")
    assert re.search(r"^--- \S+_B1024_w4_r255/sm_80/softmax_kernel\.ttgir$", text, re.MULTILINE), text
    assert re.search(r"^\+\+\+ \S+_B8192_w4_r255/sm_80/softmax_kernel\.ttgir$", text, re.MULTILINE)
    assert re.search(r"^@@ -\d+(,\d+)? \+\d+(,\d+)? @@$", text, re.MULTILINE)
    assert re.search(r"^-.*tensor<1024xf32", text, re.MULTILINE) and re.search(r"^\+.*tensor<8192xf32", text, re.MULTILINE)
    assert " loc(" not in text and "#loc" not in text
    kept = diff(run_taot, library, "B1024_w4_r255", "B8192_w4_r255", "--stage", "ttgir", "--keep-locations")
    assert "loc(" in kept


def test_spills_show_in_resources_and_sass_op_counts(run_taot, library):
    text = diff(run_taot, library, "B8192_w4_r32", "B8192_w4_r255", "--stage", "sass", "--target", "sm_90")
    assert re.search(r"^config \(a -> b\):\n  maxnreg  32 -> 255\n", text, re.MULTILINE), text
    assert re.search(r"^  spill_stores\s+\d+ -> 0$", text, re.MULTILINE)
    stores = re.search(r"^  \*\s+STL\s+(\d+)\s+0$", text, re.MULTILINE)
    assert stores and int(stores.group(1)) > 0, text
    assert "/*0" not in text.split("+++")[1], "addresses are dropped before diffing SASS"


def test_json(run_taot, library):
    report = json.loads(diff(run_taot, library, "B1024_w4_r255", "B8192_w4_r255", "--json", "--stage", "ptx"))
    assert (report["schema"], report["schema_version"]) == ("taot.diff", 1)
    assert report["config"] == {"BLOCK": {"a": "1024", "b": "8192"}}
    assert report["stage"] == "ptx" and report["diff"].startswith("--- ")
    assert all(len(counts) == 2 for counts in report["op_counts"].values())


def test_two_stage_files_plain_or_gzip(run_taot, library, manifest, tmp_path):
    _, a = image_of(manifest, "B1024_w4_r32", "sm_90")
    _, b = image_of(manifest, "B8192_w4_r32", "sm_90")
    a_file, b_file = library / a["artifacts"]["ttgir"], library / b["artifacts"]["ttgir"]
    text = diff(run_taot, a_file, b_file)
    assert text.startswith(f"a: {a_file}\nb: {b_file}\n")
    assert "op counts (ttgir" in text and f"--- {a_file}" in text and "@@ -" in text
    plain = tmp_path / "a.ttgir"
    plain.write_bytes(gzip.decompress(a_file.read_bytes()))
    mixed = diff(run_taot, plain, b_file)
    assert mixed.split("op counts", 1)[1].split("---")[0] == text.split("op counts", 1)[1].split("---")[0]
    same = diff(run_taot, plain, a_file)
    assert "ttgir: same text" in same


def test_two_cubins_compare_resources_and_sass(run_taot, library, manifest):
    _, a = image_of(manifest, "B8192_w4_r32", "sm_90")
    _, b = image_of(manifest, "B8192_w4_r255", "sm_90")
    text = diff(run_taot, library / a["cubin"], library / b["cubin"])
    a_usage, b_usage = cuobjdump_usage(library / a["cubin"]), cuobjdump_usage(library / b["cubin"])
    assert re.search(rf"^  registers\s+{a_usage['REG']} -> {b_usage['REG']}$", text, re.MULTILINE), text
    assert re.search(rf"^  stack\s+{a_usage['STACK']} -> {b_usage['STACK']}$", text, re.MULTILINE), text
    assert "op counts (sass" in text and "@@ -" in text


@pytest.mark.parametrize("args, named", [
    (["{lib}", "B1024_w4_r32", "B99"], "no variant 'B99' in"),
    (["{lib}", "w4", "B1024_w4_r32"], "'w4' names 4 variants"),
    (["{lib}", "B1024_w4_r32", "B8192_w4_r32", "--target", "sm_75"], "has no image for target 'sm_75' (its targets: sm_80, sm_90)"),
    (["{lib}", "{lib}/manifest.json"], "is a library folder: name a variant of it as"),
    (["{lib}:B1024_w4_r32", "{root}/absent"], "absent does not exist"),
    (["{ttgir}", "{ptx}"], "is ttgir and"),
])
def test_errors_name_the_problem(run_taot, library, manifest, args, named):
    _, image = image_of(manifest, "B1024_w4_r32", "sm_90")
    values = {"lib": library, "root": library.parent, "ttgir": library / image["artifacts"]["ttgir"],
              "ptx": library / image["artifacts"]["ptx"]}
    result = run_taot("diff", *[arg.format(**values) for arg in args])
    assert result.returncode == 1, result.stdout
    assert named in result.stderr, result.stderr
    assert result.stderr.startswith("error: ")


@pytest.mark.parametrize("context", ["-1", "18446744073709551615"])
def test_a_negative_or_huge_context_is_a_usage_error(run_taot, tmp_path, context):
    """-U -1 reads as 2^64 - 1 to an unsigned option; it is refused (exit 2), not sized into memory."""
    for name in ("a.ttir", "b.ttir"):
        (tmp_path / name).write_text("module {\n}\n")
    result = run_taot("diff", tmp_path / "a.ttir", tmp_path / "b.ttir", "--stage", "ttir", "-U", context)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--context" in result.stderr and "not in range 0 to 1000000" in result.stderr


def test_help_shows_every_form(run_taot):
    """`taot diff --help` names LIB VARIANT_A VARIANT_B, the documented form, beside the others."""
    result = run_taot("diff", "--help")
    assert result.returncode == 0
    forms = result.stdout[result.stdout.index("Forms:"):]
    assert "taot diff LIB VARIANT_A VARIANT_B" in forms and "taot diff LIB:VARIANT_A LIB:VARIANT_B" in forms
    assert "taot diff FILE_A FILE_B" in forms
