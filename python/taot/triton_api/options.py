# Triton's compile options that taot knows by name, in one table: what each is to a spec (its config
# kind), its letters in variant ids, whether triton.Config takes it, the .ttgir module attribute that
# fixes it, and whether an imported kernel's config always lists it. Which of them the installed
# Triton has, and their defaults, come from compiler.option_fields() and option_default().
from dataclasses import dataclass


@dataclass(frozen=True)
class Option:
    name: str                # CUDAOptions' (or HIPOptions') field
    kind: str                # the config field's kind: "int" or "bool"
    abbreviation: str        # its letters in variant ids (num_warps 4 -> w4)
    config: bool = False     # a triton.Config keyword (Config.all_kwargs() passes it to the JIT); passes tunes it
    ir_attribute: str = None  # the .ttgir module attribute that fixes it (Triton reads it compiling from one)
    always_listed: bool = False  # set by Triton's JIT on every compile: an imported kernel's config lists it
    vendor: str = None       # the vendor whose targets' compiles have it alone ("amd": a HIPOptions field only,
                             # "nvidia": a CUDAOptions field only); None: both have it
    least: int = 1           # an int option's smallest value (0: "let the backend choose")


# In spec order: the order a kernel's option config fields take.
OPTIONS = (
    Option("num_warps", "int", "w", config=True, ir_attribute="ttg.num-warps", always_listed=True),
    Option("num_stages", "int", "s", config=True, always_listed=True),
    Option("num_ctas", "int", "c", config=True, ir_attribute="ttg.num-ctas"),
    Option("maxnreg", "int", "r", config=True, ir_attribute="ttg.maxnreg", vendor="nvidia"),
    Option("enable_fp_fusion", "bool", "fpfus"),
    Option("enable_reflect_ftz", "bool", "ftz", vendor="nvidia"),
    Option("launch_cooperative_grid", "bool", "coop"),
    Option("launch_pdl", "bool", "pdl", vendor="nvidia"),
    Option("debug", "bool", "dbg"),
    Option("sanitize_overflow", "bool", "sov"),
    # AMD's: occupancy hint (waves per execution unit), MFMA instruction shape (16 or 32), and the
    # K elements an MFMA operand packs per load.
    Option("waves_per_eu", "int", "wpe", vendor="amd", least=0),
    Option("matrix_instr_nonkdim", "int", "mnk", vendor="amd", least=0),
    Option("kpack", "int", "kp", vendor="amd"),
)
BY_NAME = {option.name: option for option in OPTIONS}

CONFIG_OPTIONS = tuple(option.name for option in OPTIONS if option.config)
IR_OPTION_ATTRIBUTES = {option.name: option.ir_attribute for option in OPTIONS if option.ir_attribute}
ALWAYS_LISTED = tuple(option.name for option in OPTIONS if option.always_listed)
ABBREVIATIONS = {option.name: option.abbreviation for option in OPTIONS}
