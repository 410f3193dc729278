# Triton's MLIR and LLVM bindings and its NVIDIA backend's stages, as the IR workbench (taot passes,
# taot from-ir) uses them: parsing stage files into modules, the passes a stage function adds (read with
# a recording stand-in for Triton's pass manager, then run one at a time), the rest of a stage after
# its passes, and compiling from an IR stage file (Triton's own compile, or the backend's make_ptx and
# make_cubin for the stages its compile() cannot start from).
import contextlib
import dataclasses
import tempfile
import types
from pathlib import Path

import triton
from triton._C import libtriton
from triton._C.libtriton import ir as _ir
from triton._C.libtriton import llvm as _llvm
from triton.backends.compiler import Language
from triton.compiler.compiler import IRSource

from . import RELEASE, compiler
from ..errors import Problem


# ---- modules ----

def new_context(arch):
    """A fresh MLIR context with Triton's dialects and those of the backend for `arch` (a capability or
    a gfx name) loaded: what a stage file of that target parses into. Opaque; a Module keeps its
    context alive."""
    context = _ir.context()
    _ir.load_dialects(context)
    compiler.backend(arch).load_dialects(context)
    return context


class ParseFailed(Problem):
    """MLIR could not parse a file; what it said went to file descriptor 2 (read it from there)."""


class Module:
    """An MLIR module parsed from a stage file, with the context that owns it (the module is valid
    only while its context lives, which this object ensures). Passes change it in place; not
    thread-safe."""

    def __init__(self, handle, context):
        self.handle = handle
        self.context = context
        handle.context = context  # the stage functions make their pass managers from module.context

    @classmethod
    def parse(cls, path, context):
        """The module in the file at `path` (its extension names its stage: .ttir, .ttgir); ParseFailed
        when MLIR refuses it."""
        try:
            return cls(_ir.parse_mlir_module(str(path), context), context)
        except RuntimeError as error:
            raise ParseFailed(str(error)) from None

    def text(self):
        """The module as Triton prints it, with its debug locations."""
        return self.handle.str()

    def copy(self):
        """A module of its own in the same context, parsed from this one's text."""
        with tempfile.TemporaryDirectory(prefix="taot-module-") as folder:
            path = Path(folder) / "copy.mlir"
            path.write_text(self.text())
            return Module.parse(path, self.context)

    def text_without_locations(self):
        return self.handle.str_nodebug()

    def operation_count(self):
        """Operations in the module, the module itself included."""
        count = [0]

        def visit(_operation):
            count[0] += 1

        self.handle.walk(visit)
        return count[0]

    def int_attribute(self, name):
        """The module's integer attribute `name` ("ttg.num-warps"), or None when it has none."""
        return self.handle.get_int_attr(name)

    def string_attribute(self, name):
        """The module's string attribute `name` ("ttg.target"), or None when it has none."""
        return self.handle.get_operation().get_str_attr(name)


# ---- the passes of a stage function ----

@dataclasses.dataclass(frozen=True)
class PassCall:
    """One call a stage function made to add passes to its pass manager."""
    function: str      # the add function, relative to libtriton: "passes.ttgpuir.add_coalesce"
    arguments: tuple   # what the stage passed after the pass manager
    keywords: dict
    add: object = dataclasses.field(repr=False, compare=False)  # Triton's own add function

    def pipeline_text(self, context):
        """MLIR's textual pipeline of what this call adds: "any(tritongpu-coalesce)"."""
        pass_manager = _ir.pass_manager(context)
        self.add(pass_manager, *self.arguments, **self.keywords)
        return pass_manager.get_pipeline_str()

    def run(self, module, name):
        """Run what this call adds on `module` (in place), in a pass manager of its own with Triton's
        debug settings (MLIR_ENABLE_DUMP and friends) applied as a stage function applies them; `name`
        labels the run in those dumps (from Triton 3.6 on). Raises what MLIR raises when a pass fails
        (its diagnostics go to file descriptor 2)."""
        pass_manager = _ir.pass_manager(module.context)
        pass_manager.enable_debug()
        self.add(pass_manager, *self.arguments, **self.keywords)
        if RELEASE.pass_manager_run_takes_name:
            pass_manager.run(module.handle, name)
        else:
            pass_manager.run(module.handle)


