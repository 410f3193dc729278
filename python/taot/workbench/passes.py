# Triton's own pass pipelines, one pass at a time. A pipeline is named by the stage it produces (ttir,
# ttgir, llir). Its passes are read from the backend's stage function itself (make_ttir, make_ttgir,
# make_llir, as the backend's add_stages hands them to triton.compile; triton_api.ir records the calls
# that add them) and are then replayed on real pass managers, one pass each, so that the module can be
# printed, counted and timed after every pass.
import dataclasses
import difflib
import gzip
import json
import lzma
import re
import tempfile
import time
from pathlib import Path

from .. import triton_api
from ..compile import ir_files
from ..errors import PassFailed, TaotError
from ..compile.jobs import captured_output, diagnostic_lines, json_safe
from ..spec.targets import Target, parse_target, target_of_arch
from ..triton_api import compiler as triton_compiler, options as triton_options
from ..triton_api import ir


@dataclasses.dataclass(frozen=True)
class Pipeline:
    name: str          # the stage it produces, as the backend's add_stages names it
    source_stage: str  # the stage of the IR it starts from
    extension: str     # of the module's text between its passes ("mlir": MLIR's LLVM dialect)
    translates: bool   # ends with the rest of the stage function: the translation to LLVM IR text


PIPELINES = {pipeline.name: pipeline for pipeline in (
    Pipeline("ttir", "ttir", "ttir", False),
    Pipeline("ttgir", "ttir", "ttgir", False),
    Pipeline("llir", "ttgir", "mlir", True),
)}
DEFAULT_PIPELINE = {"ttir": "ttgir", "ttgir": "llir"}  # input stage -> the pipeline that follows it
TRANSLATION = "translate-to-llvm-ir"                   # the llir pipeline's last step
TRANSLATION_EXTENSION = "llir"
DEFAULT_TARGET = "sm_90"
DEFAULT_OPTION = "Triton's default"

# Options a .ttgir fixes through its module attributes, and those passes tunes (triton.Config's).
_IR_OPTION_ATTRIBUTES = triton_options.IR_OPTION_ATTRIBUTES
TUNABLE_OPTIONS = triton_options.CONFIG_OPTIONS
# Options a compile's metadata holds that describe the machine that compiled it rather than the kernel
# (the target is read on its own; library paths and override files are the compiling machine's).
_MACHINE_OPTIONS = ("arch", "extern_libs", "ir_override")
_COMPRESSIONS = (".gz", ".xz")


def plain_name(path):
    """A stage file's name without its compression suffix: k.ttir.gz -> k.ttir."""
    name = Path(path).name
    for suffix in _COMPRESSIONS:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def input_stage(path):
    """The stage an IR file holds, from its name (x.ttir, x.ttgir, either .gz or .xz too); None when
    no pipeline starts from it."""
    stage = Path(plain_name(path)).suffix[1:]
    return stage if stage in DEFAULT_PIPELINE else None


# ---- what a pipeline runs with ----

@dataclasses.dataclass(frozen=True)
class Setting:
    value: object
    source: str  # where the value came from: "the IR", a flag ("--num-warps"), a metadata file's name,
                 # or DEFAULT_OPTION (None then: Triton's default applies)


@dataclasses.dataclass(frozen=True)
class Settings:
    """The target and the Triton options a pipeline runs with, each with where it came from."""
    target: Target
    target_source: str
    options: dict  # option name -> Setting: the tunable options and whatever a metadata file gave

    def values(self):
        return {name: setting.value for name, setting in self.options.items() if setting.value is not None}


