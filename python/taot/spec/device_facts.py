# What a kernel module sees of "the GPU" while taot imports it for a target: the device queries
# projects make at import (torch.cuda.get_device_properties(0).multi_processor_count,
# torch.cuda.get_device_capability(), triton.runtime.driver.active.utils.get_device_properties(dev),
# torch.cuda.is_available(), ...) answered with the target's facts, so that configs computed from
# them follow the target. The table of known devices, the spec's [library.device.<target>]
# overrides and the patching all live here.
import contextlib
import dataclasses
import importlib
import importlib.abc
import sys
import types
from pathlib import Path

from ..errors import Problem
from .targets import AMD_WAVE_SIZE, LDS_BYTES, NVIDIA_WARP_SIZE, accepted_target_names, parse_target

# The facts taot answers, named as torch's device properties name them (units: bytes, kHz, bits).
INT_FACTS = ("multi_processor_count", "total_memory", "shared_memory_per_block", "shared_memory_per_block_optin",
             "shared_memory_per_multiprocessor", "regs_per_multiprocessor", "max_threads_per_block",
             "max_threads_per_multi_processor", "warp_size", "L2_cache_size", "clock_rate", "memory_clock_rate",
             "memory_bus_width")
FACT_NAMES = ("name",) + INT_FACTS

KIB, MIB, GIB = 1024, 1024 ** 2, 1024 ** 3

# Per compute capability, the architecture's limits (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability": shared memory per SM / opt-in per block, resident threads
# per SM) and one product's size (its data sheet: SMs, memory, L2, clocks). These are the defaults;
# [library.device.<target>] replaces any of them for the GPU a library is really for.
_ARCH = {  # capability: (shared memory per SM, opt-in per block, max threads per SM)
    80: (164 * KIB, 163 * KIB, 2048), 86: (100 * KIB, 99 * KIB, 1536), 87: (164 * KIB, 163 * KIB, 1536),
    89: (100 * KIB, 99 * KIB, 1536), 90: (228 * KIB, 227 * KIB, 2048), 100: (228 * KIB, 227 * KIB, 2048),
    101: (228 * KIB, 227 * KIB, 2048), 103: (228 * KIB, 227 * KIB, 2048), 107: (228 * KIB, 227 * KIB, 2048),
    110: (228 * KIB, 227 * KIB, 2048), 120: (100 * KIB, 99 * KIB, 1536), 121: (100 * KIB, 99 * KIB, 1536),
}
_PRODUCT = {  # capability: (name, SMs, memory, L2, SM clock kHz, memory clock kHz, memory bus bits)
    80: ("NVIDIA A100-SXM4-80GB", 108, 80 * GIB, 40 * MIB, 1410000, 1593000, 5120),
    86: ("NVIDIA A10", 72, 24 * GIB, 6 * MIB, 1695000, 6251000, 384),
    87: ("Orin", 16, 64 * GIB, 4 * MIB, 1300000, 3200000, 256),
    89: ("NVIDIA L40S", 142, 48 * GIB, 96 * MIB, 2520000, 9001000, 384),
    90: ("NVIDIA H100 80GB HBM3", 132, 80 * GIB, 50 * MIB, 1980000, 2619000, 5120),
    100: ("NVIDIA B200", 148, 180 * GIB, 126 * MIB, 1965000, 3996000, 8192),
    # Products below are the nearest public data sheets; override them for the GPU at hand.
    101: ("NVIDIA Jetson Thor", 20, 128 * GIB, 32 * MIB, 1575000, 4266000, 256),
    103: ("NVIDIA B300", 148, 268 * GIB, 126 * MIB, 1965000, 3996000, 8192),
    107: ("NVIDIA Jetson Thor", 20, 128 * GIB, 32 * MIB, 1575000, 4266000, 256),
    110: ("NVIDIA Jetson Thor", 20, 128 * GIB, 32 * MIB, 1575000, 4266000, 256),
    120: ("NVIDIA GeForce RTX 5090", 170, 32 * GIB, 96 * MIB, 2407000, 14001000, 512),
    121: ("NVIDIA GB10", 48, 128 * GIB, 24 * MIB, 2418000, 4266000, 256),
}