class _StageReachedRun(Problem):
    """Raised by the recording pass manager's run(): the stage function stops where its passes would run."""


# What a recording pass manager's run() does: raise _StageReachedRun (the stage function stops where
# its passes would run), nothing (its passes ran already, one by one, and the stage function goes on
# with what follows them), or run them (on a copy of the module, to reach the pass managers after it).
STOP, SKIP, EXECUTE = "stop", "skip", "execute"


class _RecordingPassManager:
    """Stands in for ir.pass_manager while a stage function is recorded: the add functions record the
    passes added to it (and, EXECUTE, add them to the real one); run() does what `mode` says."""

    def __init__(self, real, added, mode):
        self._real = real
        self.added = added
        self.mode = mode

    def enable_debug(self):
        # What a real pass manager answers (whether MLIR_ENABLE_DUMP is on), which some add calls take.
        return self._real.enable_debug()

    def run(self, module, *name):  # run(module) up to Triton 3.5, run(module, name) from 3.6
        if self.mode == STOP:
            raise _StageReachedRun()
        if self.mode == EXECUTE:
            self._real.run(module, *name)


def _pass_modules():
    """Every libtriton submodule whose dotted name has a "passes" part (passes.ttgpuir,
    nvidia.passes.ttnvgpuir, ...), by its name relative to libtriton."""
    found = {}

    def visit(module):
        relative = module.__name__[len(libtriton.__name__) + 1:]
        if "passes" in relative.split("."):
            found[relative] = module
        for child in vars(module).values():
            if isinstance(child, types.ModuleType) and child.__name__.startswith(module.__name__ + "."):
                visit(child)

    visit(libtriton)
    return found


def _recording_add(real, qualified_name):
    def add(pass_manager, *arguments, **keywords):
        if isinstance(pass_manager, _RecordingPassManager):
            pass_manager.added.append(PassCall(qualified_name, arguments, keywords, real))
            if pass_manager.mode == EXECUTE:
                real(pass_manager._real, *arguments, **keywords)
        else:
            real(pass_manager, *arguments, **keywords)
    return add


@contextlib.contextmanager
def _recording(mode):
    """While active, ir.pass_manager makes _RecordingPassManagers and every add_* function of
    libtriton's pass modules records into them; yields the list of PassCalls recorded. Patches
    Triton's bindings process-wide: not thread-safe, restored on exit."""
    real_pass_manager = _ir.pass_manager
    added = []
    patched = []
    try:
        for relative, module in _pass_modules().items():
            for name, function in list(vars(module).items()):
                if name.startswith("add_") and callable(function):
                    setattr(module, name, _recording_add(function, f"{relative}.{name}"))
                    patched.append((module, name, function))
        _ir.pass_manager = lambda context: _RecordingPassManager(real_pass_manager(context), added, mode)
        yield added
    finally:
        _ir.pass_manager = real_pass_manager
        for module, name, function in patched:
            setattr(module, name, function)


class Stage:
    """One of the backend's stage functions (make_ttir, make_ttgir, make_llir) for one target and
    option set, as Triton's compile() calls it: stage(module, metadata). Not thread-safe (reading
    its passes patches Triton's bindings while it runs)."""

    def __init__(self, name, function):
        self.name = name
        self._function = function

    def passes(self, module):
        """The PassCalls the stage function makes, in order, or None when it ran no pass manager. It runs
        up to its first pass manager's run() on `module` (what it does before its passes, such as
        setting ttg.maxnreg, happens to it); then, since a stage may run several pass managers one
        after another (AMD's make_ttgir runs two), to its end on a copy of the module, its passes run
        for real, recording them all (up to a pass that fails there). Raises what the stage function
        raises before its first run."""
        with _recording(STOP) as first:
            try:
                self._function(module.handle, {})
            except _StageReachedRun:
                pass
            else:
                return None
        from ..compile.jobs import captured_output  # (what the copy's run prints is not the user's to read)
        copy = module.copy()
        with _recording(EXECUTE) as added, captured_output():
            try:
                self._function(copy.handle, {})
            except Exception:  # a pass failed on the copy: its pass manager's passes were recorded
                pass
        return list(added) if len(added) >= len(first) else list(first)

    def finish(self, module, metadata):
        """The rest of the stage function after its passes, which have run already: the stage is called
        again with pass managers that run nothing; returns what it returns (for make_llir, the LLVM IR
        text) and records what it records in `metadata` (a dict). What it does before its passes runs
        a second time."""
        with _recording(SKIP):
            return self._function(module.handle, metadata)