def compile_metadata(ir_path):
    """(file, dict) of the compile metadata beside an IR file: a taot artifact folder's metadata.json,
    or a Triton cache entry's <function>.json; (None, {}) when there is none. TaotError when such a
    file is there but is not a JSON object."""
    folder = Path(ir_path).parent
    for candidate, required in ((folder / "metadata.json", None),
                                (folder / (Path(plain_name(ir_path)).stem + ".json"), "triton_version")):
        if not candidate.is_file():
            continue
        try:
            metadata = json.loads(candidate.read_text())
        except ValueError as error:
            raise TaotError(f"{candidate}: expected the compile's metadata as JSON, got: {error}") from None
        if not isinstance(metadata, dict):
            raise TaotError(f"{candidate}: expected the compile's metadata as a JSON object")
        if required is None or required in metadata:
            return candidate, metadata
    return None, {}


def _metadata_target(metadata):
    """The target a compile's metadata names (its GPUTarget, or its arch "sm90" or "gfx942"), or None."""
    target = metadata.get("target")
    if isinstance(target, dict) and isinstance(target.get("arch"), (int, str)):
        return target_of_arch(target["arch"])
    arch = metadata.get("arch")
    return parse_target(arch) if isinstance(arch, str) else None


def _ir_settings(module, path):
    """What the module's own attributes fix: option name -> value, and "target" -> Target."""
    found = {name: module.int_attribute(attribute) for name, attribute in _IR_OPTION_ATTRIBUTES.items()}
    found = {name: value for name, value in found.items() if value is not None}
    target_name = module.string_attribute("ttg.target")
    if target_name is not None:
        backend, _, arch = target_name.partition(":")
        target = target_of_arch(int(arch)) if backend == "cuda" and arch.isdigit() else \
            target_of_arch(arch) if backend == "hip" else None
        if target is None:
            raise TaotError(f"{path}: ttg.target = \"{target_name}\" is not a target taot compiles for")
        found["target"] = target
    return found


def _frozen(value):
    """Lists made tuples, as Triton's options hold them (options are hashed)."""
    return tuple(_frozen(item) for item in value) if isinstance(value, list) else value


def resolve_settings(module, path, flags, flag_target):
    """The settings for a module read from `path`: a value the IR fixes wins (a flag that disagrees is
    a TaotError), then a flag (`flags`: option -> value or None; `flag_target`: Target or None), then
    the compile metadata beside the file, then Triton's defaults (None here)."""
    from_ir = _ir_settings(module, path)
    metadata_file, metadata = compile_metadata(path)
    metadata_source = metadata_file.name if metadata_file else None
    compiled_for = _metadata_target(metadata)

    def disagree(what, ir_value, flag, flag_value):
        attribute = "ttg.target" if what == "target" else _IR_OPTION_ATTRIBUTES[what]
        raise TaotError(f"{path} fixes {attribute} = {ir_value} in its module attributes; {flag} {flag_value} "
                        f"disagrees (the IR was built for its own value: leave {flag} out)")

    if "target" in from_ir:
        target, target_source = from_ir["target"], "the IR"
        if flag_target is not None and flag_target.arch != target.arch:
            disagree("target", target.name, "--target", flag_target.name)
    elif flag_target is not None:
        target, target_source = flag_target, "--target"
    elif compiled_for is not None:
        target, target_source = compiled_for, metadata_source
    else:
        target, target_source = parse_target(DEFAULT_TARGET), "taot's default"

    option_fields = triton_compiler.option_fields(target.vendor)
    if compiled_for is not None and compiled_for.arch != target.arch:
        option_fields &= set(TUNABLE_OPTIONS)  # the others Triton derived from the compile's own target
    from_metadata = {name: _frozen(value) for name, value in metadata.items()
                     if name in option_fields and name not in _MACHINE_OPTIONS and value is not None}
    options = {}
    for name in TUNABLE_OPTIONS:
        flag = "--" + name.replace("_", "-")
        if name in from_ir:
            if flags.get(name) is not None and flags[name] != from_ir[name]:
                disagree(name, from_ir[name], flag, flags[name])
            options[name] = Setting(from_ir[name], "the IR")
        elif flags.get(name) is not None:
            options[name] = Setting(flags[name], flag)
        elif name in from_metadata:
            options[name] = Setting(from_metadata[name], metadata_source)
        else:
            options[name] = Setting(None, DEFAULT_OPTION)
    for name, value in sorted(from_metadata.items()):
        options.setdefault(name, Setting(value, metadata_source))
    return Settings(target, target_source, options)


