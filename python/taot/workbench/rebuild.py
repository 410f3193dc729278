# Rebuild a kernel from an edited compile stage (.ttir, .ttgir, .llir, then .ptx and .cubin on NVIDIA,
# .amdgcn and .hsaco on AMD): every later stage recomputed, launch metadata that fits the result, and
# a check that it still takes the parameters of the kernel it replaces. Triton compiles from a .ttir
# or .ttgir path itself; from .llir, .ptx and .amdgcn (which its compile() cannot start from) the
# backend's later stages run as Triton's pipeline runs them (make_ptx, then make_cubin: ptxas; or
# make_amdgcn, then make_hsaco: LLD); an image (.cubin, .hsaco) is taken as it is. What
# the stages after the edited one do not compute is carried from the kernel being replaced, and the
# result says which values were. Triton is reached through triton_api.ir only.
import gzip
import hashlib
import json
import multiprocessing
import os
import re
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

from . import cubin as cubin_reader
from .. import triton_api
from ..triton_api import versions
from ..compile.worker_pool import children_ignore_ctrl_c, end_workers
from ..compile import artifacts
from ..errors import RebuildError, SignatureMismatch
from ..spec.targets import NVIDIA_WARP_SIZE, arch_name, is_amd_arch, lds_refusal, target_of_arch

STAGES = ("ttir", "ttgir", "llir", "ptx", "amdgcn", "cubin", "hsaco")
IMAGE_STAGES = artifacts.IMAGE_STAGES  # binary: NVIDIA's cubin, AMD's code object
TEXT_STAGES = tuple(stage for stage in STAGES if stage not in IMAGE_STAGES)

# Triton's metadata keys that describe the compiled kernel rather than the options it was compiled
# with: what a rebuild computes again, or carries where the stages after the edited one do not.
KERNEL_KEYS = ("name", "num_warps", "num_ctas", "shared", "tmem_size", "global_scratch_size",
               "global_scratch_align", "profile_scratch_size", "profile_scratch_align", "tensordesc_meta")

# Options read from the replaced kernel's metadata but not passed on: the libdevice path and arch
# are those of the machine that compiled it (Triton fills in this one's), ir_override names a file.
_OPTIONS_NOT_CARRIED = ("extern_libs", "arch", "ir_override")

ERROR_LINES = 20


@dataclass
class Reference:
    """The compiled kernel a rebuild replaces: what it must match and what it carries over."""
    label: str            # for messages: "variant V for sm_90", "Triton cache entry KEY"
    arch: object          # what it was compiled for: the compute capability (90) or the gfx name
    metadata: dict        # Triton's metadata of the kernel in use now (options and carried values)
    cubin: bytes          # the compiled image (cubin or AMD code object): its name and parameter sizes
    stages: dict          # stage -> text of the compiled IR stages at hand (any may be missing)
    parameter_names: tuple = ()  # the kernel's parameter names, for messages (scratch pointers included)


@dataclass
class Rebuilt:
    """A kernel rebuilt from an edited stage."""
    path: str             # the edited file, as given
    stage: str            # the stage it holds: one of STAGES
    data: bytes           # its content (decompressed when it was .gz)
    sha256: str           # of `data`
    stages: dict          # stage -> text: the edited stage and each IR stage recomputed after it
    cubin: bytes
    metadata: dict        # Triton's metadata for the rebuilt kernel (JSON-safe)
    carried: tuple        # KERNEL_KEYS taken from the replaced kernel's metadata, not computed
    mlir_signature: tuple = None  # (name, parameter types) when rebuilt from .ttir/.ttgir
    ptxas: dict = None    # what ptxas -v reported (ptxas_report.parse), None when ptxas did not run
    seconds: float = 0.0
    output: str = ""      # what Triton and ptxas printed while rebuilding
    image_stage: str = "cubin"  # what `cubin` holds: one of IMAGE_STAGES


# ---- the edited file ----

