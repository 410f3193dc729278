# Compile targets: parse "sm_90a"-style names into a Triton GPU target.
import re
from dataclasses import dataclass

# Compute capabilities taot has names for (sm_80 to sm_121, sm_110 as CUDA 13 names the former
# sm_101). Which of them the installed Triton can build depends on its ptxas:
# triton_api.compiler.buildable_capabilities().
KNOWN_CAPABILITIES = (80, 86, 87, 89, 90, 100, 101, 103, 107, 110, 120, 121)
_TARGET_PATTERN = re.compile(r"sm_?(\d+)(a?)")


@dataclass(frozen=True)
class Target:
    """A named compile target; Triton builds capability >= 90 as the arch-specific sm_XXa either way."""
    name: str        # normalised spelling from the spec, e.g. "sm_90a"
    capability: int  # major*10 + minor, e.g. 90

    def gpu_target(self):
        from ..triton_api.compiler import gpu_target
        return gpu_target(self.capability)


def accepted_target_names():
    names = []
    for capability in KNOWN_CAPABILITIES:
        names.append(f"sm_{capability}")
        if capability >= 90:
            names.append(f"sm_{capability}a")
    return names


def parse_target(text):
    """Target for a name like sm_90, sm_90a or sm90; None when the name is not an accepted target."""
    match = _TARGET_PATTERN.fullmatch(text.strip().lower())
    if not match:
        return None
    capability = int(match.group(1))
    suffix = match.group(2)
    if capability not in KNOWN_CAPABILITIES or (suffix and capability < 90):
        return None
    return Target(f"sm_{capability}{suffix}", capability)