# ---- recording a stage function's passes ----

@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a pipeline: a pass as the stage function adds it, or the llir pipeline's translation."""
    index: int         # 1-based position in the pipeline
    name: str          # unique in the pipeline: from the add function ("coalesce"); ".N" from a name's second use
    call: ir.PassCall  # the add call as the stage function made it; None for the translation
    mlir: str          # what MLIR's pass manager calls the added pass(es), e.g. "tritongpu-coalesce"

    @property
    def is_translation(self):
        return self.call is None

    @property
    def function(self):
        """The add function as the stage calls it ("passes.ttgpuir.add_coalesce"); "" for the translation."""
        return "" if self.call is None else self.call.function

    def call_text(self):
        """The add call as the stage function made it, without the pass manager."""
        if self.is_translation:
            return "the rest of Triton's llir stage after its passes: translation to LLVM IR text"
        parts = [repr(argument) for argument in self.call.arguments]
        parts += [f"{key}={value!r}" for key, value in self.call.keywords.items()]
        return f"{self.function}({', '.join(parts)})"

    def as_json(self):
        arguments, keywords = ((), {}) if self.call is None else (self.call.arguments, self.call.keywords)
        return {"index": self.index, "pass": self.name, "function": self.function,
                "arguments": json_safe(arguments), "keywords": json_safe(keywords), "mlir": self.mlir}


def _step_name(function):
    """passes.ttgpuir.add_remove_layout_conversions -> remove-layout-conversions."""
    last = function.rsplit(".", 1)[-1]
    return last[len("add_"):].replace("_", "-")


def _mlir_name(call, context):
    """What MLIR calls the pass(es) an add call adds, without their options: "tritongpu-coalesce"."""
    text = call.pipeline_text(context)  # e.g. "any(tritongpu-coalesce,canonicalize{...})"
    inner = text[text.find("(") + 1:text.rfind(")")] if "(" in text else text
    kept, depth = [], 0
    for character in inner:
        depth += character == "{"
        if depth == 0:
            kept.append(character)
        depth -= character == "}"
    return "".join(kept)


def record_steps(stage, module, pipeline):
    """The steps of `pipeline` (an ir.Stage and the ir.Module it runs on): the passes the stage function
    adds, in order, named; then the translation when the pipeline translates. The stage function runs up
    to its pass manager's run() on the real module (what it does before its passes, such as setting
    ttg.maxnreg, happens to it)."""
    try:
        calls = stage.passes(module)
    except Exception as error:  # e.g. no ptxas to ask for the PTX version, or a pass taot could not record
        raise TaotError(f"Triton's {pipeline.name} stage failed before its passes: "
                        f"{type(error).__name__}: {error}") from None
    if calls is None:
        raise TaotError(f"Triton's {pipeline.name} stage ran no pass manager; taot passes cannot read its passes")
    steps = []
    uses = {}
    for call in calls:
        name = _step_name(call.function)
        uses[name] = uses.get(name, 0) + 1
        unique = name if uses[name] == 1 else f"{name}.{uses[name]}"
        steps.append(Step(len(steps) + 1, unique, call, _mlir_name(call, module.context)))
    if pipeline.translates:
        steps.append(Step(len(steps) + 1, TRANSLATION, None, ""))
    return steps