# AMD Instinct, per gfx name: the capability ROCm's torch reports (major, minor from the gfx name:
# gfx942 -> 9.4), LDS per workgroup (also the most a block may use), and one product's size (its
# data sheet: compute units, memory, L2, peak engine clock kHz, memory clock kHz, bus bits).
_AMD = {
    "gfx942": (94, "AMD Instinct MI300X", 304, 192 * GIB, 4 * MIB, 2100000, 2600000, 8192),
    "gfx950": (95, "AMD Instinct MI355X", 256, 288 * GIB, 4 * MIB, 2400000, 4000000, 8192),
}


@dataclasses.dataclass(frozen=True)
class DeviceFacts:
    """What the imports for one target read as device 0 (picklable: pool workers import with it)."""
    target: str          # the target's name, e.g. "sm_90", "gfx942"
    capability: int      # e.g. 90; an AMD target's as ROCm's torch reports it (gfx942: 94)
    name: str
    multi_processor_count: int
    total_memory: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    shared_memory_per_multiprocessor: int
    regs_per_multiprocessor: int
    max_threads_per_block: int
    max_threads_per_multi_processor: int
    warp_size: int
    L2_cache_size: int
    clock_rate: int
    memory_clock_rate: int
    memory_bus_width: int

    @property
    def major(self):
        return self.capability // 10

    @property
    def minor(self):
        return self.capability % 10

    def triton_properties(self):
        """What triton.runtime.driver.active.utils.get_device_properties(device) returns."""
        return {"max_shared_mem": self.shared_memory_per_block_optin, "max_num_regs": 65536,
                "multiprocessor_count": self.multi_processor_count, "warpSize": self.warp_size,
                "sm_clock_rate": self.clock_rate, "mem_clock_rate": self.memory_clock_rate,
                "mem_bus_width": self.memory_bus_width}

    @property
    def is_amd(self):
        return parse_target(self.target).vendor == "amd"

    @property
    def gcn_arch_name(self):
        """What ROCm's torch gives as gcnArchName (the gfx name with MI300/MI350's usual features)."""
        return f"{self.target}:sramecc+:xnack-" if self.is_amd else "NVIDIA CUDA GPU"


def default_facts(target):
    """The table's facts for a targets.Target."""
    if target.vendor == "amd":
        capability, name, units, memory, l2, clock, memory_clock, bus = _AMD[target.name]
        lds = LDS_BYTES[target.name]
        return DeviceFacts(target=target.name, capability=capability, name=name, multi_processor_count=units,
                           total_memory=memory, shared_memory_per_block=lds, shared_memory_per_block_optin=lds,
                           shared_memory_per_multiprocessor=lds, regs_per_multiprocessor=512 * 1024 // 4,
                           max_threads_per_block=1024, max_threads_per_multi_processor=2048, warp_size=AMD_WAVE_SIZE,
                           L2_cache_size=l2, clock_rate=clock, memory_clock_rate=memory_clock, memory_bus_width=bus)
    shared_per_sm, shared_optin, threads = _ARCH[target.capability]
    name, sms, memory, l2, clock, memory_clock, bus = _PRODUCT[target.capability]
    return DeviceFacts(target=target.name, capability=target.capability, name=name, multi_processor_count=sms,
                       total_memory=memory, shared_memory_per_block=48 * KIB, shared_memory_per_block_optin=shared_optin,
                       shared_memory_per_multiprocessor=shared_per_sm, regs_per_multiprocessor=65536,
                       max_threads_per_block=1024, max_threads_per_multi_processor=threads, warp_size=NVIDIA_WARP_SIZE,
                       L2_cache_size=l2, clock_rate=clock, memory_clock_rate=memory_clock, memory_bus_width=bus)


def facts_for(target, overrides=None):
    """The target's facts with the spec's overrides ({fact: value}, already checked) applied."""
    return dataclasses.replace(default_facts(target), **(overrides or {}))


class Device:
    """The facts of every target of a library: the table's, with [library.device] over them."""

    def __init__(self, overrides):
        self.overrides = overrides  # arch (capability or gfx name) -> {fact: value}
        self.seen = {}

    def facts(self, target):
        if target.name not in self.seen:
            self.seen[target.name] = facts_for(target, self.overrides.get(target.arch))
        return self.seen[target.name]

    def used(self):
        """{target name: DeviceFacts} of the targets asked for."""
        return dict(self.seen)


