# Compile targets: parse "sm_90a"- and "gfx942"-style names into a Triton GPU target.
import re
from dataclasses import dataclass

# Compute capabilities taot has names for (sm_80 to sm_121, sm_110 as CUDA 13 names the former
# sm_101). Which of them the installed Triton can build depends on its ptxas:
# triton_api.compiler.buildable_capabilities().
KNOWN_CAPABILITIES = (80, 86, 87, 89, 90, 100, 101, 103, 107, 110, 120, 121)
# AMD Instinct targets taot has names for: MI300 (gfx942) and MI350 (gfx950). Triton's AMD backend
# builds their code objects with no GPU and no ROCm (LLD and the device libraries are in its wheel).
KNOWN_GFX = ("gfx942", "gfx950")
# LDS (shared memory) a workgroup may use on each: Triton's AMD backend does not check a kernel's use
# against it (a gfx950 kernel of 320 KiB compiles), so taot does (compile/jobs.py).
LDS_BYTES = {"gfx942": 64 * 1024, "gfx950": 160 * 1024}
_TARGET_PATTERN = re.compile(r"sm_?(\d+)(a?)")
NVIDIA_WARP_SIZE = 32
AMD_WAVE_SIZE = 64  # CDNA's wavefront (gfx9)
# The stage of Triton's compile that is the GPU image, per vendor: a cubin, or an AMDGPU code object.
IMAGE_STAGE = {"nvidia": "cubin", "amd": "hsaco"}


@dataclass(frozen=True)
class Target:
    """A named compile target. NVIDIA: `capability` is major*10 + minor (Triton builds capability >= 90
    as the arch-specific sm_XXa either way); AMD: `capability` is None and the name is the gfx name."""
    name: str                # normalised spelling from the spec, e.g. "sm_90a", "gfx942"
    capability: int = None   # e.g. 90; None for an AMD target

    @property
    def vendor(self):
        return "nvidia" if self.capability is not None else "amd"

    @property
    def image_stage(self):
        return IMAGE_STAGE[self.vendor]

    @property
    def arch(self):
        """What Triton's backend is made from: the capability (NVIDIA) or the gfx name (AMD). Two targets
        with one arch build the same code."""
        return self.capability if self.capability is not None else self.name

    @property
    def warp_size(self):
        return NVIDIA_WARP_SIZE if self.capability is not None else AMD_WAVE_SIZE

    def gpu_target(self):
        from ..triton_api.compiler import gpu_target
        return gpu_target(self.arch)


def accepted_target_names():
    names = []
    for capability in KNOWN_CAPABILITIES:
        names.append(f"sm_{capability}")
        if capability >= 90:
            names.append(f"sm_{capability}a")
    return names + list(KNOWN_GFX)


def parse_target(text):
    """Target for a name like sm_90, sm_90a, sm90 or gfx942; None when the name is not an accepted target."""
    text = text.strip().lower()
    if text in KNOWN_GFX:
        return Target(text)
    match = _TARGET_PATTERN.fullmatch(text)
    if not match:
        return None
    capability = int(match.group(1))
    suffix = match.group(2)
    if capability not in KNOWN_CAPABILITIES or (suffix and capability < 90):
        return None
    return Target(f"sm_{capability}{suffix}", capability)


def is_amd_arch(arch):
    """Whether a backend arch (a capability or a gfx name) is an AMD one."""
    return isinstance(arch, str)


def lds_refusal(arch, shared_bytes):
    """Why an image that uses `shared_bytes` of LDS per workgroup cannot run on `arch`, or None (always
    for NVIDIA archs): Triton's AMD backend compiles a kernel over the target's LDS without a word."""
    limit = LDS_BYTES.get(arch) if is_amd_arch(arch) else None
    if limit is None or shared_bytes <= limit:
        return None
    return (f"the kernel uses {shared_bytes} bytes of LDS (shared memory) per workgroup; {arch} has {limit} "
            f"({limit // 1024} KiB), and Triton does not check it for AMD targets: restrict the variant (smaller "
            "blocks or fewer num_stages) with a where filter")


def arch_name(arch):
    """A backend arch as a target name: 90 -> "sm_90", "gfx942" -> "gfx942"."""
    return arch if isinstance(arch, str) else f"sm_{arch}"


def arch_order(arch):
    """A sort key over archs of both vendors: NVIDIA's by capability, then AMD's by name."""
    return (isinstance(arch, str), str(arch) if isinstance(arch, str) else arch)


def target_of_arch(arch):
    """The Target Triton's backend `arch` (a capability or a gfx name) builds for, by its plain name."""
    return parse_target(arch if isinstance(arch, str) else f"sm_{arch}")