def select_steps(steps, selection, pipeline):
    """The steps named in `selection` (names or 1-based indices, in the order given); TaotError for an
    unknown one, naming the pipeline's steps, or for a translation that is not last."""
    by_name = {step.name: step for step in steps}
    chosen = []
    for item in selection:
        step = steps[int(item) - 1] if item.isdigit() and 1 <= int(item) <= len(steps) else by_name.get(item)
        if step is None:
            listing = ", ".join(f"{step.index} {step.name}" for step in steps)
            raise TaotError(f"--passes: the {pipeline.name} pipeline has no pass '{item}'; its passes: {listing}")
        chosen.append(step)
    for step in chosen[:-1]:
        if step.is_translation:
            raise TaotError(f"--passes: {TRANSLATION} turns the module into LLVM IR text, so it must come last")
    return chosen


# ---- running ----

@dataclasses.dataclass(frozen=True)
class StepResult:
    step: Step
    text: str             # the module after the step as Triton prints it (with locations); LLVM IR after translation
    changed: bool
    locations_only: bool  # changed, but only in its debug locations
    lines_added: int      # lines of the printed module without locations (difflib)
    lines_removed: int
    ops_before: int       # operations in the module; LLVM instructions after the translation
    ops_after: int
    seconds: float

    def as_json(self):
        return dict(self.step.as_json(), changed=self.changed, locations_only=self.locations_only,
                    lines_added=self.lines_added, lines_removed=self.lines_removed, ops_before=self.ops_before,
                    ops_after=self.ops_after, ms=round(self.seconds * 1000, 3))


def count_llvm_instructions(text):
    """Instructions in LLVM IR text: the indented lines (function bodies indent them; labels,
    declarations and metadata start at the line's start)."""
    return sum(1 for line in text.splitlines() if line[:1] in (" ", "\t") and line.strip())


def line_changes(before, after):
    """(lines added, lines removed) from `before` to `after`."""
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    for tag, start_before, end_before, start_after, end_after in matcher.get_opcodes():
        if tag != "equal":
            removed += end_before - start_before
            added += end_after - start_after
    return added, removed


def parse_module(path, context):
    """Parse an IR stage file (plain or compressed) into `context` (from ir.new_context): an ir.Module;
    TaotError with the parser's messages, naming the file, when it does not parse."""
    path = Path(path)
    try:
        text = ir_files.read_stage(path)
    except (EOFError, ValueError, lzma.LZMAError, gzip.BadGzipFile) as error:  # damaged compression, not UTF-8
        raise TaotError(f"{path}: cannot be read as IR text: {error}") from None
    with tempfile.TemporaryDirectory(prefix="taot-passes-") as folder:
        parsed_path = path
        if path.name != plain_name(path):
            parsed_path = Path(folder) / plain_name(path)
            parsed_path.write_text(text)
        with captured_output() as captured:
            try:
                module = ir.Module.parse(parsed_path, context)
            except ir.ParseFailed as error:
                module, failure = None, error
    if module is None:
        said = [line.replace(str(parsed_path), str(path)) for line in diagnostic_lines(captured.text)]
        detail = "\n".join(said) if said else str(failure)
        raise TaotError(f"{path}: not a valid MLIR module:\n{detail}")
    from .rebuild import kernel_problem
    problem = kernel_problem(input_stage(path), text)  # a module that parses, with nothing to run passes on
    if problem:
        raise TaotError(f"{path}: {problem}")
    captured.replay()
    return module


def _likely_target(path, flag_target):
    """The target whose dialects a file is parsed with (before resolve_settings reads it from the
    parsed module): --target, else the module's ttg.target as written, else the compile metadata's,
    else taot's default."""
    if flag_target is not None:
        return flag_target
    try:
        written = re.search(r'ttg\.target\s*=\s*"(cuda|hip):(\w+)"', ir_files.read_stage(path))
    except (OSError, EOFError, ValueError, lzma.LZMAError, gzip.BadGzipFile):
        written = None  # parse_module says what is wrong with the file
    if written:
        target = target_of_arch(int(written.group(2)) if written.group(1) == "cuda" else written.group(2))
        if target is not None:
            return target
    return _metadata_target(compile_metadata(path)[1]) or parse_target(DEFAULT_TARGET)