def stage_of(path):
    """The stage a file holds, from its suffix (`k.ttgir`, `k.ttgir.gz`); RebuildError otherwise."""
    suffixes = Path(path).suffixes
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    stage = suffixes[-1][1:] if suffixes else ""
    if stage not in STAGES:
        raise RebuildError(f"{path}: expected a .ttir, .ttgir, .llir, .ptx, .cubin, .amdgcn or .hsaco file (or one of "
                           f"those gzip-compressed, .gz), got {'suffix ' + repr(''.join(Path(path).suffixes)) if suffixes else 'no suffix'}")
    return stage


def read_edited(path):
    """(stage, content bytes) of an edited file; .gz files are decompressed."""
    stage = stage_of(path)
    data = Path(path).read_bytes()
    if Path(path).suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise RebuildError(f"{path}: not a readable gzip file ({error})") from None
    if stage not in IMAGE_STAGES:
        try:
            text = data.decode()
        except UnicodeDecodeError:
            raise RebuildError(f"{path}: expected {stage} text (UTF-8), got binary data") from None
        problem = kernel_problem(stage, text)
        if problem:
            raise RebuildError(f"{path}: {problem}")
    return stage, data


def kernel_problem(stage, text):
    """Why `text`, a `stage` file's content, holds no kernel (empty; or, for MLIR stages, whose parser
    takes a module without one, no tt.func), or None. A damaged .llir or .ptx is left to its compiler,
    whose diagnostics say more."""
    if not text.strip():
        return f"the file is empty (expected a kernel's {stage or 'IR'})"
    if stage in ("ttir", "ttgir") and not re.search(_NAME_PATTERNS[stage], text):
        return f"it defines no kernel (expected {_KERNEL_SHAPES[stage]} in a {stage} file)"
    return None


def target_named_in(path):
    """The target an edited file was made for, as it says itself (a .ttgir's ttg.target, a .ptx's
    .target, an .amdgcn's .amdgcn_target, an .llir's target-cpu, an image's ELF), as "sm_90" or
    "gfx942"; None when it does not say."""
    stage, data = read_edited(path)
    if stage in IMAGE_STAGES:
        try:
            image = cubin_reader.read(data)
        except cubin_reader.CubinError:
            return None
        return image.gfx or f"sm_{image.sm}"
    text = data.decode()
    for pattern in _TARGET_PATTERNS.get(stage, ()):
        match = re.search(pattern, text, re.MULTILINE)
        if match:
            return match.group(1) if match.group(1).startswith("gfx") else f"sm_{match.group(1)}"
    return None


# Where each stage names its target: the capability's digits, or the gfx name.
_TARGET_PATTERNS = {
    "ttgir": (r'ttg\.target\s*=\s*"cuda:(\d+)"', r'ttg\.target\s*=\s*"hip:(gfx\w+)"'),
    "ptx": (r"^\s*\.target\s+sm_(\d+)",),
    "llir": (r'"target-cpu"="sm_(\d+)', r'"target-cpu"="(gfx\w+)"'),
    "amdgcn": (r'\.amdgcn_target\s+"[^"]*?\b(gfx[0-9a-z]+)',),  # "amdgcn-amd-amdhsa--gfx942", 3.9: "...-unknown-gfx942"
}


# What defines a kernel in each stage's text, for messages.
_KERNEL_SHAPES = {"ttir": "a tt.func public @name", "ttgir": "a tt.func public @name",
                  "llir": "a ptx_kernel or amdgpu_kernel function", "ptx": "a .visible .entry",
                  "amdgcn": "an .amdhsa_kernel"}

_NAME_PATTERNS = {
    "ttir": r"tt\.func\s+public\s+@([\w$.]+)",
    "ttgir": r"tt\.func\s+public\s+@([\w$.]+)",
    "llir": r"define\s+(?:[\w()]+\s+)*?(?:ptx_kernel|amdgpu_kernel)\s+void\s+@([\w$.]+)\s*\(",
    "ptx": r"\.visible\s+\.entry\s+([\w$]+)\s*\(",
    "amdgcn": r"^\s*\.amdhsa_kernel\s+([\w$.]+)",
}


