"""`taot compile/build --debug` and tl.static_print through the real taot binary: debug variant ids,
static_print lines on stderr once per variant, prefixed by its id."""
import textwrap

KERNEL = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def bump_kernel(x_ptr, n, BLOCK: tl.constexpr):
        tl.static_print("BLOCK is", BLOCK)
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.device_assert(offsets >= 0, "negative offset")
        tl.store(x_ptr + offsets, 1, mask=offsets < n)
    ''')

SPEC = textwrap.dedent('''\
    [library]
    name = "bump"
    targets = ["sm_90", "sm_80"]

    [[kernel]]
    name = "bump"
    source = "kernel.py"
    function = "bump_kernel"
    grid = ["cdiv(n, BLOCK)"]

    [kernel.args]
    x_ptr = "*i32"
    n = "i32"
    BLOCK = { constexpr = [64, 128] }

    [kernel.default]
    BLOCK = 64
    ''')


def write_project(folder):
    (folder / "kernel.py").write_text(KERNEL)
    (folder / "bump.toml").write_text(SPEC)
    return folder / "bump.toml"


def test_debug_names_every_variant_as_a_debug_one(run_taot, tmp_path):
    spec = write_project(tmp_path)
    release = run_taot("compile", spec, "--list")
    debug = run_taot("compile", spec, "--list", "--debug")
    assert release.returncode == 0 and debug.returncode == 0, release.stderr + debug.stderr
    assert release.stdout.splitlines()[:2] == ["bump_i32_i32_B64", "bump_i32_i32_B128"]
    assert debug.stdout.splitlines()[:2] == ["bump_i32_i32_B64_dbg1", "bump_i32_i32_B128_dbg1"]


def test_static_print_is_shown_once_per_variant(run_taot, tmp_path):
    spec = write_project(tmp_path)
    result = run_taot("compile", spec, "--debug", "-o", tmp_path / "out", "-j", "2")
    assert result.returncode == 0, result.stderr
    printed = [line for line in result.stderr.splitlines() if ": static_print: " in line]
    assert sorted(printed) == ["bump_i32_i32_B128_dbg1: static_print: BLOCK is 128",
                               "bump_i32_i32_B64_dbg1: static_print: BLOCK is 64"], result.stderr
    assert "BLOCK is" not in result.stdout
    assert all(b"__assertfail" in cubin.read_bytes() for cubin in (tmp_path / "out").glob("artifacts/*/*/*.cubin"))