class PipelineRun:
    """One IR file parsed into its own MLIR context, a pipeline's settings and its recorded steps;
    run() applies a step to the module in place. Not thread-safe (recording patches Triton's bindings)."""

    def __init__(self, path, pipeline, flags, flag_target):
        """Parse `path` (TaotError when it does not parse), resolve the settings (see resolve_settings)
        and record the pipeline's steps from Triton's own stage function."""
        self.path = Path(path)
        self.pipeline = pipeline
        parsed_for = _likely_target(self.path, flag_target)
        self.context = ir.new_context(parsed_for.arch)
        self.module = parse_module(self.path, self.context)
        self.settings = resolve_settings(self.module, self.path, flags, flag_target)
        arch = self.settings.target.arch
        if self.settings.target.vendor != parsed_for.vendor:  # its backend's passes need its dialects
            self.context = ir.new_context(arch)
            self.module = parse_module(self.path, self.context)
        try:
            self.options, stages = ir.stages(arch, self.settings.values())
        except (ValueError, AssertionError, TypeError) as error:
            raise TaotError(f"Triton refuses these options for {self.settings.target.name}: {error}") from None
        self.backend_name = ir.backend_name(arch)
        self._stage = stages[pipeline.name]
        self.steps = record_steps(self._stage, self.module, pipeline)
        self.metadata = {}  # what the translation adds to the compile's metadata (shared memory, ...)
        self.text = self.module.text()
        self._plain_text = self.module.text_without_locations()
        self._ops = self.module.operation_count()
        self.translated = False

    @property
    def extension(self):
        return TRANSLATION_EXTENSION if self.translated else self.pipeline.extension

    def run(self, step):
        """Apply one step to the module; its StepResult. PassFailed (with the diagnostics) when it fails;
        the module is then in whatever state the failed pass left it."""
        if self.translated:
            raise TaotError(f"the module is LLVM IR text after {TRANSLATION}: no pass can follow it")
        with captured_output() as captured:
            start = time.perf_counter()
            try:
                llvm_ir = self._translate() if step.is_translation else self._run_pass(step)
                failure = None
            except Exception as error:  # MLIR's and LLVM's failures are the user's to read
                failure = error
            seconds = time.perf_counter() - start
        if failure is not None:
            said = diagnostic_lines(captured.text)
            raise PassFailed(step, said if said else [f"{type(failure).__name__}: {failure}"])
        captured.replay()
        if step.is_translation:
            self.translated = True
            text = plain_text = llvm_ir
            ops = count_llvm_instructions(llvm_ir)
        else:
            text, plain_text = self.module.text(), self.module.text_without_locations()
            ops = self.module.operation_count()
        added, removed = line_changes(self._plain_text, plain_text)
        result = StepResult(step, text, text != self.text, text != self.text and plain_text == self._plain_text,
                            added, removed, self._ops, ops, seconds)
        self.text, self._plain_text, self._ops = text, plain_text, ops
        return result

    def _run_pass(self, step):
        """Run one pass on the module; None (the module changes in place)."""
        step.call.run(self.module, step.name)

    def _translate(self):
        """The rest of the stage function after its passes, as Triton runs it (ir.Stage.finish): returns
        the LLVM IR text; what it records in the metadata is kept in self.metadata. What it does before
        its passes runs a second time (the llir stage only reads the PTX version there)."""
        return self._stage.finish(self.module, self.metadata)

    def describe(self):
        """The run's pipeline, target and options, JSON-safe."""
        return {"pipeline": self.pipeline.name, "input": str(self.path),
                "triton_version": triton_api.VERSION, "backend": self.backend_name,
                "target": {"name": self.settings.target.name, "from": self.settings.target_source},
                "options": {name: {"value": json_safe(self.options.get(name, setting.value)),
                                   "from": setting.source}
                            for name, setting in self.settings.options.items()}}
