"""The taot binary on bad specs: a non-zero exit and a message that names the problem."""
import textwrap

import pytest

KERNEL_SOURCE = textwrap.dedent('''
    import triton
    import triton.language as tl

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)

    @triton.jit
    def cast_kernel(x_ptr, out_ptr, n, OUT_DTYPE: tl.constexpr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n).to(OUT_DTYPE), mask=offsets < n)

    @triton.jit
    def broken_kernel(x_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.arange(0, 3)  # not a power of two: Triton refuses it
        tl.store(x_ptr + offsets, tl.zeros((3,), tl.float32))
''')

GOOD_SPEC = textwrap.dedent('''
    [library]
    name = "scale"
    targets = ["sm_90"]

    [[kernel]]
    name = "scale_kernel"
    source = "kernels.py"
    grid = ["cdiv(n, BLOCK)", 1, 1]
    {where}

    [kernel.args]
    x_ptr = {{ type = "*fp32", align = [16] }}
    out_ptr = {{ type = "{out_type}", align = [16] }}
    n = {{ type = "i32", hint = ["none"] }}
    BLOCK = {{ constexpr = [128] }}
    {extra_arg}

    [kernel.options]
    num_warps = [4]
''')


def write_spec(tmp_path, where="", out_type="*fp32", extra_arg="", spec_text=None):
    (tmp_path / "kernels.py").write_text(KERNEL_SOURCE)
    spec = tmp_path / "scale.toml"
    spec.write_text(spec_text if spec_text is not None else
                    GOOD_SPEC.format(where=where, out_type=out_type, extra_arg=extra_arg))
    return spec


def assert_fails_naming(result, *needles):
    assert result.returncode != 0, result.stdout + result.stderr
    for needle in needles:
        assert needle in result.stderr, f"{needle!r} not in stderr:\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr


def test_good_spec_lists_variants(tmp_path, run_taot):
    spec = write_spec(tmp_path)
    result = run_taot("compile", spec, "-o", tmp_path / "out", "--list")
    assert result.returncode == 0, result.stderr
    assert "scale_kernel" in result.stdout


def test_unknown_key(tmp_path, run_taot):
    spec = write_spec(tmp_path, extra_arg="")
    spec.write_text(spec.read_text().replace('[kernel.options]', '[kernel.options]\nnum_warpz = [4]'))
    assert_fails_naming(run_taot("compile", spec, "-o", tmp_path / "out"), "scale.toml", "num_warpz")


def test_wrong_type(tmp_path, run_taot):
    spec = write_spec(tmp_path)
    spec.write_text(spec.read_text().replace('BLOCK = { constexpr = [128] }', 'BLOCK = { constexpr = "128" }'))
    assert_fails_naming(run_taot("compile", spec, "-o", tmp_path / "out"), "scale.toml", "BLOCK")


def test_unknown_dtype(tmp_path, run_taot):
    spec = write_spec(tmp_path, out_type="*fp33")
    assert_fails_naming(run_taot("compile", spec, "-o", tmp_path / "out"), "scale.toml", "out_ptr", "fp33")


def test_filter_that_removes_every_variant(tmp_path, run_taot):
    spec = write_spec(tmp_path, where='where = ["BLOCK == 64"]')
    assert_fails_naming(run_taot("compile", spec, "-o", tmp_path / "out"), "scale.toml", "where")


def test_missing_kernel_function(tmp_path, run_taot):
    spec = write_spec(tmp_path)
    spec.write_text(spec.read_text().replace('name = "scale_kernel"', 'name = "scale_kernel_v2"'))
    assert_fails_naming(run_taot("compile", spec, "-o", tmp_path / "out"), "scale.toml", "scale_kernel_v2",
                        "kernels.py")


def test_missing_kernel_source(tmp_path, run_taot):
    spec = write_spec(tmp_path)
    spec.write_text(spec.read_text().replace('source = "kernels.py"', 'source = "nowhere.py"'))
    assert_fails_naming(run_taot("compile", spec, "-o", tmp_path / "out"), "scale.toml", "nowhere.py")


def test_missing_spec_file(tmp_path, run_taot):
    assert_fails_naming(run_taot("compile", tmp_path / "absent.toml", "-o", tmp_path / "out"), "absent.toml")