def read_overrides(node):
    """{arch: {fact: value}} from [library.device] (a keypath.Node), whose keys are target
    names (sm_90 and sm_90a name the same device) and whose tables give facts by name; SpecError
    for anything else."""
    if not node.present():
        return {}
    if not isinstance(node.value, dict):
        raise node.error("a table of targets, such as [library.device.sm_90] multi_processor_count = 114")
    overrides = {}
    for target_name, table in node.value.items():
        entry = node.key(target_name)
        target = parse_target(target_name)
        if target is None:
            raise entry.error(f"a target name, one of {', '.join(accepted_target_names())}", f'"{target_name}"')
        if not isinstance(table, dict):
            raise entry.error("a table of device facts, such as multi_processor_count = 114")
        facts = overrides.setdefault(target.arch, {})
        for fact, value in table.items():
            if fact not in FACT_NAMES:
                raise entry.key(fact).error("a device fact: " + ", ".join(FACT_NAMES), f'"{fact}"')
            if fact == "name":
                facts[fact] = entry.key(fact).string("the device's name, as torch.cuda.get_device_name() gives it")
            elif isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise entry.key(fact).error("a positive int")
            else:
                facts[fact] = value
    return overrides


# ---- answering the queries while a module imports ----

@dataclasses.dataclass
class Probes:
    """What the import asked: `answered` (query names), and `unanswered` (notes naming the query and
    the line of the user's file that made it, without the target)."""
    facts: DeviceFacts
    answered: list = dataclasses.field(default_factory=list)
    unanswered: list = dataclasses.field(default_factory=list)
    modules: set = dataclasses.field(default_factory=set)  # names of the modules on the stack at a query

    def record(self, query):
        self.answered.append(query)
        self.modules |= _modules_on_stack()

    def refuse(self, query, why):
        """A note for a query taot cannot answer; returns the message of the exception to raise."""
        where = _user_line()
        text = f"{where + ': ' if where else ''}{query} {why}"
        if text not in self.unanswered:
            self.unanswered.append(text)
        self.modules |= _modules_on_stack()
        return f"{query} {why}"  # the exception's message: the summary of a failed import adds the line


class UnansweredProbe(Problem, AttributeError):
    """A device query taot has no answer for, raised into the user's module (an AttributeError, so
    that getattr(x, name, default) works)."""


_INFRASTRUCTURE = (str(Path(__file__).resolve().parents[1]),)  # taot's own frames


def _skipped(filename):
    if filename.startswith("<") or filename.startswith(_INFRASTRUCTURE):
        return True
    parts = Path(filename).parts
    return "torch" in parts or "triton" in parts or "importlib" in parts


