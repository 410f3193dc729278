# What differs between the Triton releases taot supports, as data: one row per minor release, so that
# supporting a new release is one row here and whatever new fact it needs. The rest of triton_api
# reads the rows to reach Triton; outside it, code reads only the version facts (release_of,
# supported_range_text) and tests read the rows to know what the installed release does (for
# instance constexpr_attrs_entries and autotune_key_checked_at_decoration, which taot itself does not
# branch on: it uses the JIT's own binder, and the module's import reports a refused key).
import dataclasses
import re

# The oldest and newest Triton minor releases taot supports, as (major, minor); pyproject.toml's
# dependency range and the docs' support table say the same (a test checks them against this).
OLDEST = (3, 5)
NEWEST = (3, 9)


@dataclasses.dataclass(frozen=True)
class Release:
    """The facts of one Triton minor release that taot depends on."""
    minor: tuple                        # (major, minor)
    tested: str                         # the release of it that taot's tests install (scripts/triton_envs.sh)
    # The launch ABI of a host tensor descriptor (runtime/include/taot/launch_abi.h's
    # TensordescLayout, by its manifest name): "3.5" passes base, shape i64, strides i64, padding i1,
    # shape i32, strides i64 without TMA; "3.7" adds a round_f32_to_tf32 i1 after the padding.
    tensordesc_layout: str
    scratch_pointers: int               # hidden trailing pointers: global scratch, profile scratch
    pass_manager_run_takes_name: bool   # pm.run(module, name) (3.6+) rather than pm.run(module)
    jit_file_line_function: bool        # code_generator.get_jit_fn_file_line exists (removed in 3.8)
    constexpr_attrs_entries: bool       # the JIT's attrs hold an empty entry for each constexpr (3.7+)
    fp_fusion_default_from_environment: bool  # enable_fp_fusion's default comes from a knob (3.9+)
    autotune_key_checked_at_decoration: bool  # @triton.autotune refuses a key naming no argument (3.9+)
    # The first capability whose images that release's ptxas-blackwell assembles (bundled, or
    # TRITON_PTXAS_BLACKWELL_PATH; the other ptxas assembles the rest): 100 in 3.6 to 3.8, 90 from 3.9;
    # None for 3.5, which has one ptxas (TRITON_PTXAS_PATH) for every target.
    blackwell_ptxas_from: int | None


_RELEASES = (
    Release((3, 5), "3.5.1", tensordesc_layout="3.5", scratch_pointers=2, pass_manager_run_takes_name=False,
            jit_file_line_function=True, constexpr_attrs_entries=False, fp_fusion_default_from_environment=False,
            autotune_key_checked_at_decoration=False, blackwell_ptxas_from=None),
    Release((3, 6), "3.6.0", tensordesc_layout="3.5", scratch_pointers=2, pass_manager_run_takes_name=True,
            jit_file_line_function=True, constexpr_attrs_entries=False, fp_fusion_default_from_environment=False,
            autotune_key_checked_at_decoration=False, blackwell_ptxas_from=100),
    Release((3, 7), "3.7.1", tensordesc_layout="3.7", scratch_pointers=2, pass_manager_run_takes_name=True,
            jit_file_line_function=True, constexpr_attrs_entries=True, fp_fusion_default_from_environment=False,
            autotune_key_checked_at_decoration=False, blackwell_ptxas_from=100),
    Release((3, 8), "3.8.0", tensordesc_layout="3.7", scratch_pointers=2, pass_manager_run_takes_name=True,
            jit_file_line_function=False, constexpr_attrs_entries=True, fp_fusion_default_from_environment=False,
            autotune_key_checked_at_decoration=False, blackwell_ptxas_from=100),
    Release((3, 9), "3.9.0", tensordesc_layout="3.7", scratch_pointers=2, pass_manager_run_takes_name=True,
            jit_file_line_function=False, constexpr_attrs_entries=True, fp_fusion_default_from_environment=True,
            autotune_key_checked_at_decoration=True, blackwell_ptxas_from=90),
)

RELEASES = {release.minor: release for release in _RELEASES}


def supported_range_text():
    return f"{OLDEST[0]}.{OLDEST[1]} to {NEWEST[0]}.{NEWEST[1]}"


def minor_of(version):
    """(major, minor) of a version string such as "3.9.0", "3.7.1+git1234" or "3.10.0rc1"; None when
    it does not start with two numbers."""
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def release_of(version):
    """The Release row of a Triton version string; None when taot does not support that release."""
    return RELEASES.get(minor_of(version))
