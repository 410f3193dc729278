# Compiling a @triton.jit function for a named target with the installed Triton: the backend, its
# options and their defaults, the compile call and the hooks taot wraps it in (a private cache folder,
# ASCII file names for ptxas, tl.static_print collected, ptxas' -v log), and the tools it bundles.
import contextlib
import functools
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from pathlib import Path

import triton
import triton.compiler
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import get_cache_invalidating_env_vars

from ..spec.targets import AMD_WAVE_SIZE, NVIDIA_WARP_SIZE, is_amd_arch
from . import RELEASE, gluon

# An `arch` below is what one of Triton's backends is made from: an NVIDIA compute capability (int,
# major*10 + minor) or an AMD gfx name (str, "gfx942"); spec.targets.Target.arch gives it.


def gpu_target(arch):
    if is_amd_arch(arch):
        return GPUTarget("hip", arch, AMD_WAVE_SIZE)
    return GPUTarget("cuda", arch, NVIDIA_WARP_SIZE)


@functools.lru_cache(maxsize=None)
def has_amd_backend():
    """Whether this Triton's wheel carries the AMD backend (its pip wheels do)."""
    from triton.backends import backends
    return "amd" in backends


@functools.lru_cache(maxsize=None)
def backend(arch):
    """Triton's backend for an arch (one per arch and process)."""
    return triton.compiler.make_backend(gpu_target(arch))


def backend_hash(arch):
    """What the backend adds to Triton's cache key: ptxas' version and the architecture on NVIDIA; the
    target alone on AMD (its compiler, LLVM, is libtriton's own: Triton's version covers it)."""
    return backend(arch).hash()


def cache_invalidating_env():
    """The environment variables Triton's cache key covers, with their values now."""
    return get_cache_invalidating_env_vars()


# ---- options ----

def option_fields(vendor="nvidia"):
    """The names of the installed Triton's compile options for a vendor's targets (CUDAOptions' or
    HIPOptions' fields); none for AMD when this Triton was built without its AMD backend."""
    if vendor == "amd" and not has_amd_backend():
        return set()
    return set(_options_class(vendor).__dataclass_fields__)


def option_default(name, vendor="nvidia"):
    """The value Triton's JIT compiles with when nothing sets option `name` (for enable_fp_fusion
    from 3.9 on: the knobs', TRITON_DEFAULT_FP_FUSION unless TRITON_FORCE_DISABLE_FP_FUSION)."""
    if name == "enable_fp_fusion" and RELEASE.fp_fusion_default_from_environment:
        return not knobs.language.force_disable_fp_fusion and bool(knobs.language.default_fp_fusion)
    if name not in option_fields(vendor):
        return None
    return _options_class(vendor).__dataclass_fields__[name].default


def parse_options(arch, options):
    """Triton's full option set for `options` (a dict of the options a variant sets) on an arch, as a
    dict; raises what Triton raises for a value it refuses (ValueError, AssertionError)."""
    return backend(arch).parse_options(explicit_options(options)).__dict__


def explicit_options(options):
    """`options` with what Triton would otherwise fill in from the environment written out (3.9+:
    enable_fp_fusion, whose default Triton warns about once per process when left to the knob)."""
    options = dict(options)
    if RELEASE.fp_fusion_default_from_environment and "enable_fp_fusion" not in options:
        options["enable_fp_fusion"] = option_default("enable_fp_fusion")
    return options


def _options_class(vendor):
    if vendor == "amd":
        from triton.backends.amd.compiler import HIPOptions
        return HIPOptions
    from triton.backends.nvidia.compiler import CUDAOptions
    return CUDAOptions


# ---- compiling ----

def compile_source(function, signature, constexprs, attrs, arch, options):
    """triton.compile of a @triton.jit or @gluon.jit function: `signature` maps every parameter to its
    Triton type ("*fp32", "i32", "constexpr", ...; a Gluon kernel's descriptors get their layout:
    gluon.signature), `constexprs` names to values, `attrs` (index,) -> hints. Compiles the source
    Triton's JIT would (gluon.source) in a private cache folder with ASCII file names; returns
    Triton's CompiledKernel."""
    source = gluon.source(function, gluon.signature(function, signature), constexprs, attrs)
    with private_cache(), ascii_source_locations():
        return triton.compile(source, target=gpu_target(arch), options=parse_options(arch, options))


class private_cache:
    """TRITON_CACHE_DIR points at a fresh temporary folder while active; the folder is removed after."""

    def __enter__(self):
        self.folder = tempfile.mkdtemp(prefix="taot-triton-cache-")
        self.previous = os.environ.get("TRITON_CACHE_DIR")
        os.environ["TRITON_CACHE_DIR"] = self.folder
        return self.folder

    def __exit__(self, *exc):
        if self.previous is None:
            os.environ.pop("TRITON_CACHE_DIR", None)
        else:
            os.environ["TRITON_CACHE_DIR"] = self.previous
        shutil.rmtree(self.folder, ignore_errors=True)
        return False


_SAFE_PATH_CHARACTERS = "".join(chr(code) for code in range(32, 127) if chr(code) not in '"\\%')


def ascii_file_name(file_name):
    """A file name with every character outside printable ASCII (and `"`, `\\`, `%`) percent-encoded
    as UTF-8: what ptxas accepts in the PTX's `.file` lines."""
    return urllib.parse.quote(file_name, safe=_SAFE_PATH_CHARACTERS)


