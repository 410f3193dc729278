# The path a new user takes (docs/install.md), on the real wheel: build it, install it into a fresh
# virtual environment, run `taot build` outside the checkout, build a CMake project that uses
# find_package(taot) + taot_add_library, edit a module the kernel imports, then the kernel, and see
# exactly the cubins' source rebuilt each time, install, and link the installed library from a
# second project. No GPU needed. The wheel is built here, once per run; $TAOT_WHEEL names one built
# already instead.
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SITE_PACKAGES = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))


def run(command, **options):
    """Runs `command`, failing the test with its output when it fails; returns the completed process."""
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, **options)
    assert result.returncode == 0, f"{command} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def clean_environment(venv=None):
    """The environment of a user's shell: no PYTHONPATH or TAOT_* from the test runner; the
    virtual environment's bin/ first on PATH when given (as `source venv/bin/activate` does)."""
    env = {name: value for name, value in os.environ.items()
           if name != "PYTHONPATH" and not name.startswith("TAOT_") and name != "CMAKE_PREFIX_PATH"}
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    chosen = os.environ.get("TAOT_WHEEL")
    if chosen:
        return Path(chosen)
    folder = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", REPO, "--no-deps", "-w", folder], env=clean_environment())
    (found,) = folder.glob("taot-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh virtual environment (no system site-packages) with the wheel installed; Triton and
    its other dependencies come from the package index."""
    root = tmp_path_factory.mktemp("venv") / "env"
    run([sys.executable, "-m", "venv", root], env=clean_environment())
    run([root / "bin" / "python", "-m", "pip", "install", "-q", wheel], env=clean_environment(root))
    return root


def test_the_wheel_holds_the_command_front_end_runtime_and_cmake_package(venv):
    assert (venv / "bin" / "taot").is_file() and os.access(venv / "bin" / "taot", os.X_OK)
    assert (venv / SITE_PACKAGES / "taot" / "cli.py").is_file()
    assert list((venv / SITE_PACKAGES / "taot").glob("_native.*.so")), "the wheel has no taot._native"
    assert (venv / SITE_PACKAGES / "taot" / "templates" / "repro" / "CMakeLists.txt.in").is_file()
    assert (venv / "include" / "taot" / "runtime.h").is_file()
    assert (venv / "lib" / "libtaot_runtime.a").is_file()
    for name in ("taotConfig.cmake", "TaotLibrary.cmake", "taotRuntimeTargets.cmake", "taotToolTargets.cmake"):
        assert (venv / "lib" / "cmake" / "taot" / name).is_file(), name
    version = run([venv / "bin" / "taot", "--version"], env=clean_environment()).stdout.strip()
    import_version = run([venv / "bin" / "python", "-c", "import taot; print(taot.__version__)"],
                         env=clean_environment(), cwd=venv).stdout.strip()
    assert version == f"taot {import_version}"


def test_taot_build_outside_the_checkout_with_no_source_path(venv, tmp_path):
    """The installed binary, called by its path from a folder far from the checkout and with no
    PYTHONPATH, finds its front end (the venv's Python) and builds a library with the installed
    runtime; no `build/` is left in the checkout by the wheel build."""
    work = tmp_path / "work"
    shutil.copytree(HERE / "consumer" / "kernels", work)
    env = clean_environment()  # the venv is not on PATH: the binary finds its Python beside itself
    run([venv / "bin" / "taot", "build", "axpy.toml", "-j", "2", "--quiet", "--build-library"], cwd=work, env=env)
    built = work / "taot-out" / "axpy"
    assert (built / "manifest.json").is_file()
    assert (built / "build" / "libaxpy.a").is_file()
    assert not (REPO / "python" / "build").exists()


def test_a_binary_whose_python_lacks_the_front_end_says_how_to_fix_it(venv, tmp_path):
    bare = tmp_path / "bare"
    run([sys.executable, "-m", "venv", "--without-pip", bare], env=clean_environment())
    lonely = tmp_path / "bin" / "taot"
    lonely.parent.mkdir()
    shutil.copy(venv / "bin" / "taot", lonely)
    env = clean_environment()
    env["TAOT_PYTHON"] = str(bare / "bin" / "python")
    result = subprocess.run([lonely, "build", "x.toml"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 1
    assert "cannot import taot's Python front end" in result.stderr
    assert str(bare / "bin" / "python") in result.stderr and "pip install" in result.stderr
    assert "Traceback" not in result.stderr


def compiled_objects(build_output):
    """The object files a Ninja build compiled, by source file name."""
    return sorted(re.findall(r"Building CXX object \S+/([^/\s]+)\.o", build_output))


def test_taot_add_library_builds_rebuilds_what_changed_installs_and_links(venv, tmp_path):
    project = tmp_path / "consumer"
    shutil.copytree(HERE / "consumer", project)
    env = clean_environment(venv)  # find_package(taot) through PATH: venv/bin -> venv/lib/cmake/taot
    build = project / "build"
    run(["cmake", "-S", project, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         f"-DPython_EXECUTABLE={venv / 'bin' / 'python'}"], env=env)
    first = run(["cmake", "--build", build], env=env).stdout
    assert "taot build axpy" in first
    assert "axpy_cubins.cpp" in compiled_objects(first) and "count_variants.cpp" in compiled_objects(first)
    assert run([build / "count_variants"], env=env).stdout.strip() == "2"

    assert "no work to do" in run(["cmake", "--build", build], env=env).stdout

    # A module the kernel imports changes: taot build runs again and the library's sources recompile,
    # the program's do not. (Edits that change the code: a reordered sum compiles to the same cubin on
    # Triton 3.9, which pip installs into the venv, and then nothing needs recompiling.)
    helpers = project / "kernels" / "helpers.py"
    helpers.write_text(helpers.read_text().replace("return x * alpha + y", "return x * alpha - y"))
    second = run(["cmake", "--build", build], env=env).stdout
    assert "taot build axpy" in second
    assert "axpy_cubins.cpp" in compiled_objects(second) and "count_variants.cpp" not in compiled_objects(second), second

    # The kernel's own source changes: again the library's sources only.
    kernel = project / "kernels" / "axpy.py"
    kernel.write_text(kernel.read_text().replace("mask = offsets < n", "mask = offsets < n - 1"))
    edited = run(["cmake", "--build", build], env=env).stdout
    assert "taot build axpy" in edited
    assert "axpy_cubins.cpp" in compiled_objects(edited) and "count_variants.cpp" not in compiled_objects(edited), edited

    # The spec changes (a third config): the library's sources change and the program relinks.
    spec = project / "kernels" / "axpy.toml"
    spec.write_text(spec.read_text() + "\n[kernel.options]\nnum_stages = [2, 3]\n")
    third = run(["cmake", "--build", build], env=env).stdout
    assert "taot build axpy" in third
    assert run([build / "count_variants"], env=env).stdout.strip() == "4"

    prefix = tmp_path / "installed"
    run(["cmake", "--install", build, "--prefix", prefix], env=env)
    assert (prefix / "include" / "axpy" / "axpy.h").is_file()
    assert (prefix / "lib" / "cmake" / "axpy" / "axpyConfig.cmake").is_file()
    modules = list((prefix / SITE_PACKAGES).glob("axpy*.so"))
    assert len(modules) == 1
    probe = "import axpy; print(axpy.axpy.__name__ if hasattr(axpy, 'axpy') else sorted(vars(axpy)))"
    module_env = dict(env, PYTHONPATH=str(prefix / SITE_PACKAGES))
    assert "axpy" in run([venv / "bin" / "python", "-c", probe], env=module_env, cwd=tmp_path).stdout

    user = tmp_path / "user"
    shutil.copytree(HERE / "user", user)
    run(["cmake", "-S", user, "-B", user / "build", "-G", "Ninja", f"-DCMAKE_PREFIX_PATH={prefix}"], env=env)
    run(["cmake", "--build", user / "build"], env=env)
    listed = run([user / "build" / "list_variants"], env=env).stdout.split()
    assert len(listed) == 4 and all(name.startswith("axpy_fp32") for name in listed)


def test_taot_add_library_names_a_spec_of_another_library(venv, tmp_path):
    project = tmp_path / "consumer"
    shutil.copytree(HERE / "consumer", project)
    cmake_lists = project / "CMakeLists.txt"
    cmake_lists.write_text(cmake_lists.read_text().replace("taot_add_library(axpy ", "taot_add_library(saxpy ")
                           .replace("PRIVATE axpy)", "PRIVATE saxpy)"))
    env = clean_environment(venv)
    build = project / "build"
    run(["cmake", "-S", project, "-B", build, "-G", "Ninja", f"-DPython_EXECUTABLE={venv / 'bin' / 'python'}"],
        env=env)
    result = subprocess.run(["cmake", "--build", build], capture_output=True, text=True, env=env)
    assert result.returncode != 0
    assert "the spec names its library 'axpy', but the build asks for 'saxpy'" in result.stdout + result.stderr
