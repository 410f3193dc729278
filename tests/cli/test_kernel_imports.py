"""The taot binary on kernels taken from projects unchanged: kernels named by installed module
(`function = "pkg.ops.norm:kernel"`), a kernel whose imports the Python lacks, an autotuner subclass
such as flash-linear-attention's, and autotune configs computed at import from the device, which
follow each target with no GPU present."""
import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TORCH_PYTHON = REPO / "build" / "torch-env" / "bin" / "python"

# A project's package as pip would install it: its own Autotuner subclass (made by a decorator
# function, with its own __init__, attributes and run), and a kernel module using it.
UTILS = '''
import triton
from triton.runtime.autotuner import Autotuner


class CachedAutotuner(Autotuner):
    """Loads its best config from a cache folder before tuning, as flash-linear-attention's does."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs):
        super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, **kwargs)
        self.kernel_name = fn.fn.__name__ if hasattr(fn, "fn") else fn.__name__
        self.cache_checked = False

    def run(self, *args, **kwargs):
        self.cache_checked = True
        return super().run(*args, **kwargs)


def cache_autotune(configs, key=None, prune_configs_by=None, reset_to_zero=None, restore_value=None, **kwargs):
    def decorator(fn):
        return CachedAutotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value,
                               prune_configs_by=prune_configs_by, **kwargs)
    return decorator
'''

NORM = '''
import triton
import triton.language as tl

from ..utils import cache_autotune


@cache_autotune(configs=[triton.Config({"BLOCK": block}, num_warps=warps) for block in (64, 128) for warps in (2, 4)],
                key=["n"])
@triton.jit
def _norm_fwd_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * {factor}, mask=mask)


@triton.jit
def _norm_bwd_kernel(x_ptr):
    pass
'''

MODULE_SPEC = '''
[library]
name = "norm"
targets = ["sm_90"]

[[kernel]]
name = "norm_fwd"
function = "{function}"
grid = ["cdiv(n, BLOCK)"]
{extra}

[kernel.args]
x_ptr = {{ type = "*fp32", align = 16 }}
out_ptr = {{ type = "*fp32", align = 16 }}
n = "i32"
'''


def install_project(root, factor=2):
    package = root / "site" / "projpkg"
    (package / "ops").mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "ops" / "__init__.py").write_text("")
    (package / "utils.py").write_text(UTILS)
    (package / "ops" / "norm.py").write_text(NORM.replace("{factor}", str(factor)))
    return package


def taot(taot_bin, *args, site=None, python=None, cwd=None):
    environment = dict(os.environ)
    if site is not None:
        environment["PYTHONPATH"] = str(site)
    if python is not None:
        environment["TAOT_PYTHON"] = str(python)
    return subprocess.run([str(taot_bin), *map(str, args)], cwd=cwd, env=environment, capture_output=True,
                          text=True, timeout=900)


def write_module_spec(root, function="projpkg.ops.norm:_norm_fwd_kernel", extra=""):
    spec = root / "norm.toml"
    spec.write_text(MODULE_SPEC.format(function=function, extra=extra))
    return spec


def manifest_kernel(outdir):
    return json.loads((outdir / "manifest.json").read_text())["kernels"][0]


# ---- kernels named by installed module ----

def test_a_kernel_named_by_module_builds_with_its_autotuner_subclass_configs_and_key(taot_bin, tmp_path):
    package = install_project(tmp_path)
    spec = write_module_spec(tmp_path)
    result = taot(taot_bin, "compile", spec, "-o", tmp_path / "out", "-j", "1", site=tmp_path / "site")
    assert result.returncode == 0, result.stderr
    kernel = manifest_kernel(tmp_path / "out")
    assert (tmp_path / "out" / kernel["source"]).resolve() == (package / "ops" / "norm.py").resolve()
    assert kernel["function"] == "_norm_fwd_kernel"
    assert kernel["tuning_key"] == ["n"]
    configs = sorted((variant["config"]["BLOCK"], variant["config"]["num_warps"]) for variant in kernel["variants"])
    assert configs == [(64, 2), (64, 4), (128, 2), (128, 4)]
    assert "compiled 4, up to date 0" in result.stderr


def test_editing_the_installed_module_rebuilds_and_leaving_it_does_not(taot_bin, tmp_path):
    install_project(tmp_path)
    spec = write_module_spec(tmp_path)
    arguments = ("compile", spec, "-o", tmp_path / "out", "-j", "1")
    assert taot(taot_bin, *arguments, site=tmp_path / "site").returncode == 0
    hashes = {variant["id"]: variant["hash"] for variant in manifest_kernel(tmp_path / "out")["variants"]}
    again = taot(taot_bin, *arguments, site=tmp_path / "site")
    assert "compiled 0, up to date 4" in again.stderr, again.stderr
    install_project(tmp_path, factor=3)  # the kernel's body changes in the installed file
    edited = taot(taot_bin, *arguments, site=tmp_path / "site")
    assert edited.returncode == 0, edited.stderr
    assert "compiled 4, up to date 0" in edited.stderr, edited.stderr
    rehashed = {variant["id"]: variant["hash"] for variant in manifest_kernel(tmp_path / "out")["variants"]}
    assert rehashed.keys() == hashes.keys() and all(rehashed[key] != hashes[key] for key in hashes)


