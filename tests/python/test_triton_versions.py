# The supported Triton releases are one table (python/taot/triton_api/versions.py): the wheel's
# dependency range, the docs' support table and the version gate follow it.
import os
import re
import subprocess
import sys
import tomllib

import pytest

from conftest import REPO, base_spec
from taot import triton_api
from taot.errors import SpecError
from taot.triton_api import versions


def test_every_release_between_oldest_and_newest_has_a_row_and_a_tested_version_of_it():
    minors = sorted(versions.RELEASES)
    assert minors[0] == versions.OLDEST and minors[-1] == versions.NEWEST
    assert minors == [(3, minor) for minor in range(versions.OLDEST[1], versions.NEWEST[1] + 1)]
    for minor, release in versions.RELEASES.items():
        assert versions.minor_of(release.tested) == minor, release


def test_the_wheel_depends_on_the_supported_range():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    triton = [dependency for dependency in project["dependencies"] if dependency.startswith("triton")]
    oldest, newest = versions.OLDEST, versions.NEWEST
    assert triton == [f"triton>={oldest[0]}.{oldest[1]},<{newest[0]}.{newest[1] + 1}"]


def test_the_install_docs_table_lists_each_supported_release_once():
    text = (REPO / "docs" / "install.md").read_text()
    rows = re.findall(r"^\| (\d+\.\d+)\.x \|", text, re.MULTILINE)
    assert [versions.minor_of(row) for row in rows] == sorted(versions.RELEASES)


@pytest.mark.parametrize("text, minor", [("3.9.0", (3, 9)), ("3.7.1+git1a2b3c", (3, 7)), ("3.10.0rc1", (3, 10)),
                                         ("nightly", None), ("", None), (None, None)])
def test_minor_of_reads_the_first_two_numbers(text, minor):
    assert versions.minor_of(text) == minor


def test_release_of_an_unsupported_version_is_none():
    assert versions.release_of("3.4.0") is None
    assert versions.release_of("3.10.0") is None
    assert versions.release_of("3.9.0").autotune_key_checked_at_decoration


def _run_with_fake_triton(tmp_path, version, *arguments):
    fake = tmp_path / "fake" / "triton"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(f"__version__ = {version!r}\n")
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "fake"), str(REPO / "python")]))
    environment.pop("TAOT_PYTHON", None)
    return subprocess.run([sys.executable, "-m", "taot", *arguments], capture_output=True, text=True,
                          env=environment, cwd=tmp_path)


@pytest.mark.parametrize("version", ["3.4.0", "3.10.0"])
def test_an_unsupported_triton_is_one_line_naming_both_versions_before_any_work(tmp_path, version):
    (tmp_path / "spec.toml").write_text("this is not read\n")
    result = _run_with_fake_triton(tmp_path, version, "build", "spec.toml", "-o", "out")
    assert result.returncode == 1, result.stderr
    message = result.stderr.strip()
    assert "Traceback" not in message and len(message.splitlines()) == 1, message
    assert f"Triton {version}" in message and versions.supported_range_text() in message
    assert "TAOT_PYTHON" in message and sys.executable in message
    assert not (tmp_path / "out").exists()


def test_a_command_that_needs_no_triton_runs_with_an_unsupported_one(tmp_path):
    result = _run_with_fake_triton(tmp_path, "3.4.0", "bench", "--help")  # bench runs built libraries
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: taot bench"), result.stdout


# ---- what the installed release can build ----

# The targets each tested release's bundled ptxas cannot assemble (measured with the `tested` release
# of each row: 3.5's ptxas 12.8 has no sm_103/sm_121; from 3.7, CUDA 13 names sm_101 sm_110).
REFUSED_TARGETS = {(3, 5): {103, 107, 110, 121}, (3, 6): {107, 110}, (3, 7): {101, 107}, (3, 8): {101, 107},
                   (3, 9): {101}}


def test_a_target_the_installed_ptxas_cannot_build_is_refused_naming_triton_and_ptxas(project):
    from taot.spec.targets import KNOWN_CAPABILITIES
    refused = REFUSED_TARGETS[versions.minor_of(triton_api.VERSION)]
    for capability in KNOWN_CAPABILITIES:
        spec = base_spec()
        spec["library"]["targets"] = [f"sm_{capability}"]
        if capability in refused:
            with pytest.raises(SpecError) as error:
                project.load(spec)
            message = str(error.value)
            assert f'library.targets[0]: expected a target Triton {triton_api.VERSION} can build with ptxas' in message
            assert f'got "sm_{capability}"' in message and "sm_90" in message
        else:
            assert project.load(spec).targets[0].capability == capability


def test_an_option_the_installed_triton_lacks_is_refused_naming_it(project):
    from taot.triton_api import compiler
    spec = base_spec()
    spec["kernel"][0]["options"]["enable_reflect_ftz"] = [False, True]
    spec["kernel"][0]["default"]["enable_reflect_ftz"] = False
    if "enable_reflect_ftz" in compiler.option_fields():  # 3.6 on: two variants per other choice
        library = project.load(spec)
        assert {variant.config["enable_reflect_ftz"] for variant in library.variants["scale_kernel"]} == {False, True}
    else:  # 3.5 has no such option: its compile would silently ignore it
        with pytest.raises(SpecError) as error:
            project.load(spec)
        assert f"kernel[0].options.enable_reflect_ftz: expected an option of Triton {triton_api.VERSION}, which " \
               f"has no enable_reflect_ftz" in str(error.value)