def stages(arch, options):
    """(Triton's full option set as a dict, {stage name: Stage}) for `options` (option name -> value)
    on an arch, as the backend's add_stages hands them to compile(). Raises what Triton raises
    for options it refuses (ValueError, AssertionError, TypeError)."""
    parsed = compiler.backend(arch).parse_options(compiler.explicit_options(options))
    functions = {}
    compiler.backend(arch).add_stages(functions, parsed, Language.TRITON)
    return dict(parsed.__dict__), {name: Stage(name, function) for name, function in functions.items()}


def backend_name(arch):
    """The class name of Triton's backend for an arch ("CUDABackend", "HIPBackend")."""
    return type(compiler.backend(arch)).__name__


# ---- compiling from a stage file ----

@dataclasses.dataclass(frozen=True)
class Function:
    """The public function of a .ttir/.ttgir file, read the way Triton's IRSource reads it."""
    name: str               # without the "@"
    parameter_types: tuple  # Triton's types without attributes: "*f32", "i32"
    tensordesc_meta: list   # the TMA descriptor metadata a .ttgir records; None for .ttir


def read_function(path, arch):
    """The public function of the .ttir or .ttgir file at `path` (its extension names the stage);
    raises what Triton raises for a file it cannot parse."""
    context = _ir.context()  # the module lives only as long as its context: keep it while reading
    source = IRSource(str(path), context, compiler.backend(arch))
    types_in_order = tuple(source.signature[index] for index in sorted(source.signature))
    tensordesc_meta = source.module.get_tensordesc_metadata() if str(path).endswith(".ttgir") else None
    return Function(source.name.lstrip("@"), types_in_order, tensordesc_meta)


def compile_file(path, arch, options):
    """Triton's own compile of the .ttir or .ttgir file at `path` for an arch, with `options` (option
    name -> value; from a .ttgir its num_warps and num_ctas attributes win), in a private cache
    folder: ({stage: text} of the later IR stages, the image (cubin or AMD code object), Triton's
    metadata as a dict). Raises what Triton raises."""
    with compiler.private_cache():
        compiled = triton.compile(str(path), target=compiler.gpu_target(arch),
                                  options=compiler.explicit_options(options))
    texts = {stage: text for stage, text in compiled.asm.items() if isinstance(text, str)}
    image = next(data for data in compiled.asm.values() if isinstance(data, bytes))
    return texts, image, dict(compiled.metadata._asdict())


def llir_to_amdgcn(llir, metadata, arch, options):
    """The AMD backend's make_amdgcn of LLVM IR text (LLVM's AMDGPU code generator), as compile() runs
    it after make_llir; records in `metadata` what that stage records. Raises what Triton raises."""
    _llvm.init_targets()
    backend = compiler.backend(arch)
    return backend.make_amdgcn(llir, metadata, backend.parse_options(compiler.explicit_options(options)))


def amdgcn_to_hsaco(amdgcn, metadata, arch, options):
    """The AMD backend's make_hsaco of AMDGCN assembly (assembled and linked by the LLD in
    libtriton): the code object's bytes. Raises what Triton raises."""
    _llvm.init_targets()
    backend = compiler.backend(arch)
    return backend.make_hsaco(amdgcn, metadata, backend.parse_options(compiler.explicit_options(options)))


def llir_to_ptx(llir, metadata, capability, options):
    """The backend's make_ptx of LLVM IR text, as compile() runs it after make_llir; records in
    `metadata` what that stage records. Raises what Triton raises."""
    _llvm.init_targets()
    backend = compiler.backend(capability)
    return backend.make_ptx(llir, metadata, backend.parse_options(compiler.explicit_options(options)), capability)


def ptx_to_cubin(ptx, metadata, capability, options):
    """The backend's make_cubin (ptxas) of PTX text; records in `metadata` what that stage records.
    Raises what Triton raises (a PTXASError for PTX that ptxas refuses)."""
    backend = compiler.backend(capability)
    return backend.make_cubin(ptx, metadata, backend.parse_options(compiler.explicit_options(options)), capability)