def _user_line():
    """"file.py:12" of the innermost frame outside taot, torch, triton and importlib."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not _skipped(filename):
            return f"{Path(filename).name}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def _modules_on_stack():
    """The modules whose code is on the stack at a query, taot's, torch's, triton's and importlib's
    left out: a framework first imported inside the block must never count as device-dependent (it
    would be dropped and imported again for the next target)."""
    names, frame = set(), sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__")
        if name and not _skipped(frame.f_code.co_filename):
            names.add(name)
        frame = frame.f_back
    return names


class _Properties:
    """torch.cuda.get_device_properties(...) for the target: its facts as attributes."""

    def __init__(self, facts, probes):
        object.__setattr__(self, "_facts", facts)
        object.__setattr__(self, "_probes", probes)

    def __getattr__(self, name):
        facts, probes = self._facts, self._probes
        known = {"major": facts.major, "minor": facts.minor, "is_integrated": 0, "is_multi_gpu_board": 0,
                 "gcnArchName": facts.gcn_arch_name}
        if name in FACT_NAMES or name in known:
            probes.record(f"get_device_properties().{name}")
            return known[name] if name in known else getattr(facts, name)
        raise UnansweredProbe(probes.refuse(f"torch.cuda.get_device_properties().{name}",
                                            "is not a device fact taot knows at compile time (it knows: "
                                            f"{', '.join(FACT_NAMES + tuple(known))})"))

    def __repr__(self):
        return f"_CudaDeviceProperties(name='{self._facts.name}', major={self._facts.major}, " \
               f"minor={self._facts.minor}, multi_processor_count={self._facts.multi_processor_count})"


def _torch_answers(facts, probes):
    """{attribute of torch.cuda: replacement} for the duration of an import."""
    def answer(query, value):
        def function(*args, **kwargs):
            probes.record(f"torch.cuda.{query}")
            return value() if callable(value) else value
        function.__name__ = query
        return function

    def no_device_work(*args, **kwargs):
        raise RuntimeError(probes.refuse("the module uses the GPU (allocating memory, a stream or a launch, which "
                                         "initialises CUDA)", "at import; taot answers only device queries at "
                                         "compile time (docs/spec.md, \"Device facts while importing\")"))

    capability = (facts.major, facts.minor)
    return {
        "is_available": answer("is_available", True),
        "device_count": answer("device_count", 1),
        "current_device": answer("current_device", 0),
        "get_device_properties": answer("get_device_properties", lambda: _Properties(facts, probes)),
        "get_device_capability": answer("get_device_capability", capability),
        "get_device_name": answer("get_device_name", facts.name),
        "is_bf16_supported": answer("is_bf16_supported", facts.is_amd or facts.capability >= 80),
        "get_arch_list": answer("get_arch_list", [facts.target if facts.is_amd else f"sm_{facts.capability}"]),
        "_lazy_init": no_device_work,
    }


class _Driver:
    """triton.runtime.driver.active for the target: the queries of Triton's CudaDriver."""

    def __init__(self, facts, probes, torch_patch):
        self._facts, self._probes, self._torch_patch = facts, probes, torch_patch
        self.utils = types.SimpleNamespace(get_device_properties=self._properties)

    def _properties(self, *args, **kwargs):
        self._probes.record("driver.active.utils.get_device_properties")
        return self._facts.triton_properties()

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget
        self._probes.record("driver.active.get_current_target")
        if self._facts.is_amd:
            return GPUTarget("hip", self._facts.target, self._facts.warp_size)
        return GPUTarget("cuda", self._facts.capability, self._facts.warp_size)

    def get_current_device(self):
        self._probes.record("driver.active.get_current_device")
        return 0

    def get_device_capability(self, *args):
        self._probes.record("driver.active.get_device_capability")
        return (self._facts.major, self._facts.minor)

    def get_active_torch_device(self):
        import torch
        return torch.device("cuda", 0)

    def get_device_interface(self):
        import torch  # torch.cuda, patched as it imports
        return torch.cuda

    @staticmethod
    def is_active():
        return True

    def get_benchmarker(self):
        from triton.testing import do_bench
        return do_bench

    def __getattr__(self, name):
        raise UnansweredProbe(self._probes.refuse(f"triton.runtime.driver.active.{name}",
                                                  "is not a device query taot answers at compile time"))


@contextlib.contextmanager
def answering(facts):
    """While the block runs, the device queries answer with `facts` (torch.cuda's, now or as soon as
    the block imports torch, and Triton's driver); yields the Probes record. Everything is restored
    afterwards."""
    probes = Probes(facts)
    torch_patch = _TorchPatch(facts, probes)
    hook = None
    if "torch.cuda" in sys.modules:
        torch_patch.apply(sys.modules["torch.cuda"])
    else:  # importing torch costs seconds: patch it only if the module imports it
        hook = _AfterImport("torch.cuda", torch_patch.apply)
        sys.meta_path.insert(0, hook)
    config = importlib.import_module("triton.runtime.driver").driver  # the DriverConfig Triton reads
    saved_driver = (config._default, config._active)
    config._active = config._default = _Driver(facts, probes, torch_patch)
    try:
        yield probes
    finally:
        config._default, config._active = saved_driver
        if hook is not None and hook in sys.meta_path:
            sys.meta_path.remove(hook)
        torch_patch.restore()


_MISSING = object()


class _TorchPatch:
    """The replacements of torch.cuda's query functions, applied to the module and undone."""

    def __init__(self, facts, probes):
        self.facts, self.probes = facts, probes
        self.module, self.saved = None, {}

    def apply(self, torch_cuda):
        self.module = torch_cuda
        for name, replacement in _torch_answers(self.facts, self.probes).items():
            self.saved[name] = torch_cuda.__dict__.get(name, _MISSING)
            setattr(torch_cuda, name, replacement)

    def restore(self):
        for name, value in self.saved.items():
            if value is _MISSING:
                delattr(self.module, name)
            else:
                setattr(self.module, name, value)
        self.saved = {}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then(module)` right after module `name` is first executed."""

    def __init__(self, name, then):
        self.name, self.then = name, then

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                execute, then = spec.loader.exec_module, self.then

                def exec_module(module):
                    execute(module)
                    then(module)
                spec.loader.exec_module = exec_module
                return spec
        return None
