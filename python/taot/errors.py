# The one exception family of the front end: user errors carry where and what, the driver prints them.


class TaotError(Exception):
    """An error the user can fix; the driver prints report() and exits with status 1."""

    def report(self):
        return f"error: {self}"


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


class BenchFileError(SpecError):
    """A problem in a bench file (docs/bench-file.md) or in a bench results file read back: which file,
    which name or key in it, what was expected and what was found."""


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
