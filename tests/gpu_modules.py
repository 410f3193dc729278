"""The pytest plugin of every test folder (the repo's conftest.py registers it): the `gpu` marker,
whose tests are skipped where torch sees no CUDA GPU (`gpu(count=2)`: fewer than two), and the
`build_module` fixture, which builds a taot spec into its Python module (`module_fixture` makes one
for a test file). As a command, `python3 tests/gpu_modules.py SPEC...` builds specs the same way and
prints their module folders joined for PYTHONPATH (for the benchmarks, which are not tests).

A spec's module is built in three steps: `taot build SPEC -o FOLDER --python` with the taot binary
($TAOT_BIN, else build/tools/taot/taot of this checkout), then CMake configures FOLDER into
FOLDER/build (Ninja, Release, the runtime of this checkout, this Python) and builds it. FOLDER is
$TAOT_GPU_WORK/<spec name> (default build-gpu/), kept between runs so that a later one rebuilds only
what changed; taot build arguments add a suffix to the name. Where $TAOT_GENERATED is set, FOLDER is
$TAOT_GENERATED/<spec name>, sources another machine generated (another Triton release, say), and
taot build is not run."""
import dataclasses
import hashlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LOG_TAIL_LINES = 40


def taot_binary():
    return Path(os.environ.get("TAOT_BIN") or ROOT / "build" / "tools" / "taot" / "taot")


def work_folder():
    return Path(os.environ.get("TAOT_GPU_WORK") or ROOT / "build-gpu")


@dataclasses.dataclass(frozen=True)
class BuiltModule:
    """A spec built into its Python module."""
    name: str         # the library's name, which is also its module's
    folder: Path      # taot build's output: manifest.json and the generated sources
    module_dir: Path  # folder/build, where CMake built the module; on sys.path

    def load(self):
        """The imported module."""
        return importlib.import_module(self.name)


class BuildFailed(Exception):
    """A step of a module's build failed; the message names the spec and ends with the log's tail."""


_binding_ready = False


