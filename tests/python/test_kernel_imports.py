# Importing kernels as projects write them: by module name, once per target with that target's
# device facts answering the queries a module makes at import (a package's utils computing
# IS_HOPPER), and the depfile naming the module's package files.
import sys
import textwrap

import pytest

from conftest import REPO  # noqa: F401 (puts python/ on sys.path)
from taot.errors import SpecError
from taot.spec import device_facts, source as kernel_source
from taot.spec.targets import parse_target
from taot.spec.validate import load_spec

UTILS = '''
import triton

IS_HOPPER = triton.runtime.driver.active.get_current_target().arch >= 90
SMEM = triton.runtime.driver.active.utils.get_device_properties(0)["max_shared_mem"]
'''

# ops imports common, which reads utils: by then utils is imported, so common's value is right only
# when the whole package is imported afresh for each target.
COMMON = '''
from {package}.utils import IS_HOPPER

WARPS = 8 if IS_HOPPER else 4
'''

OPS = '''
import triton
import triton.language as tl

from .utils import SMEM
from . import utils
from .common import WARPS

BLOCKS = [64, 128] + ([256] if SMEM > 200 * 1024 else [])


@triton.autotune(configs=[triton.Config({{"BLOCK": block}}, num_warps=WARPS) for block in BLOCKS], key=["n"])
@triton.jit
def {kernel}(x_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets, mask=offsets < n) * 2, mask=offsets < n)
'''

SPEC = '''
[library]
name = "lib"
targets = ["sm_80", "sm_90"]
{device}

[[kernel]]
name = "k"
function = "{package}.ops:{kernel}"
grid = ["cdiv(n, BLOCK)"]

[kernel.args]
x_ptr = {{ type = "*fp32", align = 16 }}
n = "i32"
'''


def write_package(tmp_path, package, device=""):
    kernel = f"{package}_kernel"
    folder = tmp_path / package
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "utils.py").write_text(UTILS)
    (folder / "common.py").write_text(COMMON.format(package=package))
    (folder / "ops.py").write_text(OPS.format(kernel=kernel))
    spec = tmp_path / "lib.toml"
    spec.write_text(SPEC.format(package=package, kernel=kernel, device=device))
    return spec, kernel


def configs_by_target(library):
    kernel = library.kernels[0]
    found = {}
    for variant in library.variants[kernel.name]:
        for target in variant.targets:
            found.setdefault(target, []).append((variant.config["BLOCK"], variant.config["num_warps"]))
    return {target: sorted(configs) for target, configs in found.items()}


def test_a_package_probing_the_device_at_import_is_imported_afresh_for_each_target(tmp_path):
    spec, _ = write_package(tmp_path, "probingpkg_a")
    library = load_spec(spec)
    assert configs_by_target(library) == {"sm_80": [(64, 4), (128, 4)],
                                          "sm_90": [(64, 8), (128, 8), (256, 8)]}
    kernel = library.kernels[0]
    assert kernel.module == "probingpkg_a.ops"
    assert kernel.source == (tmp_path / "probingpkg_a" / "ops.py").resolve()


def test_a_second_module_of_the_package_sees_its_own_targets_values_too(tmp_path):
    """Kernels from two modules of one package: the second module's imports for sm_80 must not find
    the package's utils as the first module's sm_90 import left them."""
    spec, kernel = write_package(tmp_path, "probingpkg_e")
    (tmp_path / "probingpkg_e" / "ops2.py").write_text(OPS.format(kernel="second_kernel"))
    text = spec.read_text()
    spec.write_text(text + text[text.index("[[kernel]]"):].replace('name = "k"', 'name = "k2"').replace(
        f"probingpkg_e.ops:{kernel}", "probingpkg_e.ops2:second_kernel"))
    library = load_spec(spec)
    expected = {"sm_80": [(64, 4), (128, 4)], "sm_90": [(64, 8), (128, 8), (256, 8)]}
    for kernel_spec in library.kernels:
        found = {}
        for variant in library.variants[kernel_spec.name]:
            for target in variant.targets:
                found.setdefault(target, []).append((variant.config["BLOCK"], variant.config["num_warps"]))
        assert {target: sorted(configs) for target, configs in found.items()} == expected, kernel_spec.name


def test_a_pool_worker_imports_the_module_for_its_jobs_target(tmp_path):
    spec, kernel = write_package(tmp_path, "probingpkg_b")
    library = load_spec(spec)
    for target_name, warps in (("sm_90", 8), ("sm_80", 4), ("sm_90", 8)):
        function = kernel_source.load_function(None, kernel, module="probingpkg_b.ops",
                                               facts=library.device[target_name], search=str(tmp_path))
        assert function.fn.__globals__["WARPS"] == warps


