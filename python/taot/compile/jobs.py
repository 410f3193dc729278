# One compile job = (variant, target): its inputs and the Triton call (its artifact folder: artifacts.py).
import dataclasses
import hashlib
import os
import sys
import tempfile
import time
from pathlib import Path

from .. import triton_api
from ..triton_api import compiler, gluon
from . import artifacts, ptxas_report
from ..spec import source as kernel_source
from ..spec.dtypes import DTYPES, TORCH_NAMES, triton_dtype
from ..spec.targets import lds_refusal
from ..fsutil import canonical_json

INPUTS_FORMAT = 1                    # bump when the inputs' meaning changes (the layout: artifacts.RECORD_FORMAT)
ERROR_LINES = 20


@dataclasses.dataclass(frozen=True)
class Job:
    """Everything a pool worker needs to compile one variant for one target (picklable)."""
    variant_id: str
    target: str            # target name as in the spec, e.g. "sm_90a", "gfx942"
    arch: object           # what Triton's backend is made from: the capability (int) or the gfx name
    source: str            # absolute path of the kernel's Python file
    function: str
    inputs: dict           # what inputs.json records: target_inputs(variant_inputs(...), ...)
    artifact_dir: str      # absolute path of artifacts/<variant id>/<target>
    library: str           # the library that wants it (recorded as one of the folder's users)
    ir: str                # how to keep the IR stages: one of ir_files.MODES
    module: str = None     # the installed module to import by name instead (spec `function = "module:function"`),
    search: str = None     # with the spec's folder first on sys.path while it imports
    device: object = None  # spec.device_facts.DeviceFacts the import sees (the target's)


@dataclasses.dataclass(frozen=True)
class Outcome:
    variant_id: str
    target: str
    seconds: float
    error: str = None      # Triton's message (first ERROR_LINES lines) when the compile failed
    static_print: str = ""  # what the kernel's tl.static_print calls printed while it compiled


def variant_inputs(kernel, variant):
    """The target-independent compile inputs of a variant (also what the manifest's variant hash covers)."""
    signature, constexprs, attrs = {}, {}, {}
    config = variant.config
    bindings = {binding.name: binding for binding in variant.bindings}
    for arg in kernel.parameters():
        binding = bindings.get(arg.name)
        if binding is None:
            signature[arg.name] = "constexpr"
            constexprs[arg.name] = arg.rules.triton_constexpr(config[arg.name])
        elif binding.none:  # a pointer passed as None: Triton compiles it as a constexpr None
            signature[arg.name] = "constexpr"
            constexprs[arg.name] = None
        elif binding.rules.has_hint and binding.hint == 1:
            signature[arg.name] = "constexpr"
            constexprs[arg.name] = 1
        else:
            signature[arg.name] = binding.triton_type
            if binding.align == 16 or binding.hint == 16:
                attrs[str(arg.index)] = [["tt.divisibility", 16]]
    options = variant_options(kernel, variant)
    return {"format": INPUTS_FORMAT, "triton_version": triton_api.VERSION, "function": kernel.function,
            "cache_key": kernel.cache_key, "signature": signature, "constexprs": constexprs, "attrs": attrs,
            "options": options}


def variant_options(kernel, variant):
    """The Triton options a variant sets: its option fields, including a constexpr named like an
    option, which gets the value too (as with Triton's JIT)."""
    return {field.name: variant.config[field.name] for field in kernel.config if field.is_option}


def variant_hash(inputs):
    return hashlib.sha256(canonical_json(inputs).encode()).hexdigest()


def target_inputs(inputs, target, triton_options, backend_hash, env):
    """Add what depends on the target: Triton's parsed options and the backend (ptxas version), as one
    digest with the ptxas release beside it for readers, and the cache-relevant env vars."""
    toolchain = canonical_json({"triton_options": json_safe(triton_options), "backend": backend_hash})
    release = next((line.strip() for line in backend_hash.splitlines() if "release" in line), backend_hash[:80]) \
        if target.vendor == "nvidia" else None  # AMD: no ptxas
    return dict(inputs, target={"name": target.name, "capability": target.capability},
                toolchain=hashlib.sha256(toolchain.encode()).hexdigest(), ptxas=release, env=json_safe(env))


