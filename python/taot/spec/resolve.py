# Finding, when the spec loads, a kernel's `module.name` that names nothing (a misspelt helper), in the
# kernel and in the @triton.jit helpers it calls: Triton 3.5-3.7 fail while computing the cache key,
# 3.8 on only when the kernel compiles, after the rest of the build has started. Read from the Python
# source alone, so every release finds the same.
import ast
import builtins
import dataclasses
import difflib
import inspect
import textwrap
import types
from pathlib import Path

from ..triton_api import kernels


@dataclasses.dataclass(frozen=True)
class Unresolved:
    file: str        # the name of the Python file
    line: int
    module: str      # the module's name
    attribute: str   # the name it lacks
    close: str       # the module's name nearest to it, or ""

    def describe(self):
        hint = f" (did you mean {self.close}?)" if self.close else ""
        return f"{self.file}:{self.line}: AttributeError: module '{self.module}' has no attribute " \
               f"'{self.attribute}'{hint}"


def first_unresolved(jit_function):
    """The first attribute of a module that the function or a @triton.jit helper it reaches uses and
    the module lacks, in source order, helpers after their caller; None when all resolve. Triton's
    own modules are left to Triton."""
    seen, pending = set(), [jit_function]
    while pending:
        function = kernels.python_function(pending.pop(0))
        if function in seen:
            continue
        seen.add(function)
        found, helpers = _scan(function)
        if found is not None:
            return found
        pending += helpers
    return None


def _scan(function):
    """(the first Unresolved in the function's source or None, the @triton.jit helpers it names)."""
    try:
        lines, first_line = inspect.getsourcelines(function)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None, []
    scope = dict(vars(builtins), **function.__globals__)
    local = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    local |= {arg.arg for node in ast.walk(tree) if isinstance(node, ast.arguments)
              for arg in node.posonlyargs + node.args + node.kwonlyargs}
    helpers, problems = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id not in local and kernels.is_jit_function(scope.get(node.id)):
            helpers.append(scope[node.id])
        if not isinstance(node, ast.Attribute):
            continue
        chain, base = [], node
        while isinstance(base, ast.Attribute):
            chain.insert(0, base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id in local or base.id not in scope:
            continue
        value = scope[base.id]
        for attribute in chain:
            if not isinstance(value, types.ModuleType) or value.__name__.split(".")[0] == "triton":
                break
            if not hasattr(value, attribute):
                close = difflib.get_close_matches(attribute, dir(value), n=1)
                problems.append(Unresolved(Path(function.__code__.co_filename).name, first_line + node.lineno - 1,
                                           value.__name__, attribute, close[0] if close else ""))
                break
            value = getattr(value, attribute)
        if kernels.is_jit_function(value):
            helpers.append(value)
    return min(problems, key=lambda problem: problem.line, default=None), helpers
