# The one exception family of the front end. TaotError and its subclasses are errors the user can
# fix: they carry where and what, and the driver prints them. Problem and its subclasses stay
# inside: a helper raises one to the caller that knows where its input came from, which reports it
# (as a TaotError naming the file and key, or as a note) or acts on it. Every exception class in
# python/taot derives from one of the two (tests/python/test_errors.py checks).


class TaotError(Exception):
    """An error the user can fix; the driver prints report() and exits with status 1."""

    def report(self):
        return f"error: {self}"


class Problem(Exception):
    """Raised by a helper and caught by its caller, never by the driver; str() says what is wrong.
    Problem(expected=..., got=...) phrases it as "expected E, got G" and keeps both halves for the
    caller's SpecError."""

    def __init__(self, why=None, *, expected=None, got=None):
        super().__init__(f"expected {expected}, got {got}" if why is None else why)
        self.expected = expected
        self.got = got


# ---- specs and bench files ----

class SpecError(TaotError):
    """A problem in a spec: which file, which key path, what was expected and what was found."""

    def __init__(self, file, key, expected, got):
        self.file = str(file)
        self.key = key
        self.expected = expected
        self.got = got
        super().__init__(self.message())

    def message(self):
        where = f"{self.file}: {self.key}" if self.key else self.file
        return f"{where}: expected {self.expected}, got {self.got}"


class TooManyVariants(SpecError):
    """A kernel makes more variants than --max-variants allows."""


class BenchFileError(SpecError):
    """A problem in a bench file (docs/bench-file.md) or in a bench results file read back: which file,
    which name or key in it, what was expected and what was found."""


class UnsupportedTriton(TaotError):
    """The Python taot runs has no Triton, or one outside the supported range."""


# ---- building ----

class CompileError(TaotError):
    """One or more (variant, target) jobs failed in Triton; each failure is (variant id, target, text)."""

    def __init__(self, failures):
        self.failures = list(failures)
        super().__init__(self.message())

    def report(self):
        return str(self)  # already one "error:" line per failure

    def message(self):
        parts = []
        shown = {}
        for variant_id, target, text in self.failures:
            if text in shown:
                parts.append(f"error: compiling {variant_id} for {target} failed the same way as {shown[text]}")
                continue
            shown[text] = f"{variant_id} for {target}"
            parts.append(f"error: compiling {variant_id} for {target} failed:\n{text}")
        return "\n".join(parts)


class OutputBusy(TaotError):
    """Another build holds the output folder and the caller chose not to wait."""

    def __init__(self, outdir, holder):
        super().__init__(f"{outdir} is being built by {holder}; wait for it or drop --no-wait")


# ---- the workbench ----

class PassFailed(TaotError):
    """A pass-pipeline step failed: which one, and what MLIR or LLVM said. `step` is a
    workbench.passes.Step."""

    def __init__(self, step, diagnostics, before_file=None):
        self.step = step
        self.diagnostics = diagnostics
        detail = "\n".join(diagnostics)
        what = step.name if step.is_translation else f"{step.name} ({step.function})"
        kept = f"; the IR it was given is {before_file}" if before_file else ""
        super().__init__(f"pass {step.index} {what} failed{kept}:\n{detail}")


class RebuildError(TaotError):
    """An edited stage file could not be rebuilt (unreadable, malformed, or Triton/ptxas refused it)."""


class SignatureMismatch(TaotError):
    """The rebuilt kernel's name or parameters differ from the kernel it is to replace."""


class OverrideDamaged(TaotError):
    """An override folder whose files no longer match its record."""
