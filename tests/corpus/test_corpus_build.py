# Without a GPU: every spec of the corpus builds unchanged with the real taot binary (compile and
# generate, Python module included; CMake is left to the GPU tests), its kernels imported by module
# from the projects' packages as installed from PyPI at their pinned versions, with the torch
# environment's Python as the front end's interpreter. Each project's line says how many of its
# kernels built; a spec mistake is reported before anything compiles, within two seconds.
import json
import os
import subprocess
import time
from importlib import metadata
from pathlib import Path

import pytest

import corpus

TAOT = Path(os.environ.get("TAOT_BIN") or corpus.REPO / "build" / "tools" / "taot" / "taot")


def taot_env():
    if not TAOT.exists():
        pytest.fail(f"the taot binary is not built at {TAOT} (set TAOT_BIN or build first)")
    missing = [path for path in (corpus.site(), corpus.torch_python()) if not path.exists()]
    if missing:
        pytest.fail(f"missing {', '.join(map(str, missing))}: run scripts/corpus_env.sh and scripts/torch_env.sh")
    paths = [str(corpus.site()), str(corpus.REPO / "python"), os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "TAOT_PYTHON": str(corpus.torch_python()),
            "PYTHONPATH": os.pathsep.join(filter(None, paths))}


def test_the_site_holds_the_pinned_versions():
    """The specs name modules of these releases; another release may have moved or changed them."""
    pins = corpus.pinned_versions()
    found = {}
    for distribution in metadata.distributions(path=[str(corpus.site())]):
        found[distribution.metadata["Name"].lower().replace("_", "-")] = distribution.version
    assert {name.lower(): version for name, version in pins.items()} == {
        name.lower(): found.get(name.lower()) for name in pins}, "run scripts/corpus_env.sh"


@pytest.mark.parametrize("spec", corpus.SPECS, ids=lambda spec: spec.stem)
def test_spec_builds_unchanged(spec, tmp_path):
    out = tmp_path / spec.stem
    started = time.monotonic()
    result = subprocess.run([str(TAOT), "build", str(spec), "-o", str(out), "--python", "--quiet",
                             "-j", str(os.cpu_count() or 2)],
                            capture_output=True, text=True, env=taot_env(), timeout=1500)
    seconds = time.monotonic() - started
    listed = corpus.kernels(spec)
    built = {}
    if result.returncode == 0:
        manifest = json.loads((out / "manifest.json").read_text())
        built = {kernel["name"]: len(kernel["variants"]) for kernel in manifest["kernels"]}
    print(f"[corpus] {spec.stem}: built unchanged {sum(name in built for name, _ in listed)}/{len(listed)} "
          f"kernels, {sum(built.values())} variants, in {seconds:.1f} s")
    assert result.returncode == 0, f"{spec.name} does not build unchanged:\n{result.stderr[-3000:]}"
    assert sorted(built) == sorted(name for name, _ in listed)
    for name, count in built.items():
        assert count > 0, f"{spec.stem}: {name} has no variant"
    assert (out / f"{manifest['library']}_python.cpp").is_file(), f"{spec.stem}: no Python module in {out}"


def seconds_to_import(module, env):
    """How long the front end's interpreter takes to start and import `module` (torch with it)."""
    started = time.monotonic()
    subprocess.run([str(corpus.torch_python()), "-c", f"import {module}"], env=env, check=True,
                   capture_output=True, timeout=300)
    return time.monotonic() - started


def test_a_wrong_argument_name_fails_before_compiling(tmp_path):
    """A misspelt parameter is a spec error naming the kernel and the argument, reported before any
    compile starts (no artifacts), within two seconds of what importing the kernel's module costs
    (torch and the project: seconds on their own, and unavoidable, since the parameter list is the
    function's)."""
    spec = corpus.HERE / "liger_kernel.toml"
    bad = tmp_path / "liger_kernel.toml"
    text = spec.read_text()
    assert 'gate_multiplier = "fp32"' in text
    bad.write_text(text.replace('gate_multiplier = "fp32"', 'gate_multiplyer = "fp32"', 1))
    out = tmp_path / "out"
    env = taot_env()
    started = time.monotonic()
    process = subprocess.Popen([str(TAOT), "build", str(bad), "-o", str(out), "--python"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    first_line = process.stderr.readline()
    to_first_error = time.monotonic() - started
    rest, _ = process.communicate(timeout=300)
    importing = seconds_to_import(corpus.kernels(spec)[0][1].partition(":")[0], env)
    print(f"[corpus] a wrong argument name: first error after {to_first_error:.2f} s "
          f"(importing the kernel's module alone: {importing:.2f} s): {first_line.strip()}")
    message = first_line + rest
    assert process.returncode == 1, message
    assert "kernel[0].args.gate_multiplyer" in message and "gate_multiplier" in message, message
    assert not (out / "artifacts").exists() or not any((out / "artifacts").iterdir()), message
    assert to_first_error < importing + 2.0, \
        f"the first error took {to_first_error:.2f} s, importing the module {importing:.2f} s: {message}"
