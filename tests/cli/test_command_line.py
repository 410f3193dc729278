"""The taot command line as a user meets it: the command table, unknown commands and options, exit
codes (0, 1 errors, 2 usage), the default output folder, -j 0, arguments handed to the front end
untouched, and a missing C++ taot said before any work."""
import os
import subprocess
import sys

import pytest

from test_trusted_builds import write_project


def test_unknown_command_is_named_with_the_commands_there_are(run_taot):
    result = run_taot("bulid", "x.toml")
    assert result.returncode == 2
    assert "taot: unknown command 'bulid'" in result.stderr
    for command in ("build", "compile", "gen", "inspect", "diff", "passes", "from-ir", "import-cache", "bench", "tune",
                    "profile"):
        assert command in result.stderr


def test_help_lists_every_command_and_exits_0(run_taot):
    result = run_taot("--help")
    assert result.returncode == 0
    for command in ("build", "compile", "gen", "inspect", "diff", "passes", "from-ir", "import-cache", "bench", "tune",
                    "profile"):
        assert f"  {command} " in result.stdout


def test_usage_errors_exit_2_naming_the_option(run_taot, tmp_path):
    assert run_taot("gen").returncode == 2
    unknown = run_taot("compile", "x.toml", "--frobnicate")
    assert unknown.returncode == 2 and "--frobnicate" in unknown.stderr
    negative = run_taot("compile", "x.toml", "-j", "-1")
    assert negative.returncode == 2 and "expected 0 (all cores) or more, got -1" in negative.stderr
    for command in ("inspect", "diff"):
        stage = run_taot(command, tmp_path, "a", "--stage", "asm")
        assert stage.returncode == 2 and "--stage: asm not in {ttir,ttgir,llir,ptx,sass,amdgcn}" in stage.stderr


@pytest.mark.parametrize("arguments, message", [
    (("gen",), "taot gen: error: manifest is required"),
    (("inspect",), "taot inspect: error: path is required"),
    (("inspect", "lib", "--bogus"), "taot inspect: error: The following argument was not expected: --bogus"),
    (("diff", "a"), "taot diff: error: operands: At least 2 required but received 1"),
    (("compile",), "taot compile: error: the following arguments are required: spec"),
])
def test_a_usage_error_of_either_side_reads_taot_command_error(run_taot, arguments, message):
    """The C++ commands' parser errors read as the front end's (docs/workbench.md, "Every command")."""
    result = run_taot(*arguments)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert f"`taot {arguments[0]} --help`" in result.stderr or "usage: taot" in result.stderr