def kernel_name(path):
    """The name of the kernel an edited file defines (the first public function or entry), or None."""
    stage, data = read_edited(path)
    if stage in IMAGE_STAGES:
        try:
            kernels = cubin_reader.read(data).kernels
        except cubin_reader.CubinError:
            return None
        return next(iter(kernels)) if len(kernels) == 1 else None
    match = re.search(_NAME_PATTERNS[stage], data.decode(), re.MULTILINE)
    return match.group(1) if match else None


# ---- rebuilding ----

def rebuild(path, reference):
    """Rebuild the kernel of the edited file at `path` to replace `reference`. Runs in a child
    process, because a malformed LLVM IR file aborts the LLVM that parses it; what the compile
    printed comes back in `output`. Raises RebuildError naming the file and what went wrong, before
    any work when the kernel it replaces was compiled by another Triton release than the one taot runs
    (its IR is that release's, and its image takes that release's launch ABI)."""
    built_by = reference.metadata.get("triton_version")
    if built_by and versions.release_of(str(built_by)) is not triton_api.RELEASE:
        raise RebuildError(f"{path}: {reference.label} was compiled by Triton {built_by}, and taot runs Triton "
                           f"{triton_api.VERSION}: a rebuild must use the release that compiled it (set TAOT_PYTHON to "
                           f"a Python with Triton {built_by}), or build the library again with this one")
    stage, data = read_edited(path)
    # (ignore_cleanup_errors: a ptxas the ended child started may still write there after a Ctrl-C)
    with tempfile.TemporaryDirectory(prefix="taot-from-ir-", ignore_cleanup_errors=True) as scratch:
        log = Path(scratch) / "output.log"
        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        try:
            with children_ignore_ctrl_c():  # the child starts in submit; Ctrl-C is the parent's to take
                future = pool.submit(_rebuild_in_child, str(path), stage, data, reference, scratch, str(log))
            outcome, value = future.result()
        except BrokenProcessPool:
            printed = _read_log(log)
            raise RebuildError(f"{path}: rebuilding from its {stage} crashed the compiler"
                               + (f":\n{_diagnostics(printed)}" if printed.strip() else "")) from None
        except BaseException:  # Ctrl-C: end the child wherever it is, never wait for it
            end_workers(pool)
            raise
        finally:
            pool.shutdown(wait=True)
    if outcome == "error":
        raise RebuildError(f"{path}: rebuilding from its {stage} failed:\n{value}")
    return value


def _read_log(log):
    try:
        return log.read_text(errors="replace")
    except OSError:
        return ""


def _diagnostics(text):
    from ..compile.jobs import diagnostic_lines
    lines = diagnostic_lines(text)
    if len(lines) > ERROR_LINES:
        lines = lines[:ERROR_LINES] + [f"... ({len(lines) - ERROR_LINES} more lines)"]
    return "\n".join(lines)


def _rebuild_in_child(path, stage, data, reference, scratch, log):
    """("ok", Rebuilt) or ("error", text). Descriptors 1 and 2 go to `log` meanwhile, so that what
    a crashing compiler printed can be shown by the parent."""
    from ..compile import ptxas_report
    from ..compile.jobs import error_text
    with open(log, "wb") as stream:
        os.dup2(stream.fileno(), 1)
        os.dup2(stream.fileno(), 2)
    start = time.perf_counter()
    try:
        with ptxas_report.recording() as ptxas_log:
            rebuilt = _rebuild(path, stage, data, reference, Path(scratch))
    except RebuildError as error:
        return "error", str(error)
    except Exception as error:  # Triton's and ptxas' errors are the user's to read
        return "error", error_text(error, None, _read_log(Path(log)))
    rebuilt.seconds = time.perf_counter() - start
    rebuilt.ptxas = ptxas_report.parse(ptxas_log.text, rebuilt.metadata["name"]) if stage not in IMAGE_STAGES else None
    rebuilt.output = _read_log(Path(log))
    return "ok", rebuilt