def test_the_spec_overrides_device_facts_per_target(tmp_path):
    spec, _ = write_package(tmp_path, "probingpkg_c", device="[library.device.sm_80]\n"
                                                            "shared_memory_per_block_optin = 232448\n")
    assert configs_by_target(load_spec(spec))["sm_80"] == [(64, 4), (128, 4), (256, 4)]


@pytest.mark.parametrize("device, key, expected", [
    ("[library.device.sm_75]\nwarp_size = 32\n", "library.device.sm_75", "a target name"),
    ("[library.device.sm_90]\nwarp_size = -1\n", "library.device.sm_90.warp_size", "a positive int"),
    ("[library.device.sm_90]\nsms = 1\n", "library.device.sm_90.sms", "a device fact: name, multi_processor_count"),
])
def test_bad_device_facts_are_spec_errors(tmp_path, device, key, expected):
    spec, _ = write_package(tmp_path, f"probingpkg_bad_{abs(hash(device)) % 1000}", device=device)
    with pytest.raises(SpecError) as raised:
        load_spec(spec)
    assert raised.value.key == key and raised.value.expected.startswith(expected)


def test_the_depfile_names_the_modules_package_files(tmp_path):
    from taot.commands.build import _inputs
    spec, _ = write_package(tmp_path, "probingpkg_d")
    library = load_spec(spec)
    inputs = {path.resolve() for path in _inputs(library, [])}
    folder = (tmp_path / "probingpkg_d").resolve()
    assert {folder / "ops.py", folder / "utils.py", folder / "common.py"} <= inputs


def test_the_table_gives_an_h100_its_data_sheet_facts():
    facts = device_facts.facts_for(parse_target("sm_90"))
    assert (facts.multi_processor_count, facts.shared_memory_per_block_optin, facts.shared_memory_per_multiprocessor) \
        == (132, 232448, 233472)
    assert device_facts.facts_for(parse_target("sm_80")).multi_processor_count == 108
    every = [device_facts.facts_for(parse_target(name)) for name in ("sm_86", "sm_89", "sm_100", "sm_120")]
    assert all(facts.multi_processor_count > 0 for facts in every)


def test_an_amd_target_answers_as_rocms_torch_and_triton_would_on_that_gpu():
    """gfx942 at import: an MI300X as ROCm's torch shows it (capability 9.4, gcnArchName with its
    features, 64-wide waves, 64 KiB LDS), and Triton's driver names a hip target; an override wins."""
    import triton
    facts = device_facts.facts_for(parse_target("gfx942"), {"multi_processor_count": 228})
    assert (facts.capability, facts.warp_size, facts.shared_memory_per_block_optin) == (94, 64, 65536)
    assert device_facts.facts_for(parse_target("gfx950")).shared_memory_per_block_optin == 160 * 1024
    with device_facts.answering(facts):
        target = triton.runtime.driver.active.get_current_target()
        assert (target.backend, target.arch, target.warp_size) == ("hip", "gfx942", 64)
        assert triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"] == 228
        properties = device_facts._Properties(facts, device_facts.Probes(facts))
        assert (properties.gcnArchName, properties.major, properties.minor) == ("gfx942:sramecc+:xnack-", 9, 4)


def test_the_queries_answer_only_while_importing_and_are_restored():
    import triton
    config = sys.modules["triton.runtime.driver"].driver
    before = (config._default, config._active)
    facts = device_facts.facts_for(parse_target("sm_90"), {"multi_processor_count": 114})
    with device_facts.answering(facts) as probes:
        assert triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"] == 114
        assert triton.runtime.driver.active.get_current_target().arch == 90
        with pytest.raises(AttributeError, match="launch_metadata_of_something is not a device query"):
            triton.runtime.driver.active.launch_metadata_of_something
    assert (config._default, config._active) == before
    assert probes.answered == ["driver.active.utils.get_device_properties", "driver.active.get_current_target"]
    assert len(probes.unanswered) == 1 and probes.unanswered[0].startswith("test_kernel_imports.py:")


def test_a_module_that_asks_nothing_is_imported_once_for_every_target(tmp_path):
    (tmp_path / "plain.py").write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.jit
        def plain_kernel(x_ptr):
            pass
    '''))
    first = kernel_source.import_source(tmp_path / "plain.py", device_facts.facts_for(parse_target("sm_80")))
    second = kernel_source.import_source(tmp_path / "plain.py", device_facts.facts_for(parse_target("sm_90")))
    assert first is second
