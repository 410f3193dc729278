"""`taot inspect` through the real binary on a library built here: every image with registers and
stack that match cuobjdump --dump-resource-usage of the same cubins, spills as ptxas reports them,
JSON, filters, stage texts with the kernel's source lines, and errors that name what exists."""
import gzip
import json
import re
import subprocess

import pytest

from workbench_library import KERNEL_FILE, build_library, cuobjdump_usage, images, source_line, triton_tool


@pytest.fixture(scope="module")
def library(tmp_path_factory, taot_bin):
    return build_library(taot_bin, tmp_path_factory.mktemp("inspect"))


@pytest.fixture(scope="module")
def manifest(library):
    return json.loads((library / "manifest.json").read_text())


def inspect(run_taot, *args):
    result = run_taot("inspect", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def table_rows(text):
    """The table's rows as {column: cell}, by the header's column names."""
    lines = text.splitlines()
    header = re.split(r"\s{2,}", lines[0].strip())
    rows = []
    for line in lines[1:]:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) != len(header):
            break
        rows.append(dict(zip(header, cells)))
    return rows


def test_the_table_lists_every_image_with_cuobjdumps_registers_and_stack(run_taot, library, manifest):
    text = inspect(run_taot, library)
    rows = {(row["VARIANT"], row["TARGET"]): row for row in table_rows(text)}
    expected = images(manifest)
    assert len(expected) == 8 and len(rows) == 8, text
    for variant, _, image in expected:
        row = rows[(variant, image["target"])]
        usage = cuobjdump_usage(library / image["cubin"])
        assert int(row["REGS"]) == usage["REG"], (variant, image["target"], row, usage)
        assert int(row["STACK"]) == usage["STACK"], (variant, image["target"], row, usage)
        assert int(row["LOCAL"]) == usage["LOCAL"]
        assert int(row["SMEM"]) == usage["SHARED"] + image["shared"]
        assert row["SPILL ST/LD"] == f'{image["ptxas"]["spill_stores"]}/{image["ptxas"]["spill_loads"]}'
        assert (row["WARPS"], row["STAGES"], row["CTAS"]) == ("4", str(image["num_stages"]), "1")
    assert "8 images: 4 variants of 1 kernel (softmax_kernel), targets sm_80, sm_90" in text


def test_json_has_cuobjdumps_usage_and_ptxas_spills(run_taot, library, manifest):
    listed = json.loads(inspect(run_taot, library, "--json"))
    assert (listed["schema"], listed["schema_version"]) == ("taot.inspect", 1)
    assert (listed["origin"], listed["library"], listed["count"], listed["total"]) == ("library", "wb_softmax", 8, 8)
    spilled = []
    for entry in listed["images"]:
        usage = cuobjdump_usage(entry["cubin"])
        assert entry["registers"] == usage["REG"] == entry["cubin_resources"]["registers"]
        assert entry["stack"] == usage["STACK"]
        assert (entry["local"], entry["shared_static"]) == (usage["LOCAL"], usage["SHARED"])
        assert entry["registers_from"] == "ptxas" and entry["problem"] is None
        assert set(entry["config"]) == {"BLOCK", "num_warps", "maxnreg"}
        if entry["spill_stores"]:
            spilled.append(entry)
    # The 8192-wide block under 32 registers spills on both targets; nothing else does.
    assert sorted((e["config"]["BLOCK"], e["config"]["maxnreg"], e["target"]) for e in spilled) == [
        (8192, 32, "sm_80"), (8192, 32, "sm_90")]


def test_spills_are_what_ptxas_itself_reports(run_taot, library, tmp_path):
    """ptxas -v run here on the kept PTX says what inspect shows (not local bytes / 4)."""
    listed = json.loads(inspect(run_taot, library, "--json", "--where", "BLOCK=8192", "--where", "maxnreg=32",
                                "--target", "sm_90"))
    entry, = listed["images"]
    ptx = tmp_path / "k.ptx"
    ptx.write_bytes(gzip.decompress(open(entry["stages"]["ptx"], "rb").read()))
    report = subprocess.run([str(triton_tool("ptxas")), "-lineinfo", "-v", "--gpu-name=sm_90a", str(ptx), "-o",
                             str(tmp_path / "k.o")], capture_output=True, text=True, check=True).stderr
    frame = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", report)
    registers = re.search(r"Used (\d+) registers", report)
    assert (entry["stack"], entry["spill_stores"], entry["spill_loads"]) == tuple(map(int, frame.groups()))
    assert entry["registers"] == int(registers.group(1))
    assert entry["spill_stores"] > 0


def test_filters_choose_images(run_taot, library):
    def chosen(*args):
        return {(row["VARIANT"], row["TARGET"]) for row in table_rows(inspect(run_taot, library, *args))}

    assert len(chosen("--kernel", "softmax_kernel")) == 8
    wide = chosen("--where", "BLOCK=8192")
    assert len(wide) == 4 and all("_B8192_" in variant for variant, _ in wide)
    assert {target for _, target in chosen("--target", "sm_80")} == {"sm_80"}
    both = chosen("--where", "maxnreg=32", "--target", "sm_90")
    assert len(both) == 2 and all(variant.endswith("_r32") and target == "sm_90" for variant, target in both)
    assert len(chosen("--variant", "B1024_w4_r255")) == 2
    text = inspect(run_taot, library, "--where", "maxnreg=32", "--target", "sm_90")
    assert "2 of 8 images" in text