def _rebuild(path, stage, data, reference, scratch):
    from ..compile.jobs import json_safe
    from ..triton_api import ir

    arch = reference.arch
    amd = is_amd_arch(arch)
    image_stage = target_of_arch(arch).image_stage
    metadata = dict(reference.metadata)
    mlir_signature = None
    if stage in ("ttir", "ttgir"):
        made_for = re.search(r'ttg\.target\s*=\s*"(cuda|hip):(\w+)"', data.decode())
        if made_for and made_for.group(2) != str(arch):
            raise RebuildError(f"{path}: its layouts were made for {made_for.group(1)}:{made_for.group(2)} (ttg.target), "
                               f"and {reference.label} is compiled for {arch_name(arch)}")
        compiled_path = _plain_copy(path, stage, data, scratch)
        function = ir.read_function(compiled_path, arch)
        mlir_signature = (function.name, function.parameter_types)
        later, cubin, metadata = ir.compile_file(compiled_path, arch, carried_options(reference.metadata, arch))
        stages = {name: later[name] for name in TEXT_STAGES if name in later}
        if stage == "ttgir":  # Triton's make_ttgir, skipped here, is what records it
            metadata["tensordesc_meta"] = function.tensordesc_meta
        carried = ()
    elif stage in IMAGE_STAGES:
        if stage != image_stage:
            raise RebuildError(f"{path}: a .{stage} cannot replace {reference.label}, whose image is a .{image_stage}")
        stages, cubin = {}, data
        carried = _from_cubin(path, cubin, metadata)
    elif amd:
        if stage == "ptx":
            raise RebuildError(f"{path}: PTX is NVIDIA's; {reference.label} is compiled for {arch}")
        text = data.decode()
        options = carried_options(reference.metadata, arch)
        stages = {stage: text}
        if stage == "llir":
            text = stages["amdgcn"] = ir.llir_to_amdgcn(text, metadata, arch, options)
        cubin = ir.amdgcn_to_hsaco(text, metadata, arch, options)
        metadata["name"] = re.search(_NAME_PATTERNS["amdgcn"], text, re.MULTILINE).group(1)
        carried = tuple(key for key in KERNEL_KEYS if key != "name" and key in metadata)
    else:
        if stage == "amdgcn":
            raise RebuildError(f"{path}: AMDGCN is AMD's; {reference.label} is compiled for {arch_name(arch)}")
        capability = arch
        text = data.decode()
        options = carried_options(reference.metadata, arch)
        if stage == "llir":
            ptx = ir.llir_to_ptx(text, metadata, capability, options)
            stages = {"llir": text, "ptx": ptx}
        else:
            ptx = text
            stages = {"ptx": ptx}
        cubin = ir.ptx_to_cubin(ptx, metadata, capability, options)
        metadata["name"] = _ptx_entry(path, ptx)[0]
        carried = _carry_warps(path, metadata, _required_threads(ptx), "its .reqntid")
    if stage in ("ttir", "ttgir"):
        stages[stage] = data.decode()
    too_much = lds_refusal(arch, metadata.get("shared", 0))
    if too_much:
        raise RebuildError(f"{path}: {too_much}")
    return Rebuilt(path=path, stage=stage, data=data, sha256=hashlib.sha256(data).hexdigest(), stages=stages,
                   cubin=cubin, metadata=json_safe(metadata), carried=carried, mlir_signature=mlir_signature,
                   image_stage=image_stage)


def carried_options(metadata, arch):
    """Triton's options as the replaced kernel was compiled with them for `arch`, read from its
    metadata (those the installed Triton has: a kernel compiled by another release may name others)."""
    from ..triton_api.compiler import option_fields
    fields = option_fields(target_of_arch(arch).vendor)
    options = {}
    for key, value in metadata.items():
        if key in fields and key not in _OPTIONS_NOT_CARRIED and value is not None:
            options[key] = tuple(value) if isinstance(value, list) else value
    return options


def _plain_copy(path, stage, data, scratch):
    """A path Triton can compile: the file itself, or its decompressed copy under the same name."""
    if Path(path).suffix != ".gz":
        return str(path)
    copy = scratch / Path(path).with_suffix("").name
    copy.write_bytes(data)
    return str(copy)


