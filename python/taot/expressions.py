# The two small expression languages of a spec: `where` filters and grid entries (parsed, checked, folded).
import ast

from .checks import describe

WHERE_CALLS = {"min": min, "max": max, "abs": abs}
ARG_ATTRIBUTES = ("dtype", "type", "align", "hint")

_WHERE_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
                ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
                ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
                ast.IfExp, ast.Name, ast.Load, ast.Constant, ast.Attribute, ast.Call, ast.List, ast.Tuple)


class ExpressionProblem(Exception):
    """An expression outside its language; the message says why."""


class ArgView:
    """What a `where` filter sees of a non-constexpr argument in one variant."""
    __slots__ = ("dtype", "type", "align", "hint")

    def __init__(self, dtype, type, align=None, hint=None):
        self.dtype = dtype
        self.type = type
        self.align = align
        self.hint = hint


def _parse(text):
    try:
        return ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionProblem(f"invalid Python syntax at column {error.offset}") from None


# ---- where filters ----

class Filter:
    """A checked `where` expression, evaluated per variant."""

    def __init__(self, text, code):
        self.text = text
        self.code = code

    def holds(self, namespace):
        return bool(eval(self.code, {"__builtins__": {}}, dict(WHERE_CALLS, **namespace)))


def parse_where(text, value_names, arg_names):
    """Check a filter: only `value_names` (plain values) and `arg_names` (ArgView objects) may appear."""
    tree = _parse(text)
    call_targets = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    literal_lists = _literal_lists_after_in(tree)
    for node in ast.walk(tree):
        _check_where_node(node, value_names, arg_names)
        if isinstance(node, ast.Name) and node.id in WHERE_CALLS and id(node) not in call_targets \
                and node.id not in value_names and node.id not in arg_names:
            raise ExpressionProblem(f"{node.id} may only be called, as in {node.id}(a, b)")
        if isinstance(node, (ast.List, ast.Tuple)) and id(node) not in literal_lists:
            raise ExpressionProblem("lists and tuples are allowed only after `in` / `not in`, holding literals")
    return Filter(text, compile(tree, "<where>", "eval"))


def _literal_lists_after_in(tree):
    """ids of list/tuple nodes that follow `in`/`not in` and hold only literal values."""
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for op, comparator in zip(node.ops, node.comparators):
                if isinstance(op, (ast.In, ast.NotIn)) and isinstance(comparator, (ast.List, ast.Tuple)) \
                        and all(isinstance(element, ast.Constant) for element in comparator.elts):
                    allowed.add(id(comparator))
    return allowed


def _check_where_node(node, value_names, arg_names):
    if not isinstance(node, _WHERE_NODES):
        raise ExpressionProblem(f"{type(node).__name__} syntax is not allowed in a filter")
    if isinstance(node, ast.Name) and node.id not in value_names and node.id not in arg_names \
            and node.id not in WHERE_CALLS:
        known = ", ".join(sorted(set(value_names) | set(arg_names)))
        raise ExpressionProblem(f"unknown name {node.id} (known: {known})")
    if isinstance(node, ast.Attribute):
        if not (isinstance(node.value, ast.Name) and node.value.id in arg_names):
            raise ExpressionProblem("attributes are allowed only on argument names, as in x_ptr.dtype")
        if node.attr not in ARG_ATTRIBUTES:
            raise ExpressionProblem(f"unknown attribute .{node.attr} (arguments have {', '.join(ARG_ATTRIBUTES)})")
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in WHERE_CALLS) or node.keywords:
            raise ExpressionProblem("calls other than min(...), max(...) and abs(...) are not allowed")
    if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool)):
        raise ExpressionProblem(f"constant {node.value!r} is not allowed")


# ---- grid ----

GRID_CALLS = ("cdiv", "min", "max")
_GRID_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "div", ast.Mod: "mod"}


def parse_grid(value, arg_names, value_names):
    """Check one grid entry (an int or an expression string) and return its AST.

    arg_names: int arguments (kept symbolic); value_names: int constexprs and options (folded)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return ast.Constant(value)
    tree = _parse(value).body
    _check_grid_node(tree, arg_names, value_names)
    return tree


def _check_grid_node(node, arg_names, value_names):
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise ExpressionProblem(f"{describe(node.value)} is not an int literal")
    elif isinstance(node, ast.Name):
        if node.id not in arg_names and node.id not in value_names:
            known = ", ".join(sorted(set(arg_names) | set(value_names))) or "none"
            raise ExpressionProblem(f"unknown name {node.id} (int arguments, constexprs and options: {known})")
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _GRID_BINARY:
            hint = " (use // for division)" if isinstance(node.op, ast.Div) else ""
            raise ExpressionProblem(f"operator {type(node.op).__name__} is not allowed{hint}")
        _check_grid_node(node.left, arg_names, value_names)
        _check_grid_node(node.right, arg_names, value_names)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        _check_grid_node(node.operand, arg_names, value_names)
    elif isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in GRID_CALLS) or node.keywords \
                or len(node.args) != 2:
            raise ExpressionProblem("the only calls are cdiv(a, b), min(a, b) and max(a, b)")
        for argument in node.args:
            _check_grid_node(argument, arg_names, value_names)
    else:
        raise ExpressionProblem(f"{type(node).__name__} syntax is not allowed in a grid expression")


def fold_grid(tree, values, ones):
    """Postfix program for a checked grid AST with `values` (name -> int) substituted and the
    int arguments in `ones` (specialized ==1) replaced by 1; constant parts are computed."""
    folded = _fold(tree, values, ones)
    if isinstance(folded, int):
        return [{"op": "lit", "value": folded}]
    return folded


def _fold(node, values, ones):
    """An int when the subtree is constant, else a postfix op list."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in values:
            return values[node.id]
        if node.id in ones:
            return 1
        return [{"op": "arg", "name": node.id}]
    if isinstance(node, ast.UnaryOp):
        operand = _fold(node.operand, values, ones)
        if isinstance(node.op, ast.UAdd):
            return operand
        return -operand if isinstance(operand, int) else operand + [{"op": "neg"}]
    if isinstance(node, ast.BinOp):
        return _combine(_GRID_BINARY[type(node.op)], _fold(node.left, values, ones), _fold(node.right, values, ones))
    return _combine(node.func.id, _fold(node.args[0], values, ones), _fold(node.args[1], values, ones))


def _combine(op, left, right):
    if isinstance(left, int) and isinstance(right, int):
        return _compute(op, left, right)
    simplified = _identity(op, left, right)
    if simplified is not None:
        return simplified
    return _program(left) + _program(right) + [{"op": op}]


def _program(part):
    return [{"op": "lit", "value": part}] if isinstance(part, int) else part


def _identity(op, left, right):
    """x*1, 1*x, x//1, cdiv(x,1), x+0, 0+x, x-0 simplify to x."""
    if right == 1 and op in ("mul", "div", "cdiv"):
        return left
    if left == 1 and op == "mul":
        return right
    if right == 0 and op in ("add", "sub"):
        return left
    if left == 0 and op == "add":
        return right
    return None


def _compute(op, left, right):
    if op in ("div", "mod", "cdiv") and right == 0:
        raise ExpressionProblem(f"division by zero ({op} of {left} by 0)")
    if op == "add":
        return left + right
    if op == "sub":
        return left - right
    if op == "mul":
        return left * right
    if op == "div":
        return left // right
    if op == "mod":
        return left % right
    if op == "cdiv":
        return (left + right - 1) // right
    if op == "min":
        return min(left, right)
    return max(left, right)