def test_a_module_beside_the_spec_is_found_without_installing_it(taot_bin, tmp_path):
    """The spec's folder comes first on sys.path while the module imports (a project's checkout)."""
    install_project(tmp_path)
    (tmp_path / "site" / "projpkg").rename(tmp_path / "projpkg")
    spec = write_module_spec(tmp_path)
    result = taot(taot_bin, "compile", spec, "--list")
    assert result.returncode == 0, result.stderr
    assert "4 variants" in result.stdout


def test_a_module_that_is_not_installed_names_the_module_the_python_and_taot_python(taot_bin, tmp_path):
    install_project(tmp_path)
    spec = write_module_spec(tmp_path, function="projpkg.ops.nrm:_norm_fwd_kernel")
    result = taot(taot_bin, "compile", spec, "--list", site=tmp_path / "site")
    assert result.returncode == 1
    message = result.stderr.strip()
    assert message.count("\n") == 0 and "Traceback" not in message, message
    assert 'kernel[0].function' in message and "projpkg.ops.nrm" in message
    assert "TAOT_PYTHON" in message and "python" in message.lower()


def test_a_function_the_module_lacks_lists_the_kernels_it_has(taot_bin, tmp_path):
    install_project(tmp_path)
    spec = write_module_spec(tmp_path, function="projpkg.ops.norm:norm_fwd")
    result = taot(taot_bin, "compile", spec, "--list", site=tmp_path / "site")
    assert result.returncode == 1
    assert "module projpkg.ops.norm (it has: _norm_bwd_kernel, _norm_fwd_kernel)" in result.stderr
    assert '"norm_fwd", which it does not define' in result.stderr


def test_a_source_beside_a_module_reference_is_refused(taot_bin, tmp_path):
    install_project(tmp_path)
    (tmp_path / "norm.py").write_text("")
    spec = write_module_spec(tmp_path, extra='source = "norm.py"')
    result = taot(taot_bin, "compile", spec, "--list", site=tmp_path / "site")
    assert result.returncode == 1
    assert "kernel[0].source: expected no source: function names module projpkg.ops.norm" in result.stderr


# ---- imports the Python lacks ----

@pytest.mark.parametrize("missing", ["torch_that_is_not_installed", "someproject.ops"])
def test_a_kernel_importing_what_the_python_lacks_says_which_module_and_python(taot_bin, tmp_path, missing):
    (tmp_path / "kernel.py").write_text(f"import triton\nimport {missing}\n")
    (tmp_path / "spec.toml").write_text('[library]\nname = "k"\ntargets = ["sm_90"]\n\n[[kernel]]\n'
                                        'source = "kernel.py"\nfunction = "k"\n')
    result = taot(taot_bin, "compile", tmp_path / "spec.toml", "--list")
    assert result.returncode == 1
    message = result.stderr.strip()
    assert message.count("\n") == 0 and "Traceback" not in message, message
    top = missing.partition(".")[0]
    assert f"line 2: No module named '{top}'" in message
    assert "the Python taot runs" in message and "TAOT_PYTHON" in message


# ---- device facts at import ----

# Configs computed at import from the device, as projects write them; torch is optional (Triton's
# driver answers without it).
PROBING_KERNEL = '''
import triton
import triton.language as tl
try:
    import torch
except ImportError:
    torch = None


def _configs():
    driver = triton.runtime.driver.active
    if torch is not None:
        assert torch.cuda.is_available()
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        major, _ = torch.cuda.get_device_capability()
        name = torch.cuda.get_device_name()
        device = torch.cuda.current_device()
    else:
        sms = driver.utils.get_device_properties(0)["multiprocessor_count"]
        major = driver.get_current_target().arch // 10
        name = "NVIDIA H100" if major == 9 else "other"
        device = driver.get_current_device()
    shared = driver.utils.get_device_properties(device)["max_shared_mem"]
    blocks = [128, 256] if shared > 200 * 1024 else [128]
    warps = 8 if major >= 9 and "H100" in name else 4
    return [triton.Config({"BLOCK": block}, num_warps=warps, num_stages=3 if sms > 120 else 2) for block in blocks]


@triton.autotune(configs=_configs(), key=["n"])
@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)
'''