def test_kernel_that_fails_to_compile(tmp_path, run_taot):
    spec = write_spec(tmp_path, spec_text=textwrap.dedent('''
        [library]
        name = "broken"
        targets = ["sm_90"]

        [[kernel]]
        name = "broken_kernel"
        source = "kernels.py"
        grid = [1, 1, 1]

        [kernel.args]
        x_ptr = { type = "*fp32", align = [16] }
        n = { type = "i32", hint = ["none"] }
        BLOCK = { constexpr = [128] }
    '''))
    result = run_taot("compile", spec, "-o", tmp_path / "out")
    assert_fails_naming(result, "broken_kernel", "sm_90")
    assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.parametrize("value", ["bf16", "bfloat16"])
def test_a_dtype_given_as_a_string_constexpr_gets_a_hint(tmp_path, run_taot, value):
    spec = write_spec(tmp_path)
    spec.write_text(spec.read_text().replace('name = "scale_kernel"', 'name = "cast_kernel"').replace(
        'BLOCK = { constexpr = [128] }', f'BLOCK = {{ constexpr = [128] }}\nOUT_DTYPE = {{ constexpr = "{value}" }}'))
    result = run_taot("compile", spec, "-o", tmp_path / "out")
    assert_fails_naming(result, "cast_kernel", "'str' object has no attribute",
                        f'hint: the spec gives OUT_DTYPE = {{ constexpr = "{value}" }}, so the kernel gets a str, not '
                        'a Triton dtype; for the dtype write OUT_DTYPE = { dtype = "bf16" }')


def test_gen_rejects_other_schema_version(tmp_path, run_taot):
    manifest = tmp_path / "manifest.json"
    manifest.write_text('{"schema": "taot.manifest", "schema_version": 99, "kernels": []}\n')
    assert_fails_naming(run_taot("gen", manifest, "-o", tmp_path / "gen"), "version 99", "reads schema \"taot.manifest\" version 2")
    manifest.write_text('{"schema": "taot.manifest", "schema_version": 1, "kernels": []}\n')  # schema 1 is refused
    assert_fails_naming(run_taot("gen", manifest, "-o", tmp_path / "gen"), "version 1 is not supported",
                        "reads schema \"taot.manifest\" version 2")


def test_gen_rejects_missing_manifest(tmp_path, run_taot):
    result = run_taot("gen", tmp_path / "nothing.json", "-o", tmp_path / "gen")
    assert result.returncode != 0
    assert "nothing.json" in result.stderr


def test_build_library_builds_the_static_library(tmp_path, run_taot):
    spec = write_spec(tmp_path)
    out = tmp_path / "out"
    result = run_taot("build", spec, "-o", out, "--build-library", "-j", "1")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (out / "build" / "libscale.a").exists()
    assert "[3/3] cmake build" in result.stderr


def test_missing_python_interpreter_is_named(tmp_path, taot_bin):
    import os
    import subprocess
    spec = write_spec(tmp_path)
    result = subprocess.run([str(taot_bin), "compile", str(spec), "-o", str(tmp_path / "out")], capture_output=True,
                            text=True, env={**os.environ, "TAOT_PYTHON": "/nonexistent/python9"})
    assert result.returncode != 0
    assert "cannot run /nonexistent/python9" in result.stderr


MEMBER_CLASH_SOURCE = textwrap.dedent('''
    import triton
    import triton.language as tl

    @triton.jit
    def k(x_ptr, int: tl.constexpr, int_: tl.constexpr):
        tl.store(x_ptr + tl.arange(0, 16), tl.full((16,), int + int_, tl.float32))
''')


def test_what_gen_would_refuse_fails_before_any_compile(tmp_path, run_taot):
    """The manifest the spec makes is checked by taot gen's own reader (gen --plan) before anything
    compiles: two fields that would be one C++ member fail at once, naming the spec and the kernel."""
    import time
    (tmp_path / "k.py").write_text(MEMBER_CLASH_SOURCE)
    (tmp_path / "spec.toml").write_text(textwrap.dedent('''
        [library]
        name = "lib"
        targets = ["sm_90"]

        [[kernel]]
        name = "k"
        source = "k.py"
        grid = [1]
        args = { x_ptr = "*fp32", int = { constexpr = [1, 2] }, int_ = { constexpr = 2 } }
        default = { int = 1 }
    '''))
    start = time.perf_counter()
    result = run_taot("build", tmp_path / "spec.toml", "-o", tmp_path / "out")
    seconds = time.perf_counter() - start
    print(f"time to the first error (gen's check, before compiling): {seconds:.2f} s")
    assert_fails_naming(result, "spec.toml: taot gen would refuse the manifest this spec makes (checked before "
                        "compiling): kernels[0] (k).config[1].name", 'fields "int" and "int_" would both be')
    assert not (tmp_path / "out" / "artifacts").exists()
    assert seconds < 10, seconds