def json_safe(value):
    """Tuples become lists, dataclasses (GPUTarget) and namedtuples dicts, other objects their str()."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: json_safe(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if hasattr(value, "_asdict"):
        return {key: json_safe(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {str(key): json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


# ---- compiling ----

def run_job(job):
    """Compile one job and write its artifacts; never raises for a kernel's compile error."""
    start = time.perf_counter()
    folder = Path(job.artifact_dir)
    folder.mkdir(parents=True, exist_ok=True)
    libraries = set(artifacts.clear(folder, job.inputs)) | {job.library}
    failure = function = None
    with captured_output() as captured, ptxas_report.recording() as ptxas_log, \
            compiler.recorded_static_prints() as static_prints:
        try:
            function = kernel_source.load_function(job.source, job.function, module=job.module, facts=job.device,
                                           search=job.search)
            compiled = _compile(job, function)
        except Exception as error:  # Triton's errors are the user's to read, not a crash of taot
            failure = error
    if failure is not None:
        text = error_text(failure, job.source, captured.text)
        text += _dtype_string_hint(failure, job.inputs["constexprs"])
        text += gluon.compile_error_hint(function, text)
        return Outcome(job.variant_id, job.target, time.perf_counter() - start, text, static_prints.text)
    captured.replay()
    too_much = lds_refusal(job.arch, compiled.metadata.shared)
    if too_much:
        return Outcome(job.variant_id, job.target, time.perf_counter() - start, too_much, static_prints.text)
    artifacts.write(folder, job.function, compiled.asm, json_safe(compiled.metadata._asdict()), job.inputs,
                    libraries, job.ir, ptxas=ptxas_report.parse(ptxas_log.text, compiled.metadata.name))
    return Outcome(job.variant_id, job.target, time.perf_counter() - start, static_print=static_prints.text)


def _compile(job, function):
    if function.cache_key != job.inputs["cache_key"]:
        raise RuntimeError(f"{job.source} changed while taot was compiling it; run taot again")
    inputs = job.inputs
    constexprs = {name: _constexpr_value(value) for name, value in inputs["constexprs"].items()}
    attrs = {(int(index),): value for index, value in inputs["attrs"].items()}
    return compiler.compile_source(function, inputs["signature"], constexprs, attrs, job.arch,
                                   inputs["options"])


def _constexpr_value(value):
    """Constexprs as recorded in inputs.json: dtype-valued ones are {"dtype": name}."""
    return triton_dtype(value["dtype"]) if isinstance(value, dict) else value


def _dtype_string_hint(error, constexprs):
    """A line for a compile that failed on a str where Triton wanted a type: the constexprs given a
    dtype's name as a string (`OUT_DTYPE = { constexpr = "fp16" }`), and the spec line meant."""
    if "'str' object has no attribute" not in str(error):
        return ""
    names = {name: name for name in DTYPES} | {torch: name for name, torch in TORCH_NAMES.items()}
    named = [(arg, value) for arg, value in constexprs.items() if isinstance(value, str) and value in names]
    if not named:
        return ""
    given = ", ".join(f'{arg} = {{ constexpr = "{value}" }}' for arg, value in named)
    meant = ", ".join(f'{arg} = {{ dtype = "{names[value]}" }}' for arg, value in named)
    return f"\nhint: the spec gives {given}, so the kernel gets a str, not a Triton dtype; for the dtype write {meant}"


def error_text(error, source=None, diagnostics=""):
    """The first ERROR_LINES lines of what Triton said: the exception (a CompilationError's
    "at LINE:COL:" made "file.py:LINE:COL:"), then the compiler's own diagnostics without IR dumps."""
    text = str(error).strip() or type(error).__name__
    name = type(error).__name__
    if name == "CompilationError":
        text = "\n".join(_locate_in_files(link, str(link).strip(), source) for link in _compilation_chain(error))
    elif not text.startswith(name):
        text = f"{name}: {text}"
    lines = text.splitlines()
    if len(lines) > ERROR_LINES:  # a long chain of helpers: the message is at its end
        kept_end = 5
        head = ERROR_LINES - kept_end - 1
        lines = lines[:head] + [f"... ({len(lines) - head - kept_end} lines left out)"] + lines[-kept_end:]
    lines += diagnostic_lines(diagnostics)
    if len(lines) > ERROR_LINES:
        lines = lines[:ERROR_LINES] + [f"... ({len(lines) - ERROR_LINES} more lines)"]
    return "\n".join(lines)


