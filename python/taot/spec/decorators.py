# Kernels as written: unwrap @triton.autotune / @triton.heuristics around a @triton.jit function and
# turn what they say into spec terms: config entries, a tuning key, and heuristic rules as text.
import ast
import copy
import inspect
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import Problem
from ..triton_api import kernels
from .keypath import describe

RULE_FUNCTIONS = ("next_power_of_2", "cdiv", "min", "max", "abs")


@dataclass(frozen=True)
class Autotune:
    """What @triton.autotune says: `configs` as dicts (kwargs then options), the tuning `key`, which
    run-time pruning it asks for, and the tensors it zeroes or restores between timed runs."""
    configs: tuple
    key: tuple
    pruning: tuple = ()         # names of the prune_configs_by entries given
    reset_to_zero: tuple = ()
    restore_value: tuple = ()
    notes: tuple = ()           # things taot cannot carry ahead of time (config pre_hooks)


@dataclass(frozen=True)
class Heuristic:
    """One @triton.heuristics value: the field it sets and the function that computes it."""
    field: str
    function: object


@dataclass(frozen=True)
class Decorated:
    """A kernel function as found in its module: the @triton.jit function inside any decorators."""
    jit: object
    autotune: Autotune = None
    heuristics: tuple = ()      # Heuristic, in the order Triton evaluates them (outermost first)
    layers: tuple = field(default=())  # "autotune" / "heuristics", outermost first


def unwrap(value):
    """Decorated for a JITFunction possibly wrapped in Autotuner / Heuristics objects; None when
    `value` is none of these; Problem (expected, got) for a decorator taot cannot take."""
    autotune, heuristics, layers = None, [], []
    while not kernels.is_jit_function(value):
        if kernels.is_autotuner(value):
            if autotune is not None:
                raise Problem(expected="at most one @triton.autotune", got="two")
            autotune = _autotune(value)
            layers.append("autotune")
        elif kernels.is_heuristics(value):
            heuristics += [Heuristic(name, function) for name, function in kernels.heuristic_values(value).items()]
            layers.append("heuristics")
        else:
            return None
        value = kernels.wrapped(value)
    return Decorated(value, autotune, tuple(heuristics), tuple(layers))


def _autotune(tuner):
    configs, notes = [], []
    for index, (kwargs, options, pre_hook, ir_override) in enumerate(kernels.autotune_configs(tuner)):
        if ir_override:
            raise Problem(expected="triton.Config objects without ir_override (taot compiles from the source)",
                          got=f"configs[{index}] with ir_override={ir_override!r}")
        if pre_hook is not None:  # Triton runs it before every launch with this config
            hook = getattr(pre_hook, "__name__", None) or repr(pre_hook)
            notes.append(f"configs[{index}] has a pre_hook ({hook}), which Triton runs before every launch with "
                         f"that config and the library never runs: the caller must do its work (zeroing an "
                         f"output, say) before each launch")
        configs.append(dict(kwargs, **options))
    reset_to_zero, restore_value = kernels.autotune_buffers(tuner)
    return Autotune(configs=tuple(configs), key=kernels.autotune_key(tuner), pruning=kernels.autotune_pruning(tuner),
                    reset_to_zero=reset_to_zero, restore_value=restore_value, notes=tuple(notes))


# ---- heuristics as expressions ----

def heuristic_expression(heuristic):
    """The heuristic's body as an expression in the spec's rule language (argument and config field
    names, next_power_of_2, cdiv, min, max, abs, `x is None`), e.g. "next_power_of_2(n_cols)". Problem,
    saying why, when the function is not an expression of the arguments."""
    function = heuristic.function
    code = getattr(function, "__code__", None)
    if code is None:
        raise Problem(f"{describe(function)} is not a Python function or lambda")
    node, parameter = _function_node(function, heuristic.field)
    # The translator rewrites the tree it visits: give it a copy, not the cached file's own nodes.
    translated = _Translator(parameter, _known_values(function)).visit(copy.deepcopy(node))
    return ast.unparse(translated)


def source_location(function):
    code = getattr(function, "__code__", None)
    return f"{Path(code.co_filename).name}:{code.co_firstlineno}" if code else "?"


_parsed_files = {}


def _file_tree(path):
    try:
        text = Path(path).read_text()
        key = (path, hash(text))
        if key not in _parsed_files:
            _parsed_files[key] = ast.parse(text)
        return _parsed_files[key]
    except (OSError, SyntaxError, ValueError):
        raise Problem(f"its source ({path}) cannot be read") from None