@pytest.mark.parametrize("args, named", [
    (["--kernel", "nope"], "no kernel 'nope' in"),
    (["--kernel", "nope"], "(kernels: softmax_kernel)"),
    (["--where", "BLOCK_SIZE=1024"], "no config field 'BLOCK_SIZE' (fields: BLOCK, num_warps, maxnreg)"),
    (["--where", "BLOCK=7"], "no variant has BLOCK=7 (its values: 1024, 8192)"),
    (["--target", "sm_75"], "no target 'sm_75'"),
    (["--target", "sm_75"], "(targets: sm_80, sm_90)"),
    (["--variant", "B99"], "no variant 'B99'"),
    (["--variant", "w4"], "'w4' names 4 variants"),
    (["--stage", "ttgir"], "--stage shows one image, and 8 of 8 match"),
])
def test_errors_name_the_problem_and_what_exists(run_taot, library, args, named):
    result = run_taot("inspect", library, *args)
    assert result.returncode == 1, result.stdout
    assert named in result.stderr, result.stderr
    assert result.stderr.startswith("error: ")


@pytest.mark.parametrize("args, named", [
    (["--where", "BLOCK"], "--where takes FIELD=VALUE"),
    (["--ops"], "--ops works on one stage's text: add --stage"),
    (["--no-source"], "--no-source works on one stage's text: add --stage"),
])
def test_options_that_do_not_fit_are_usage_errors(run_taot, library, args, named):
    result = run_taot("inspect", library, *args)
    assert result.returncode == 2, result.stdout
    assert named in result.stderr, result.stderr


def test_one_variants_images_ask_for_the_target(run_taot, library):
    """--stage on a variant with an image per target: the hint names --target (the variant is given)."""
    result = run_taot("inspect", library, "--stage", "ttgir", "--variant", "B1024_w4_r255")
    assert result.returncode == 1
    assert "2 of 8 match" in result.stderr and "(e.g. --target sm_80)" in result.stderr, result.stderr


def test_what_is_no_library_is_named(run_taot, tmp_path):
    result = run_taot("inspect", tmp_path)
    assert result.returncode == 1 and "has no manifest.json" in result.stderr
    result = run_taot("inspect", tmp_path / "absent")
    assert result.returncode == 1 and "does not exist" in result.stderr


def wide_spilling(*more):
    return ["--variant", "B8192_w4_r32", "--target", "sm_90", *more]


@pytest.mark.parametrize("stage, comment, op", [
    ("ttir", "//", "tt.reduce"),
    ("ttgir", "//", "ttg.blocked"),
    ("llir", ";", "fadd"),
    ("ptx", "//", "ld.global.v4.b32"),
    ("sass", "//", "STL"),
])
def test_stages_show_the_kernels_source_lines(run_taot, library, stage, comment, op):
    text = inspect(run_taot, library, *wide_spilling("--stage", stage))
    assert op in text
    # The load, and the store; the inlined helper's line; tl.max inlined from Triton's library is
    # shown at the kernel's line that called it.
    assert f"{comment} {KERNEL_FILE}:16  {source_line(16)}" in text, text[:3000]
    assert f"{comment} {KERNEL_FILE}:19  {source_line(19)}" in text
    assert f"{comment} {KERNEL_FILE}:9  {source_line(9)}" in text
    assert re.search(rf"{comment} {KERNEL_FILE}:17  {re.escape(source_line(17))}  \[standard\.py:\d+\]", text)
    plain = inspect(run_taot, library, *wide_spilling("--stage", stage, "--no-source"))
    assert f"{KERNEL_FILE}:16  " not in plain and op in plain


def test_stage_op_counts_and_json(run_taot, library):
    counts = inspect(run_taot, library, *wide_spilling("--stage", "sass", "--ops"))
    spill_stores = re.search(r"^\s*(\d+)\s+STL$", counts, re.MULTILINE)
    assert spill_stores and int(spill_stores.group(1)) > 0, counts
    shown = json.loads(inspect(run_taot, library, *wide_spilling("--stage", "ttgir", "--json")))
    assert shown["schema"] == "taot.inspect"
    assert shown["stage"] == "ttgir" and shown["target"] == "sm_90"
    assert shown["op_counts"]["tt.load"] == 1 and shown["op_counts"]["tt.reduce"] == 2
    assert f"// {KERNEL_FILE}:16  " in shown["text"]


def test_a_manifest_and_a_bare_cubin_are_inspected_too(run_taot, library, manifest):
    assert table_rows(inspect(run_taot, library / "manifest.json")) == table_rows(inspect(run_taot, library))
    _, _, image = images(manifest)[0]
    cubin = library / image["cubin"]
    text = inspect(run_taot, cubin)
    row, = table_rows(text)
    usage = cuobjdump_usage(cubin)
    assert (row["KERNEL"], int(row["REGS"]), int(row["STACK"])) == ("softmax_kernel", usage["REG"], usage["STACK"])
    assert row["TARGET"] == image["target"] + ("a" if image["arch_specific"] else "")
    sass = inspect(run_taot, cubin, "--stage", "sass")
    assert f"// {KERNEL_FILE}:16" in sass


@pytest.mark.parametrize("command", ["gen", "inspect"])
def test_a_manifest_whose_schema_version_is_a_string_is_named_as_such(run_taot, library, tmp_path, command):
    """schema_version "2" (a string) is not "version 2 unsupported by a reader of version 2"."""
    manifest = json.loads((library / "manifest.json").read_text())
    manifest["schema_version"] = str(manifest["schema_version"])
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    arguments = [tmp_path / "manifest.json"] + (["-o", tmp_path / "out"] if command == "gen" else [])
    result = run_taot(command, *arguments)
    assert result.returncode == 1, result.stdout
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "schema_version: expected an integer (this taot reads version" in line, line
    assert "is not supported" not in line