def test_gen_plan_takes_a_manifest_without_images(tmp_path, run_taot):
    write_spec(tmp_path)
    result = run_taot("build", tmp_path / "scale.toml", "-o", tmp_path / "out", "--quiet")
    assert result.returncode == 0, result.stderr
    import json
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    for variant in manifest["kernels"][0]["variants"]:
        variant["images"] = []
    (tmp_path / "plan.json").write_text(json.dumps(manifest))
    assert run_taot("gen", "--plan", tmp_path / "plan.json").returncode == 0
    assert run_taot("gen", tmp_path / "plan.json", "-o", tmp_path / "gen").returncode != 0  # a manifest needs images


RULE_FIELD_SOURCE = textwrap.dedent('''
    import triton
    import triton.language as tl

    @triton.heuristics(values={"HAS_G": lambda args: args["g_ptr"] is not None})
    @triton.jit
    def gated(x_ptr, g_ptr, n, HAS_G: tl.constexpr, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offsets, mask=offsets < n)
        if HAS_G:
            x = x * tl.load(g_ptr + offsets, mask=offsets < n)
        tl.store(x_ptr + offsets, x, mask=offsets < n)
''')


def test_a_rule_field_whose_where_leaves_one_value_defaults_to_it(tmp_path, run_taot):
    """HAS_G is computed by a rule (false and true); `where` keeps only the variants with g_ptr given,
    so only true is compiled: its default is true (it was false, which taot gen refused after the
    compile)."""
    import json
    (tmp_path / "k.py").write_text(RULE_FIELD_SOURCE)
    (tmp_path / "spec.toml").write_text(textwrap.dedent('''
        [library]
        name = "gated"
        targets = ["sm_90"]

        [[kernel]]
        name = "gated"
        source = "k.py"
        grid = ["cdiv(n, BLOCK)"]
        where = ["not g_ptr.none"]
        args = { x_ptr = "*fp32", g_ptr = { type = "*fp32", none = true }, n = "i32", BLOCK = { constexpr = 256 } }
    '''))
    result = run_taot("build", tmp_path / "spec.toml", "-o", tmp_path / "out", "--quiet")
    assert result.returncode == 0, result.stderr
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    field = next(field for field in manifest["kernels"][0]["config"] if field["name"] == "HAS_G")
    assert field["values"] == [True] and field["default"] is True, field


def test_more_jobs_than_cores_are_capped_and_said(tmp_path, run_taot):
    """-j above the core count starts no more compile processes than cores (each is one core's work
    and about 120 MB), and says so."""
    import os
    cores = os.cpu_count() or 1
    blocks = [2 ** (5 + i) for i in range(cores + 1)]  # one more job than cores
    spec = write_spec(tmp_path, extra_arg="").read_text().replace("BLOCK = { constexpr = [128] }",
                                                                  f"BLOCK = {{ constexpr = {blocks} }}")
    spec = spec.replace('num_warps = [4]', 'num_warps = [4]\n\n[kernel.default]\nBLOCK = 32')
    (tmp_path / "scale.toml").write_text(spec)
    result = run_taot("compile", tmp_path / "scale.toml", "-o", tmp_path / "out", "-j", str(cores * 8))
    assert result.returncode == 0, result.stderr
    assert f"-j {cores * 8}: this machine has {cores} cores; compiling with {cores} processes" in result.stderr


def test_an_unknown_target_on_the_command_line_is_a_usage_error(tmp_path, run_taot):
    """--target sm_75 is a bad command line (exit 2), as in taot passes, listing the targets."""
    write_spec(tmp_path)
    for command in ("build", "compile"):
        result = run_taot(command, tmp_path / "scale.toml", "--target", "sm_75", "-o", tmp_path / "out")
        assert result.returncode == 2, result.stderr
        assert "--target sm_75: expected one of sm_80," in result.stderr


def test_cluster_without_ray_says_how_to_get_it_before_compiling(run_taot, tmp_path):
    """The system Python of these tests has no Ray (tests/cluster runs where it has)."""
    try:
        import ray  # noqa: F401
        pytest.fail("this Python has Ray: the test needs one without (tests/cluster covers the one with)")
    except ImportError:
        pass
    spec = write_spec(tmp_path)
    result = run_taot("compile", spec, "-o", tmp_path / "out", "--cluster", "auto")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == "error: --cluster needs Ray in this Python: pip install 'taot[ray]' (or pip install ray)"
    assert not (tmp_path / "out" / "artifacts").exists()