def test_build_without_output_writes_the_documented_default(run_taot, tmp_path):
    write_project(tmp_path)
    result = run_taot("build", "scale.toml", "-j", "0", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    out = tmp_path / "taot-out" / "scale"
    assert (out / "manifest.json").is_file() and (out / "scale.h").is_file()
    listed = run_taot("build", "scale.toml", "--list", cwd=tmp_path / "taot-out")
    assert listed.returncode == 1 and "scale.toml" in listed.stderr  # the spec is looked up where given
    listed = run_taot("build", "scale.toml", "--list", cwd=tmp_path)
    assert listed.returncode == 0 and "6 variants" in listed.stdout


def test_front_end_commands_get_their_arguments_untouched(run_taot, tmp_path):
    result = run_taot("passes", "--", tmp_path / "missing.ttir")
    assert result.returncode == 1
    assert "missing.ttir" in result.stderr
    helped = run_taot("passes", "--help")
    assert helped.returncode == 0 and "usage: taot passes" in helped.stdout


def test_a_missing_cpp_taot_is_said_before_any_compile(tmp_path):
    write_project(tmp_path)
    environment = {**os.environ, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(os.path.join(os.path.dirname(__file__),
                                                                                       "..", "..", "python"))}
    environment.pop("TAOT_BIN", None)
    result = subprocess.run([sys.executable, "-m", "taot", "build", "scale.toml", "-o", "out"], cwd=tmp_path,
                            env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert "cannot find the taot command" in result.stderr
    assert not (tmp_path / "out").exists()


def test_measuring_commands_run_through_the_front_end(run_taot, tmp_path):
    (tmp_path / "manifest.json").write_text('{"schema": "taot.manifest", "schema_version": 2, "library": "lib", '
                                            '"kernels": []}')
    for command in ("bench", "tune"):
        result = run_taot(command, "--help")
        assert result.returncode == 0 and "--bench FILE" in result.stdout
        missing = run_taot(command, str(tmp_path), "--bench", str(tmp_path / "bench_none.py"))
        assert missing.returncode == 1 and "bench_none.py" in missing.stderr


AXPY = os.path.join(os.path.dirname(__file__), "..", "install", "consumer", "kernels")


def test_an_output_that_is_a_file_is_said_in_words(run_taot, tmp_path):
    write_project(tmp_path)
    (tmp_path / "taken").write_text("a file, not a folder")
    result = run_taot("build", "scale.toml", "-o", "taken/lib", "-q", cwd=tmp_path)
    assert result.returncode == 1
    assert "-o taken/lib: taken is a file; the output must be a folder" in result.stderr
    assert "Errno" not in result.stderr and "Traceback" not in result.stderr


def test_list_creates_nothing(run_taot, tmp_path):
    write_project(tmp_path)
    result = run_taot("build", "scale.toml", "--list", cwd=tmp_path)
    assert result.returncode == 0 and "6 variants" in result.stdout
    assert sorted(path.name for path in tmp_path.iterdir()) == ["kernels.py", "scale.toml"]


def test_library_name_must_be_the_specs(run_taot, tmp_path):
    write_project(tmp_path)
    result = run_taot("build", "scale.toml", "--library-name", "scales", "-q", cwd=tmp_path)
    assert result.returncode == 1
    assert "the spec names its library 'scale', but the build asks for 'scales'" in result.stderr
    assert not (tmp_path / "taot-out").exists()


def test_depfile_names_the_spec_the_kernel_and_the_modules_it_imports(run_taot, tmp_path):
    import shutil

    project = tmp_path / "project with space"
    shutil.copytree(AXPY, project)
    result = run_taot("build", "axpy.toml", "-o", "out", "--depfile", "out/deps.d", "-q", cwd=project)
    assert result.returncode == 0, result.stderr
    text = (project / "out" / "deps.d").read_text()
    target, _, inputs = text.partition(":")
    assert target == str(project / "out" / "taot-build.stamp").replace(" ", "\\ ")
    listed = {line.strip(" \\\n").replace("\\ ", " ") for line in inputs.splitlines() if line.strip(" \\\n")}
    assert listed == {str(project / name) for name in ("axpy.toml", "axpy.py", "helpers.py")}, text
    assert (project / "out" / "taot-build.stamp").is_file()


def test_the_build_tree_binary_finds_its_front_end_from_anywhere(taot_bin, tmp_path):
    """No PYTHONPATH, run from a folder far from the checkout: the binary finds python/ beside itself
    (a link the build makes); a copy with no front end beside it and a Python that lacks taot says
    what to do, with no traceback."""
    write_project(tmp_path)
    environment = {name: value for name, value in os.environ.items()
                   if name != "PYTHONPATH" and not name.startswith("TAOT_")}
    listed = subprocess.run([str(taot_bin), "build", "scale.toml", "--list"], cwd=tmp_path, env=environment,
                            capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0 and "6 variants" in listed.stdout, listed.stderr

    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    lonely = tmp_path / "bin" / "taot"
    lonely.parent.mkdir()
    lonely.write_bytes(taot_bin.read_bytes())
    lonely.chmod(0o755)
    result = subprocess.run([str(lonely), "build", "scale.toml", "--list"], cwd=tmp_path,
                            env={**environment, "TAOT_PYTHON": str(bare / "bin" / "python")},
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert "cannot import taot's Python front end" in result.stderr and "Traceback" not in result.stderr
    assert f"{tmp_path / 'bin'}/python" in result.stderr and "TAOT_PYTHON" in result.stderr