def _function_node(function, field_name):
    """(expression node, name of its dict parameter) of a lambda or a one-return def."""
    code = function.__code__
    if code.co_argcount != 1:
        raise Problem("it does not take exactly one argument (the dict of arguments)")
    tree = _file_tree(code.co_filename)
    if function.__name__ == "<lambda>":
        candidates = [node for node in ast.walk(tree)
                      if isinstance(node, ast.Lambda) and node.lineno <= code.co_firstlineno <= node.end_lineno]
        node = _pick_lambda(tree, candidates, field_name, code)
        return node.body, node.args.args[0].arg
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == function.__name__ and \
                node.lineno <= code.co_firstlineno + len(node.decorator_list) and code.co_firstlineno <= node.lineno:
            body = [statement for statement in node.body
                    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))]
            if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
                raise Problem(f"def {node.name} is not a single `return <expression>`")
            return body[0].value, node.args.args[0].arg
    raise Problem("its source cannot be found")


def _pick_lambda(tree, candidates, field_name, code):
    """The lambda of `code` among those on its line: the value of key `field_name` in a dict, or the
    one whose body holds the code's first position."""
    if len(candidates) == 1:
        return candidates[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if value in candidates and isinstance(key, ast.Constant) and key.value == field_name:
                    return value
    positions = [position for position in code.co_positions() if position[0] is not None]
    for node in candidates:
        body = node.body
        if any((body.lineno, body.col_offset) <= (line, column) and (line, column) <= (body.end_lineno, body.end_col_offset)
               for line, _, column, _ in positions if column is not None):
            return node
    raise Problem("several lambdas share its line and taot cannot tell which is this one")


def _known_values(function):
    """Names a heuristic may use from its module or closure: ints, floats, bools, strings."""
    values = {}
    closure = inspect.getclosurevars(function)
    for scope in (closure.globals, closure.nonlocals):
        for name, value in scope.items():
            if isinstance(value, (bool, int, float, str)):
                values[name] = value
    return values


class _Translator(ast.NodeTransformer):
    """args["n"] -> n, triton.next_power_of_2 -> next_power_of_2, module constants -> literals;
    anything else is a Problem naming the piece of source."""

    ALLOWED = (ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.BinOp, ast.Add, ast.Sub,
               ast.Mult, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE,
               ast.Is, ast.IsNot, ast.IfExp, ast.Constant, ast.Load)

    def __init__(self, parameter, known):
        self.parameter = parameter
        self.known = known

    def generic_visit(self, node):
        if not isinstance(node, self.ALLOWED):
            raise Problem(f"`{ast.unparse(node)}` is {type(node).__name__} syntax, which a launch-time rule "
                              "cannot hold")
        return super().generic_visit(node)

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.parameter and \
                isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            return ast.copy_location(ast.Name(node.slice.value, ast.Load()), node)
        raise Problem(f"`{ast.unparse(node)}` indexes something other than {self.parameter}[\"name\"]")

    def visit_Name(self, node):
        if node.id in self.known:
            return ast.copy_location(ast.Constant(self.known[node.id]), node)
        if node.id == self.parameter:
            raise Problem(f"it uses {self.parameter} other than as {self.parameter}[\"name\"]")
        raise Problem(f"`{node.id}` is neither an argument ({self.parameter}[\"{node.id}\"]) nor a constant")

    def visit_Attribute(self, node):
        inner = node.value
        if isinstance(inner, ast.Subscript):
            raise Problem(f"`{ast.unparse(node)}` reads .{node.attr} of a tensor, which is not known at "
                              "launch in C++ (taot sees pointers and numbers)")
        raise Problem(f"`{ast.unparse(node)}` is not one of the functions {', '.join(RULE_FUNCTIONS)}")

    def visit_Call(self, node):
        name = _call_name(node.func)
        if name in ("int", "bool") and len(node.args) == 1 and not node.keywords:
            inner = self.visit(node.args[0])
            return inner if name == "int" else ast.copy_location(
                ast.Compare(inner, [ast.NotEq()], [ast.Constant(0)]), node)
        if name not in RULE_FUNCTIONS or node.keywords:
            raise Problem(f"`{ast.unparse(node)}` calls something other than {', '.join(RULE_FUNCTIONS)}")
        return ast.copy_location(ast.Call(ast.Name(name, ast.Load()), [self.visit(arg) for arg in node.args], []),
                                 node)


def _call_name(function):
    """"next_power_of_2" for next_power_of_2, triton.next_power_of_2, tl.cdiv ...; None otherwise."""
    if isinstance(function, ast.Name):
        return function.id
    if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) and \
            function.value.id in ("triton", "tl", "math"):
        return function.attr
    return None