@contextlib.contextmanager
def ascii_source_locations():
    """While active, Triton records the kernels' file names ASCII-encoded (ascii_file_name): they
    reach the PTX's `.file` lines, and ptxas refuses a non-ASCII character anywhere in its input.
    Up to 3.7 the code generator asks get_jit_fn_file_line(fn); from 3.8 it reads fn.file_name."""
    if RELEASE.jit_file_line_function:
        from triton.compiler import code_generator
        original = code_generator.get_jit_fn_file_line
        code_generator.get_jit_fn_file_line = lambda fn: (ascii_file_name(original(fn)[0]), original(fn)[1])
        try:
            yield
        finally:
            code_generator.get_jit_fn_file_line = original
        return
    from triton.runtime.jit import JITCallable
    # A data descriptor on the class is read before the instance's own file_name.
    JITCallable.file_name = property(lambda fn: ascii_file_name(fn.__dict__["file_name"]),
                                     lambda fn, value: fn.__dict__.__setitem__("file_name", value))
    try:
        yield
    finally:
        del JITCallable.file_name


class recorded_static_prints:
    """While active, what tl.static_print (and gluon's) prints while Triton compiles is collected in
    `text` instead of reaching stdout."""

    def __enter__(self):
        from triton.compiler.code_generator import CodeGenerator
        from triton.language.core import static_print
        self.table = CodeGenerator.statically_implemented_functions
        self.saved = {}
        self.buffer = io.StringIO()
        functions = [static_print]
        try:
            from triton.experimental.gluon.language import static_print as gluon_static_print
            functions.append(gluon_static_print)
        except ImportError:
            pass
        for function in functions:
            original = self.table.get(function)
            if original is None:
                continue
            self.saved[function] = original
            self.table[function] = self._recording(original)
        return self

    def _recording(self, original):
        buffer = self.buffer

        def recording(generator, node):
            with contextlib.redirect_stdout(buffer):
                return original(generator, node)
        return recording

    @property
    def text(self):
        return self.buffer.getvalue()

    def __exit__(self, *exc):
        self.table.update(self.saved)
        return False


@contextlib.contextmanager
def ptxas_log_printed():
    """While active, Triton print()s ptxas' -v log after each successful ptxas run (knobs.nvidia)."""
    with knobs.nvidia.scope():
        knobs.nvidia.dump_ptxas_log = True
        yield


def jit_function_files(function_text):
    """The files of the @triton.jit functions whose text is `function_text`, among the modules
    imported so far."""
    from triton.runtime.jit import JITFunction
    files = []
    for module in list(sys.modules.values()):
        for value in list(getattr(module, "__dict__", {}).values()):
            if isinstance(value, JITFunction) and value.src == function_text:
                path = Path(value.fn.__code__.co_filename)
                if path not in files:
                    files.append(path)
    return files


# ---- the bundled tools ----

def tool_folder():
    """The folder of the NVIDIA tools this Triton bundles (ptxas, ptxas-blackwell, cuobjdump, nvdisasm)."""
    return Path(triton.__file__).parent / "backends" / "nvidia" / "bin"


def _uses_blackwell_ptxas(capability):
    return RELEASE.blackwell_ptxas_from is not None and capability >= RELEASE.blackwell_ptxas_from


def ptxas_for(capability):
    """The ptxas this Triton runs for a capability: the path TRITON_PTXAS_PATH /
    TRITON_PTXAS_BLACKWELL_PATH names, else the bundled one that release picks."""
    blackwell = _uses_blackwell_ptxas(capability)
    variable = "TRITON_PTXAS_BLACKWELL_PATH" if blackwell else "TRITON_PTXAS_PATH"
    chosen = os.environ.get(variable)
    if chosen:
        return Path(chosen)
    bundled = tool_folder() / ("ptxas-blackwell" if blackwell else "ptxas")
    return bundled if bundled.exists() else tool_folder() / "ptxas"


@functools.lru_cache(maxsize=None)
def ptxas_targets(ptxas):
    """The sm_XX names (without suffix) a ptxas accepts for --gpu-name, from its own --help; None when it
    cannot be run."""
    try:
        text = subprocess.run([str(ptxas), "--help"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    start = text.find("--gpu-name")
    names = re.findall(r"'sm_(\d+)'", text[start:] if start >= 0 else text)
    return frozenset(int(name) for name in names) or None


def buildable_capabilities(capabilities):
    """Those of `capabilities` the ptxas this Triton runs for each can assemble (a capability whose
    ptxas cannot be asked is kept: the compile then says what ptxas said)."""
    kept = []
    for capability in capabilities:
        accepted = ptxas_targets(ptxas_for(capability))
        if accepted is None or capability in accepted:
            kept.append(capability)
    return tuple(kept)


def ptxas_description(capability):
    """ "ptxas 12.8.93 (bundled)" or "ptxas 13.0.88 (TRITON_PTXAS_PATH)" for the ptxas of a capability."""
    ptxas = ptxas_for(capability)
    chosen = "bundled" if ptxas.parent == tool_folder() else \
        ("TRITON_PTXAS_BLACKWELL_PATH" if _uses_blackwell_ptxas(capability) else "TRITON_PTXAS_PATH")
    return f"{ptxas.name} {ptxas_release(ptxas) or '(version unknown)'} ({chosen})"


@functools.lru_cache(maxsize=None)
def ptxas_release(ptxas):
    """ "12.8.93" for a ptxas that says "Cuda compilation tools, release 12.8, V12.8.93"; None if unknown."""
    try:
        text = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"V(\d+\.\d+\.\d+)", text)
    return match.group(1) if match else None