def _from_cubin(path, data, metadata):
    """Name and thread count from the cubin itself; everything else carried."""
    try:
        kernels = cubin_reader.read(data).kernels
    except cubin_reader.CubinError as error:
        raise RebuildError(f"{path}: not a cubin this reader understands: {error}") from None
    if len(kernels) == 1:
        kernel = next(iter(kernels.values()))
    elif metadata.get("name") in kernels:
        kernel = kernels[metadata["name"]]
    else:
        raise RebuildError(f"{path}: expected one kernel (or one named {metadata.get('name')}), got "
                           f"{', '.join(sorted(kernels)) or 'none'}")
    metadata["name"] = kernel.name
    return _carry_warps(path, metadata, kernel.required_threads, "its REQNTID")


def _carry_warps(path, metadata, threads, where):
    """Set num_warps from the thread count the code requires, when it requires one; returns the
    kernel keys carried from the replaced kernel."""
    carried = [key for key in KERNEL_KEYS if key != "name" and key in metadata]
    if threads:
        count = threads[0] * threads[1] * threads[2]
        if count % NVIDIA_WARP_SIZE:
            raise RebuildError(f"{path}: {where} asks for {count} threads per block, not a whole number of "
                               f"{NVIDIA_WARP_SIZE}-thread warps")
        metadata["num_warps"] = count // NVIDIA_WARP_SIZE
        carried.remove("num_warps")
    return tuple(carried)


_REQNTID = re.compile(r"^\s*\.reqntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?", re.MULTILINE)


def _required_threads(ptx):
    match = _REQNTID.search(ptx)
    if not match:
        return ()
    return tuple(int(value) if value else 1 for value in match.groups())


# ---- signatures ----

_PTX_ENTRY = re.compile(r"\.visible\s+\.entry\s+([\w$]+)\s*\(([^)]*)\)")


def _ptx_entry(path, ptx):
    """(name, parameter declarations) of a PTX text's one kernel entry: each declaration without
    `.param` and the parameter's name ('.u64 .ptr .global .align 1', '.align 64 .b8 [128]')."""
    entries = _PTX_ENTRY.findall(ptx)
    if len(entries) != 1:
        raise RebuildError(f"{path}: expected one .visible .entry in the PTX, got {len(entries)}")
    name, parameters = entries[0]
    declarations = []
    for parameter in filter(None, (part.strip() for part in parameters.split(","))):
        text = re.sub(r"^\.param\s+", "", parameter)
        text = re.sub(r"\s*[\w$]+(\s*\[\d+\])?$", lambda match: match.group(1) or "", text)
        declarations.append(" ".join(text.split()))
    return name, tuple(declarations)


def check_signature(rebuilt, reference):
    """Raise SignatureMismatch when the rebuilt kernel's name or parameters differ from the
    reference's: the MLIR function types (rebuilt from .ttir/.ttgir, when the reference kept its
    TTIR), the PTX parameters (when both have PTX), and always the cubin's kernel name, parameter
    sizes and SM."""
    expected_name = reference.metadata.get("name")
    if rebuilt.metadata.get("name") != expected_name:
        _mismatch(rebuilt, reference, "its kernel is named", rebuilt.metadata.get("name"), expected_name,
                  "the library and the JIT look the kernel up by name")
    if rebuilt.mlir_signature is not None:
        expected = _reference_mlir_signature(reference)
        if expected is not None and rebuilt.mlir_signature[1] != expected[1]:
            # a tt.func's parameters are the kernel's own: the two scratch pointers come later (LLVM IR on)
            _mismatch(rebuilt, reference, "its function takes",
                      _call(rebuilt.mlir_signature[0], rebuilt.mlir_signature[1]),
                      _call(*expected, reference.parameter_names[:len(expected[1])]), "Triton parameter types")
        _check_divisibility(rebuilt, reference)
    if "ptx" in rebuilt.stages and "ptx" in reference.stages:
        got = _ptx_entry(rebuilt.path, rebuilt.stages["ptx"])[1]
        expected = _ptx_entry(reference.label, reference.stages["ptx"])[1]
        if got != expected:
            _mismatch(rebuilt, reference, "its kernel takes", _call(expected_name, got),
                      _call(expected_name, expected, reference.parameter_names), "PTX parameters")
    ours, theirs = _cubin_kernel(rebuilt.path, rebuilt.cubin, rebuilt.metadata.get("name")), \
        _cubin_kernel(reference.label, reference.cubin, expected_name)
    if ours[0] != theirs[0]:
        _mismatch(rebuilt, reference, f"its {rebuilt.image_stage} is for", arch_name(ours[0]), arch_name(theirs[0]),
                  "the architecture")
    if ours[1].parameter_sizes != theirs[1].parameter_sizes:
        sizes = lambda kernel: tuple(f"{size} bytes" for size in kernel.parameter_sizes)  # noqa: E731
        _mismatch(rebuilt, reference, "its kernel takes", _call(expected_name, sizes(ours[1])),
                  _call(expected_name, sizes(theirs[1]), reference.parameter_names),
                  "cubin parameter sizes" if rebuilt.image_stage == "cubin" else "image parameter sizes")