def make_taot_binding_available():
    """Makes taot's compiled Python binding (taot._native, which every generated module loads)
    importable from this checkout's python/ folder: when this Python cannot import it (a GPU machine
    that was sent the taot binary but not the binding, say), builds the CMake target taot_native of
    this checkout for this Python into FOLDER/taot_native (the runtime and the binding only), which
    writes it into python/taot/. Raises BuildFailed, with the log's tail, if that fails."""
    global _binding_ready
    if _binding_ready:
        return
    probe = subprocess.run([sys.executable, "-c", "import taot._native"], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                               filter(None, [str(ROOT / "python"), os.environ.get("PYTHONPATH")]))))
    if probe.returncode != 0:
        build = work_folder() / "taot_native"
        log = work_folder() / "taot_native.log"
        build.mkdir(parents=True, exist_ok=True)
        steps = [["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                  "-DTAOT_BUILD_TOOLS=OFF", "-DTAOT_BUILD_TESTS=OFF", f"-DPython_EXECUTABLE={sys.executable}"],
                 ["cmake", "--build", build, "--target", "taot_native"]]
        with open(log, "w") as output:
            for step in steps:
                if subprocess.run([str(part) for part in step], stdout=output, stderr=subprocess.STDOUT).returncode:
                    tail = "".join(log.read_text().splitlines(keepends=True)[-LOG_TAIL_LINES:])
                    raise BuildFailed(f"taot's Python binding (taot_native) did not build; the end of {log}:\n{tail}")
    _binding_ready = True


_built = {}  # (spec, taot arguments) -> BuiltModule or BuildFailed, for this process


def build(spec, *taot_args):
    """The BuiltModule of `spec` (a path, relative ones from the repo root) built with these extra
    taot build arguments, once per process, its module folder put on sys.path; BuildFailed if a
    step fails."""
    spec = (ROOT / spec).resolve()
    key = (spec, tuple(map(str, taot_args)))
    if key not in _built:
        try:
            _built[key] = _build(spec, key[1])
        except BuildFailed as failure:
            _built[key] = failure
    if isinstance(_built[key], BuildFailed):
        raise _built[key]
    module_dir = str(_built[key].module_dir)
    if module_dir not in sys.path:
        sys.path.insert(0, module_dir)
    return _built[key]


def _build(spec, taot_args):
    name = spec.stem
    if taot_args:
        name += "-" + hashlib.sha256("\0".join(taot_args).encode()).hexdigest()[:8]
    work = work_folder()
    work.mkdir(parents=True, exist_ok=True)
    log = work / f"{name}.log"
    make_taot_binding_available()
    steps = []
    if os.environ.get("TAOT_GENERATED"):
        folder = Path(os.environ["TAOT_GENERATED"]) / name
        if not (folder / "manifest.json").exists():
            raise BuildFailed(f"{spec}: no generated sources in {folder} ($TAOT_GENERATED)")
    else:
        folder = work / name
        steps.append([taot_binary(), "build", spec, "-o", folder, "--python", "--quiet", *taot_args])
    steps.append(["cmake", "-S", folder, "-B", folder / "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                  f"-DTAOT_SOURCE_DIR={ROOT}", f"-DPython_EXECUTABLE={sys.executable}"])
    steps.append(["cmake", "--build", folder / "build"])
    with open(log, "w") as output:
        for step in steps:
            command = [str(part) for part in step]
            output.write(f"$ {' '.join(command)}\n")
            output.flush()
            try:
                code = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT).returncode
            except OSError as error:
                output.write(f"cannot run {command[0]}: {error.strerror}\n")
                code = -1
            if code != 0:
                output.close()
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
                raise BuildFailed(f"building the module of {spec} failed ({Path(command[0]).name} exited "
                                  f"{code}); the last lines of {log}:\n{tail}")
    library = json.loads((folder / "manifest.json").read_text())["library"]
    return BuiltModule(library, folder, folder / "build")


@pytest.fixture(scope="session")
def build_module():
    """build() for tests: a failed build fails each test that needs the module, with the log's tail."""
    def build_or_fail(spec, *taot_args):
        try:
            return build(spec, *taot_args)
        except BuildFailed as failure:
            message = str(failure)
        pytest.fail(message, pytrace=False)
    return build_or_fail


def torch_if_installed():
    """torch, or None where it is not installed: test files of `gpu` tests are collected without it
    (and the marker skips their tests)."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def module_fixture(spec, *taot_args, bind=None):
    """A module-scoped fixture of a test file giving the BuiltModule of `spec` (build_module's
    arguments). With `bind`, it is autouse and also sets the test file's global `bind` to the
    imported module, for tests and helpers that call the module as a global:

        library = None  # the generated module, set by softmax_module
        softmax_module = module_fixture(HERE / "softmax.toml", bind="library")
    """
    @pytest.fixture(scope="module", autouse=bind is not None)
    def fixture(request, build_module):
        built = build_module(spec, *taot_args)
        if bind is not None:
            setattr(request.module, bind, built.load())
        return built
    return fixture


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu(count=1): needs torch and `count` CUDA GPUs (skipped otherwise)")


def no_gpu_reason(count):
    """Why a test needing `count` GPUs cannot run here, or None."""
    try:
        import torch
    except ImportError:
        return "needs PyTorch with CUDA: torch is not installed"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU: torch.cuda.is_available() is False"
    if torch.cuda.device_count() < count:
        return f"needs {count} or more GPUs, found {torch.cuda.device_count()}"
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    marker = item.get_closest_marker("gpu")
    if marker is not None and (reason := no_gpu_reason(marker.kwargs.get("count", 1))) is not None:
        pytest.skip(reason)


def main(specs):
    if not specs:
        print("usage: python3 tests/gpu_modules.py SPEC... (prints the module folders for PYTHONPATH)",
              file=sys.stderr)
        return 2
    try:
        print(os.pathsep.join(str(build(spec).module_dir) for spec in specs))
    except BuildFailed as failure:
        print(failure, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