def _compilation_chain(error):
    """The CompilationErrors from the kernel's down: an error in a @triton.jit helper is a
    CompilationError (at the call) caused by the helper's own (at the line that failed, with the
    message)."""
    chain = []
    while type(error).__name__ == "CompilationError" and error not in chain:
        chain.append(error)
        error = error.__cause__
    return chain


def _locate_in_files(error, text, source):
    """`text` with its "at LINE:COL:" made "file.py:LINE:COL:": the function is looked for in the
    kernel's file, then in the files of the @triton.jit functions with its text (a helper's module)."""
    node = getattr(error, "node", None)
    line = getattr(node, "lineno", None)
    if source is None or line is None or not text.startswith(f"at {line}:"):
        return text
    function_text = getattr(error, "src", None) or ""
    for candidate in [Path(source)] + compiler.jit_function_files(function_text):
        try:
            file_text = candidate.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        place = _function_place(file_text, function_text)
        if place is not None:
            first_line, indent = place
            _, _, rest = text.partition("\n")
            return f"{candidate.name}:{first_line + line - 1}:{node.col_offset + indent}:\n{rest}"
    return text


def _function_place(file_text, function_text):
    """(line of its `def`, counted from 1; its indent) of `function_text` in the file, or None.
    Triton keeps a function's text dedented: a kernel defined in a class or a function is found
    by its lines with the indent put back."""
    wanted = function_text.splitlines()
    if not wanted:
        return None
    lines = file_text.splitlines()
    for index, line in enumerate(lines):
        indent = len(line) - len(line.lstrip(" \t"))
        if line[indent:] != wanted[0] or index + len(wanted) > len(lines):
            continue
        prefix = line[:indent]
        if all(lines[index + k] == prefix + text if text.strip() else not lines[index + k].strip()
               for k, text in enumerate(wanted)):
            return index + 1, indent
    return None


_IR_DUMP_STARTS = ("#", "module", "}", "{-#", "#-}")
# Triton prints a failed ptxas' whole input between two rules of "=" (its message has ptxas' own).
_REPRODUCER_RULE = "=" * 64
_REPRODUCER_END = "please share the reproducer above with Triton project."


def diagnostic_lines(text):
    """MLIR/LLVM messages from captured output, without the IR dumps around them, each line once."""
    kept = []
    in_reproducer = False
    for line in text.splitlines():
        if line == _REPRODUCER_RULE and not in_reproducer:
            in_reproducer = True
        if in_reproducer:
            in_reproducer = line != _REPRODUCER_END
            continue
        if not line.strip() or line[0].isspace() or line.startswith(_IR_DUMP_STARTS) or line in kept:
            continue
        kept.append(line)
    return kept


class captured_output:
    """Collects what is written to file descriptors 1 and 2 (Python's prints and native code's: MLIR,
    LLVM, ptxas, Triton's dumps of a failed ptxas' input) while active."""

    def __enter__(self):
        sys.stdout.flush()
        sys.stderr.flush()
        self.file = tempfile.TemporaryFile(mode="w+b")
        self.saved = [os.dup(1), os.dup(2)]
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        self.text = ""
        return self

    def __exit__(self, *exc):
        sys.stdout.flush()
        sys.stderr.flush()
        for descriptor, saved in zip((1, 2), self.saved):
            os.dup2(saved, descriptor)
            os.close(saved)
        self.file.seek(0)
        self.text = self.file.read().decode(errors="replace")
        self.file.close()
        return False

    def replay(self):
        """Pass the collected text on to the real stderr (after a successful compile)."""
        if self.text:
            os.write(2, self.text.encode())