def _check_divisibility(rebuilt, reference):
    """An edited .ttir/.ttgir may not assume more of a parameter (tt.divisibility) than the
    reference's TTIR does: the library or the JIT would pass values that break the assumption."""
    from .triton_cache import CacheProblem, parse_parameters
    stage = next((stage for stage in ("ttir", "ttgir") if stage in reference.stages), None)
    if stage is None:
        return
    name = rebuilt.mlir_signature[0]
    try:
        edited = parse_parameters(rebuilt.data.decode(), name)
        compiled = parse_parameters(reference.stages[stage], name)
    except CacheProblem:  # parameters parse_parameters does not read (descriptors): the types were checked
        return
    for ours, theirs in zip(edited, compiled):
        if ours.divisibility and (not theirs.divisibility or theirs.divisibility % ours.divisibility):
            promised = f"tt.divisibility = {theirs.divisibility}" if theirs.divisibility else "no tt.divisibility"
            raise SignatureMismatch(
                f"{rebuilt.path} does not fit {reference.label}: it assumes parameter {ours.name} is divisible by "
                f"{ours.divisibility} (tt.divisibility = {ours.divisibility}), but the kernel it replaces has "
                f"{promised}, so calls may pass values that are not")


def _reference_mlir_signature(reference):
    stage = next((stage for stage in ("ttir", "ttgir") if stage in reference.stages), None)
    if stage is None:
        return None
    from ..triton_api import ir
    with tempfile.TemporaryDirectory(prefix="taot-from-ir-") as scratch:
        path = Path(scratch) / f"reference.{stage}"
        path.write_text(reference.stages[stage])
        function = ir.read_function(path, reference.arch)
    return function.name, function.parameter_types


def _cubin_kernel(label, data, name):
    try:
        cubin = cubin_reader.read(data)
    except cubin_reader.CubinError as error:
        raise RebuildError(f"{label}: its cubin cannot be read: {error}") from None
    kernel = cubin.kernels.get(name)
    if kernel is None:
        raise SignatureMismatch(f"{label}: its image has no kernel named {name} (it has "
                                f"{', '.join(sorted(cubin.kernels)) or 'none'})")
    return cubin.gfx or cubin.sm, kernel


def _call(name, parameters, names=()):
    if names and len(names) == len(parameters):
        parameters = [f"{parameter} {label}" for parameter, label in zip(parameters, names)]
    return f"{name}({', '.join(parameters)})"


def _mismatch(rebuilt, reference, what, got, expected, aspect):
    raise SignatureMismatch(f"{rebuilt.path} does not fit {reference.label} ({aspect}): {what} {got}, "
                            f"expected {expected}")


# ---- describing a result ----

def changes(rebuilt, reference):
    """'key old -> new' for each kernel key whose value the rebuild changed."""
    described = []
    for key in KERNEL_KEYS:
        old, new = reference.metadata.get(key), rebuilt.metadata.get(key)
        if old != new:
            described.append(f"{key} {json.dumps(old)} -> {json.dumps(new)}")
    return described
