"""`taot inspect --stage` and `taot diff` on the AMD images of a library built here for gfx942 and
sm_90 (issue P), through the real binary with no GPU and no ROCm: each IR stage and the AMDGCN
assembly with the kernel's source lines, AMDGCN op counts, clear errors for another vendor's
stage, and diff's rows of the code objects' metadata, equal to what inspect reads from them."""
import gzip
import json
import re
import subprocess
import textwrap

import pytest

KERNEL_FILE = "norm_kernels.py"
KERNEL_SOURCE = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def _scaled(x, s):
        return x * s


    @triton.jit
    def norm_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
        y = _scaled(x, 1.0 / tl.max(tl.abs(x), axis=0))
        tl.store(y_ptr + offsets, y, mask=mask)
    ''')
LOAD, CALL, STORE, HELPER = 14, 15, 16, 7  # lines of KERNEL_SOURCE

SPEC = textwrap.dedent(f'''\
    [library]
    name = "amd_stages"
    targets = ["gfx942", "sm_90"]

    [[kernel]]
    source = "{KERNEL_FILE}"
    function = "norm_kernel"
    grid = ["1"]

    [kernel.args]
    x_ptr = {{ type = "*fp32", align = 16 }}
    y_ptr = {{ type = "*fp32", align = 16 }}
    n = {{ type = "i32" }}
    BLOCK = {{ constexpr = [256, 4096] }}

    [kernel.options]
    num_warps = [4]

    [kernel.default]
    BLOCK = 256
    ''')

# The AMD facts `taot diff` compares, by their names in inspect --json's "amdgpu".
AMD_ROWS = ("vgprs", "sgprs", "agprs", "vgpr_spills", "sgpr_spills", "lds_fixed", "scratch", "dynamic_stack",
            "wavefront_size")


def source_line(number):
    return KERNEL_SOURCE.splitlines()[number - 1].strip()


@pytest.fixture(scope="module")
def library(tmp_path_factory, taot_bin):
    """The library: variants B256 and B4096, each for gfx942 and sm_90, with every IR stage kept."""
    folder = tmp_path_factory.mktemp("amd_stages")
    (folder / KERNEL_FILE).write_text(KERNEL_SOURCE)
    (folder / "norm.toml").write_text(SPEC)
    subprocess.run([str(taot_bin), "compile", "norm.toml", "-o", "lib", "-q"], cwd=folder, check=True, timeout=600)
    return folder / "lib"


def image_files(library, part, target):
    """The folder of the image of the variant whose id ends in `part`, for `target`."""
    manifest = json.loads((library / "manifest.json").read_text())
    for kernel in manifest["kernels"]:
        for variant in kernel["variants"]:
            for image in variant["images"]:
                if variant["id"].endswith(part) and image["target"] == target:
                    return (library / image["cubin"]).parent
    raise AssertionError(f"no image {part} {target}")


def taot_ok(run_taot, *args):
    result = run_taot(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def taot_error(run_taot, *args):
    result = run_taot(*args)
    assert result.returncode == 1, result.stdout
    assert result.stderr.startswith("error: "), result.stderr
    return result.stderr


@pytest.mark.parametrize("stage, comment, op", [
    ("ttir", "//", "tt.reduce"),
    ("ttgir", "//", "amdg.buffer_load"),
    ("llir", ";", "fmul"),
    ("amdgcn", ";", "s_endpgm"),
])
def test_each_stage_of_an_amd_image_shows_the_kernels_source_lines(run_taot, library, stage, comment, op):
    text = taot_ok(run_taot, "inspect", library, "--variant", "B4096", "--target", "gfx942", "--stage", stage)
    assert op in text, text[:3000]
    assert f"{comment} {KERNEL_FILE}:{LOAD}  {source_line(LOAD)}" in text, text[:3000]
    assert f"{comment} {KERNEL_FILE}:{STORE}  {source_line(STORE)}" in text
    assert f"{comment} {KERNEL_FILE}:{HELPER}  {source_line(HELPER)}" in text, "the inlined helper's own line"
    # tl.max, inlined from Triton's library, is shown at the kernel's line that called it.
    assert re.search(rf"{comment} {KERNEL_FILE}:{CALL}  {re.escape(source_line(CALL))}  \[standard\.py:\d+\]", text)
    plain = taot_ok(run_taot, "inspect", library, "--variant", "B4096", "--target", "gfx942", "--stage", stage,
                    "--no-source")
    assert f"{KERNEL_FILE}:{LOAD}  " not in plain and op in plain


def test_amdgcn_op_counts_are_its_instructions(run_taot, library):
    amdgcn = gzip.decompress((image_files(library, "B4096_w4", "gfx942") / "norm_kernel.amdgcn.gz").read_bytes())
    counts = taot_ok(run_taot, "inspect", library, "--variant", "B4096", "--target", "gfx942", "--stage", "amdgcn",
                     "--ops")
    counted = {op: int(count) for count, op in re.findall(r"^\s*(\d+)  (\S+)$", counts, re.MULTILINE)}
    assert counted["s_endpgm"] == 1, counts
    load = r"(?:buffer|global)_load_dword\w*"
    loads = len(re.findall(rf"^\s+{load}\s", amdgcn.decode(), re.MULTILINE))
    assert loads > 0 and loads == sum(n for op, n in counted.items() if re.fullmatch(load, op)), counts
    assert all(not op.startswith(".") and not op.endswith(":") for op in counted), "no directives or labels"
    shown = json.loads(taot_ok(run_taot, "inspect", library, "--variant", "B4096", "--target", "gfx942", "--stage",
                               "amdgcn", "--json"))
    assert (shown["schema"], shown["stage"], shown["target"]) == ("taot.inspect", "amdgcn", "gfx942")
    assert shown["op_counts"]["s_endpgm"] == 1
    assert f"; {KERNEL_FILE}:{LOAD}  " in shown["text"]


def test_another_vendors_stage_is_an_error_naming_the_vendor_and_the_stages(run_taot, library):
    for stage, what in (("ptx", "NVIDIA assembly"), ("sass", "NVIDIA machine code")):
        message = taot_error(run_taot, "inspect", library, "--variant", "B256", "--target", "gfx942", "--stage", stage)
        assert f"norm_kernel_fp32a16_fp32a16_i32_B256_w4 gfx942 is an AMD image: {stage} is {what} " \
               "(it has ttir, ttgir, llir and amdgcn)" in message, message
    message = taot_error(run_taot, "inspect", library, "--variant", "B256", "--target", "sm_90", "--stage", "amdgcn")
    assert "sm_90 is an NVIDIA image: amdgcn is AMD assembly (it has ttir, ttgir, llir, ptx and sass)" in message
    message = taot_error(run_taot, "diff", library, "B256", "B4096", "--target", "gfx942", "--stage", "ptx")
    assert "gfx942 is an AMD image: ptx is NVIDIA assembly" in message, message


def test_diff_of_two_amd_variants_shows_their_code_objects_facts(run_taot, library):
    listed = json.loads(taot_ok(run_taot, "inspect", library, "--target", "gfx942", "--json"))
    facts = {image["variant"].rsplit("_", 2)[-2]: image["amdgpu"] for image in listed["images"]}
    a, b = facts["B256"], facts["B4096"]
    assert a["vgprs"] != b["vgprs"], "the wider block holds more per work-item"

    compared = json.loads(taot_ok(run_taot, "diff", library, "B256", "B4096", "--target", "gfx942", "--json"))
    resources = compared["resources"]
    for row in AMD_ROWS:
        expected = ["-" if side[row] is None else str(side[row]).lower() for side in (a, b)]
        if expected[0] == expected[1]:
            assert row not in resources, row
        else:
            assert [resources[row]["a"], resources[row]["b"]] == expected, row
    assert not {"registers", "stack", "local", "static_shared"} & set(resources), "no NVIDIA rows for AMD images"

    text = taot_ok(run_taot, "diff", library, "B256", "B4096", "--target", "gfx942", "--stage", "amdgcn")
    assert re.search(rf"^resources \(a -> b\):\n  vgprs\s+{a['vgprs']} -> {b['vgprs']}$", text, re.MULTILINE), text
    assert "op counts (amdgcn, * where they differ:" in text
    assert re.search(r"^[-+]\s+v_\w+", text, re.MULTILINE), "a line diff of the assembly"
    assert not re.search(r"^[-+ ]\s*\.loc\s", text, re.MULTILINE), "locations are dropped before the diff"


def test_diff_of_two_amdgcn_files_and_of_two_code_objects(run_taot, library):
    a, b = image_files(library, "B256_w4", "gfx942"), image_files(library, "B4096_w4", "gfx942")
    text = taot_ok(run_taot, "diff", a / "norm_kernel.amdgcn.gz", b / "norm_kernel.amdgcn.gz", "--stage", "amdgcn")
    assert "op counts (amdgcn, * where they differ:" in text and f"+++ {b / 'norm_kernel.amdgcn.gz'}" in text, text
    objects = taot_ok(run_taot, "diff", a / "norm_kernel.hsaco", b / "norm_kernel.hsaco")
    assert re.search(r"^resources \(a -> b\):\n  vgprs ", objects, re.MULTILINE), objects
    message = taot_error(run_taot, "diff", a / "norm_kernel.amdgcn.gz", image_files(library, "B256_w4", "sm_90") /
                         "norm_kernel.ptx.gz")
    assert "is amdgcn and" in message and "is ptx: diff compares two files of one stage" in message, message