PROBING_SPEC = '''
[library]
name = "probes"
targets = ["sm_80", "sm_90"]
{device}

[[kernel]]
source = "probes.py"
function = "scale_kernel"
grid = ["cdiv(n, BLOCK)"]

[kernel.args]
x_ptr = {{ type = "*fp32", align = 16 }}
out_ptr = {{ type = "*fp32", align = 16 }}
n = "i32"
'''


def configs_per_target(outdir):
    """{arch: sorted (BLOCK, num_warps, num_stages)} of the manifest's images."""
    found = {}
    for variant in manifest_kernel(outdir)["variants"]:
        config = variant["config"]
        for image in variant["images"]:
            found.setdefault(image["arch"], []).append((config["BLOCK"], config["num_warps"], config["num_stages"]))
    return {arch: sorted(configs) for arch, configs in found.items()}


def pythons():
    found = [pytest.param(None, id="system-python")]
    found.append(pytest.param(TORCH_PYTHON, id="torch", marks=pytest.mark.skipif(
        not TORCH_PYTHON.exists(), reason="build/torch-env is not made (scripts/torch_env.sh)")))
    return found


@pytest.mark.parametrize("python", pythons())
def test_configs_computed_from_the_device_at_import_follow_each_target(taot_bin, tmp_path, python):
    (tmp_path / "probes.py").write_text(PROBING_KERNEL)
    (tmp_path / "spec.toml").write_text(PROBING_SPEC.format(device=""))
    result = taot(taot_bin, "compile", tmp_path / "spec.toml", "-o", tmp_path / "out", "-j", "1", python=python)
    assert result.returncode == 0, result.stderr
    # A100: 108 SMs, 163 KiB of shared memory per block; H100 SXM: 132 SMs, 227 KiB.
    assert configs_per_target(tmp_path / "out") == {80: [(128, 4, 2)], 90: [(128, 8, 3), (256, 8, 3)]}


def test_the_spec_overrides_a_targets_device_facts(taot_bin, tmp_path):
    (tmp_path / "probes.py").write_text(PROBING_KERNEL)
    device = "[library.device.sm_90]\nmulti_processor_count = 114\nshared_memory_per_block_optin = 101376\n"
    (tmp_path / "spec.toml").write_text(PROBING_SPEC.format(device=device))
    result = taot(taot_bin, "compile", tmp_path / "spec.toml", "-o", tmp_path / "out", "-j", "1")
    assert result.returncode == 0, result.stderr
    assert configs_per_target(tmp_path / "out") == {80: [(128, 4, 2)], 90: [(128, 8, 2)]}


def test_a_misspelt_device_fact_is_a_spec_error(taot_bin, tmp_path):
    (tmp_path / "probes.py").write_text(PROBING_KERNEL)
    (tmp_path / "spec.toml").write_text(PROBING_SPEC.format(device="[library.device.sm_90]\nmulti_processor = 114\n"))
    result = taot(taot_bin, "compile", tmp_path / "spec.toml", "--list")
    assert result.returncode == 1
    assert "library.device.sm_90.multi_processor: expected a device fact: name, multi_processor_count" \
        in result.stderr


@pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="build/torch-env is not made (scripts/torch_env.sh)")
def test_a_probe_taot_cannot_answer_is_a_note_naming_it_and_its_line(taot_bin, tmp_path):
    (tmp_path / "probes.py").write_text(PROBING_KERNEL.replace(
        "def _configs():\n", "def _configs():\n"
        "    pci = getattr(torch.cuda.get_device_properties(0), 'pci_bus_id', 0)\n"))
    (tmp_path / "spec.toml").write_text(PROBING_SPEC.format(device=""))
    result = taot(taot_bin, "compile", tmp_path / "spec.toml", "--list", python=TORCH_PYTHON)
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "note: sm_80, sm_90: probes.py:11: torch.cuda.get_device_properties().pci_bus_id is not a device fact " \
           "taot knows at compile time" in output


@pytest.mark.skipif(not TORCH_PYTHON.exists(), reason="build/torch-env is not made (scripts/torch_env.sh)")
def test_a_module_that_uses_the_gpu_at_import_fails_naming_the_line(taot_bin, tmp_path):
    (tmp_path / "probes.py").write_text(PROBING_KERNEL.replace(
        "def _configs():\n", "BUFFER = torch.empty(16, device='cuda')\n\n\ndef _configs():\n"))
    (tmp_path / "spec.toml").write_text(PROBING_SPEC.format(device=""))
    result = taot(taot_bin, "compile", tmp_path / "spec.toml", "--list", python=TORCH_PYTHON)
    assert result.returncode == 1
    message = result.stderr.strip()
    assert message.count("\n") == 0 and "Traceback" not in message, message
    assert "RuntimeError at line 10: the module uses the GPU" in message
    assert "taot answers only device queries" in message
