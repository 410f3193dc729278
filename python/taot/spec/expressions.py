# The two small expression languages of a spec: `where` filters and grid entries (parsed, checked, folded).
import ast

from ..errors import Problem
from .keypath import describe

def next_power_of_2(value):
    """triton.next_power_of_2 on 64-bit ints: the smallest power of two >= value; 0 for 0 and below."""
    n = int(value) - 1
    for shift in (1, 2, 4, 8, 16, 32):
        n |= n >> shift
    return n + 1


def cdiv(a, b):
    """triton.cdiv: (a + b - 1) // b."""
    return (a + b - 1) // b


WHERE_CALLS = {"min": min, "max": max, "abs": abs, "next_power_of_2": next_power_of_2, "cdiv": cdiv}
ARG_ATTRIBUTES = ("dtype", "type", "align", "hint", "none")

_WHERE_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
                ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod,
                ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
                ast.IfExp, ast.Name, ast.Load, ast.Constant, ast.Attribute, ast.Call, ast.List, ast.Tuple)


class ExpressionProblem(Problem):
    """An expression outside its language; the message says why. `unknown_name`: the name it
    reads that is none of those it may read, if that is the problem."""

    def __init__(self, message, unknown_name=None):
        super().__init__(message)
        self.unknown_name = unknown_name


def _parse(text):
    try:
        return ast.parse(text.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionProblem(f"invalid Python syntax at column {error.offset}") from None


# ---- where filters ----

class Filter:
    """A checked `where` expression. `slots` lists what it reads, each ("value", name) or
    ("attr", argument, attribute); `holds(values)` evaluates it with values[i] for slots[i]."""

    def __init__(self, text, slots, function):
        self.text = text
        self.slots = slots
        self.function = function

    def holds(self, values):
        return bool(self.function(values))


def parse_where(text, value_names, arg_names):
    """Check a filter: only `value_names` (plain values) and `arg_names` (arguments, read through
    their attributes) may appear. The filter is compiled to a function of its slot values."""
    tree = _parse(text)
    call_targets = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    literal_lists = _literal_lists_after_in(tree)
    for node in ast.walk(tree):
        _check_where_node(node, value_names, arg_names)
        if isinstance(node, ast.Name) and node.id in WHERE_CALLS and id(node) not in call_targets \
                and node.id not in value_names and node.id not in arg_names:
            raise ExpressionProblem(f"{node.id} may only be called, as in {node.id}(a, b)")
        if isinstance(node, ast.Name) and node.id in arg_names and not _is_attribute_base(tree, node):
            raise ExpressionProblem(f"argument {node.id} is used without an attribute "
                                    f"({', '.join(node.id + '.' + name for name in ARG_ATTRIBUTES)})")
        if isinstance(node, (ast.List, ast.Tuple)) and id(node) not in literal_lists:
            raise ExpressionProblem("lists and tuples are allowed only after `in` / `not in`, holding literals")
    slots = []
    body = _SlotRewriter(slots, call_targets).visit(tree.body)
    function = eval(compile(ast.fix_missing_locations(ast.Expression(
        ast.Lambda(ast.arguments([], [ast.arg("_slots")], None, [], [], None, []), body))), "<where>", "eval"),
        {"__builtins__": {}, **WHERE_CALLS})
    return Filter(text, tuple(slots), function)


def _is_attribute_base(tree, name_node):
    return any(isinstance(node, ast.Attribute) and node.value is name_node for node in ast.walk(tree))


class _SlotRewriter(ast.NodeTransformer):
    """Names and argument attributes become _slots[i]; calls keep their function names."""

    def __init__(self, slots, call_targets):
        self.slots = slots
        self.call_targets = call_targets

    def _slot(self, key, node):
        if key not in self.slots:
            self.slots.append(key)
        index = self.slots.index(key)
        return ast.copy_location(ast.Subscript(ast.Name("_slots", ast.Load()), ast.Constant(index), ast.Load()), node)

    def visit_Name(self, node):
        if id(node) in self.call_targets:
            return node
        return self._slot(("value", node.id), node)

    def visit_Attribute(self, node):
        return self._slot(("attr", node.value.id, node.attr), node)


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
            raise ExpressionProblem("calls other than min(...), max(...), abs(...), next_power_of_2(...) and "
                                    "cdiv(...) are not allowed")
    if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool)):
        raise ExpressionProblem(f"constant {node.value!r} is not allowed")


# ---- launch-time rules (heuristics) ----

RULE_CALLS = {"next_power_of_2": 1, "cdiv": 2, "min": 2, "max": 2, "abs": 1}
_RULE_NODES = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
               ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Compare, ast.Eq, ast.NotEq,
               ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.IfExp, ast.Name, ast.Load, ast.Constant,
               ast.Call)


class Rule:
    """A checked launch-time rule: `text` in canonical form, the `names` it reads, and whether its
    value is a bool (a comparison, `is None`, and/or/not)."""

    def __init__(self, text, names, is_bool):
        self.text = text
        self.names = names
        self.is_bool = is_bool


def parse_rule(text, scalar_names, pointer_names, field_names):
    """Check a rule over scalar call arguments, config fields, and call arguments tested with
    `is None` / `is not None` (pointers only so); functions next_power_of_2, cdiv, min, max, abs."""
    tree = _parse(text)
    names = []
    for node in ast.walk(tree):
        if not isinstance(node, _RULE_NODES):
            raise ExpressionProblem(f"{type(node).__name__} syntax is not allowed in a rule")
        if isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id in RULE_CALLS) or node.keywords \
                    or len(node.args) != RULE_CALLS[node.func.id]:
                raise ExpressionProblem("the only calls are " + ", ".join(
                    f"{name}({', '.join('ab'[:count])})" for name, count in RULE_CALLS.items()))
        elif isinstance(node, ast.Compare):
            for op, left, right in zip(node.ops, [node.left] + node.comparators, node.comparators):
                is_test = isinstance(op, (ast.Is, ast.IsNot))
                if is_test != (isinstance(right, ast.Constant) and right.value is None and
                               isinstance(left, ast.Name) and (left.id in pointer_names or left.id in scalar_names)
                               and left.id != "num_sms"):
                    raise ExpressionProblem("`is` / `is not` only test a call argument against None, as in "
                                            "bias_ptr is None")
        elif isinstance(node, ast.Name) and not _is_call_name(tree, node):
            if node.id in pointer_names and not _is_none_test(tree, node):
                raise ExpressionProblem(f"pointer {node.id} can only be tested with `is None` / `is not None`")
            if node.id not in scalar_names and node.id not in pointer_names and node.id not in field_names:
                known = ", ".join(sorted(set(scalar_names) | set(pointer_names) | set(field_names))) or "none"
                raise ExpressionProblem(f"unknown name {node.id} (known: {known})")
            if node.id not in names:
                names.append(node.id)
        elif isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, bool)) \
                and node.value is not None:
            raise ExpressionProblem(f"constant {node.value!r} is not allowed (rules compute numbers)")
    return Rule(ast.unparse(tree.body), tuple(names), _is_bool(tree.body))


_PROGRAM_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "div", ast.Mod: "mod"}
_PROGRAM_COMPARE = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}


def rule_program(rule, arg_names, none_names=()):
    """The postfix program of a checked rule (docs/manifest.md, "Rule programs"): names in
    `arg_names` (scalar call arguments) read call arguments, `x is None` tests a pointer (a name not
    in `arg_names`) or a scalar in `none_names` (compiled None too) and is false for the other
    scalars, `num_sms` reads the device, every other name a config field. Conditionals jump, so an
    untaken branch is never evaluated."""
    code = []
    _emit(_parse(rule.text).body, set(arg_names), code, set(none_names))
    return code


def _emit(node, args, code, none_names=frozenset()):
    if isinstance(node, ast.Constant):
        value = node.value
        code.append({"op": "flit", "value": value} if isinstance(value, float) else {"op": "lit", "value": int(value)})
    elif isinstance(node, ast.Name):
        if node.id in args:
            code.append({"op": "arg", "name": node.id})
        elif node.id == "num_sms":
            code.append({"op": "num_sms"})
        else:
            code.append({"op": "field", "name": node.id})
    elif isinstance(node, ast.UnaryOp):
        _emit(node.operand, args, code, none_names)
        if not isinstance(node.op, ast.UAdd):
            code.append({"op": "not" if isinstance(node.op, ast.Not) else "neg"})
    elif isinstance(node, ast.BinOp):
        _emit(node.left, args, code, none_names)
        _emit(node.right, args, code, none_names)
        code.append({"op": _PROGRAM_BINARY[type(node.op)]})
    elif isinstance(node, ast.Call):
        for argument in node.args:
            _emit(argument, args, code, none_names)
        code.append({"op": node.func.id})
    elif isinstance(node, ast.Compare):
        if isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            is_none = isinstance(node.ops[0], ast.Is)
            if node.left.id in args and node.left.id not in none_names:  # a scalar no call passes as None
                code.append({"op": "lit", "value": 0 if is_none else 1})
                return
            code.append({"op": "isnone", "name": node.left.id})
            if not is_none:
                code.append({"op": "not"})
            return
        pairs = [ast.Compare(left, [op], [right])
                 for op, left, right in zip(node.ops, [node.left] + node.comparators, node.comparators)]
        if len(pairs) > 1:  # a < b < c is a < b and b < c
            _emit(ast.BoolOp(ast.And(), pairs), args, code, none_names)
            return
        _emit(node.left, args, code, none_names)
        _emit(node.comparators[0], args, code, none_names)
        code.append({"op": _PROGRAM_COMPARE[type(node.ops[0])]})
    elif isinstance(node, ast.IfExp):
        _emit(node.test, args, code, none_names)
        jump_else = _jump(code, "jz")
        _emit(node.body, args, code, none_names)
        jump_end = _jump(code, "jmp")
        jump_else["to"] = len(code)
        _emit(node.orelse, args, code, none_names)
        jump_end["to"] = len(code)
    else:  # BoolOp: the first operand that decides gives 0 (and) or 1 (or); else the other constant
        decide = "jz" if isinstance(node.op, ast.And) else "jnz"
        jumps = []
        for value in node.values:
            _emit(value, args, code, none_names)
            jumps.append(_jump(code, decide))
        code.append({"op": "lit", "value": 1 if decide == "jz" else 0})
        jump_end = _jump(code, "jmp")
        for jump in jumps:
            jump["to"] = len(code)
        code.append({"op": "lit", "value": 0 if decide == "jz" else 1})
        jump_end["to"] = len(code)


def _jump(code, op):
    instruction = {"op": op, "to": None}
    code.append(instruction)
    return instruction


def run_program(code, values):
    """Evaluates a rule program with `values` (name -> value for args, fields, num_sms; pointer
    names -> None or not): the front end's reference for the runtime's evaluator (tests)."""
    stack, pc = [], 0
    binary = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
              "div": lambda a, b: a // b, "mod": lambda a, b: a % b, "cdiv": cdiv, "min": min, "max": max,
              "eq": lambda a, b: int(a == b), "ne": lambda a, b: int(a != b), "lt": lambda a, b: int(a < b),
              "le": lambda a, b: int(a <= b), "gt": lambda a, b: int(a > b), "ge": lambda a, b: int(a >= b)}
    unary = {"neg": lambda a: -a, "abs": abs, "not": lambda a: int(not a), "next_power_of_2": next_power_of_2}
    while pc < len(code):
        instruction = code[pc]
        op = instruction["op"]
        pc += 1
        if op in ("lit", "flit"):
            stack.append(instruction["value"])
        elif op in ("arg", "field", "num_sms"):
            stack.append(int(values[instruction.get("name", "num_sms")]) if isinstance(
                values[instruction.get("name", "num_sms")], bool) else values[instruction.get("name", "num_sms")])
        elif op == "isnone":
            stack.append(int(values[instruction["name"]] is None))
        elif op in binary:
            right = stack.pop()
            stack.append(binary[op](stack.pop(), right))
        elif op in unary:
            stack.append(unary[op](stack.pop()))
        elif op == "jmp":
            pc = instruction["to"]
        else:  # jz / jnz
            if (stack.pop() == 0) == (op == "jz"):
                pc = instruction["to"]
    assert len(stack) == 1, code
    return stack[0]


def rule_literal_results(rule):
    """The numbers a rule can give as written literals: the whole rule if it is one, else the
    literal branches of its conditionals (`2 if n > 4096 else 0` gives 2 and 0); computed results
    are not listed."""
    def results(node):
        if isinstance(node, ast.IfExp):
            return results(node.body) + results(node.orelse)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and \
                not isinstance(node.value, bool):
            return [node.value]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return [-node.operand.value]
        return []
    return results(_parse(rule.text).body)


def rule_as_filter(field, rule):
    """The filter `field == (rule)` (or the rule itself, for field None) for a rule that reads only
    config fields and pointers' None-ness, known per variant. Pointer tests `x is None` become
    `x.none`."""
    tree = _parse(rule.text)

    class NoneTests(ast.NodeTransformer):
        def visit_Compare(self, node):
            if isinstance(node.ops[0], (ast.Is, ast.IsNot)):
                test = ast.Attribute(ast.Name(node.left.id, ast.Load()), "none", ast.Load())
                return test if isinstance(node.ops[0], ast.Is) else ast.UnaryOp(ast.Not(), test)
            return self.generic_visit(node)

    condition = ast.unparse(NoneTests().visit(tree.body))
    return condition if field is None else f"{field} == ({condition})"


def _is_call_name(tree, name_node):
    return any(isinstance(node, ast.Call) and node.func is name_node for node in ast.walk(tree))


def _is_none_test(tree, name_node):
    return any(isinstance(node, ast.Compare) and node.left is name_node and
               all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) for node in ast.walk(tree))


def _is_bool(node):
    if isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bool)
    if isinstance(node, ast.IfExp):
        return _is_bool(node.body) and _is_bool(node.orelse)
    return False


# ---- grid ----

GRID_CALLS = ("cdiv", "min", "max")
# Facts of the launching device a grid may use (unless an argument or field has the name).
DEVICE_FACTS = ("num_sms",)
_GRID_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "div", ast.Mod: "mod"}


def parse_grid(value, arg_names, value_names):
    """Check one grid entry (an int or an expression string) and return its AST.

    arg_names: int arguments (kept symbolic); value_names: int constexprs and options (folded);
    other names in DEVICE_FACTS are read from the device at launch."""
    if isinstance(value, int) and not isinstance(value, bool):
        return ast.Constant(value)
    tree = _parse(value).body
    facts = [name for name in DEVICE_FACTS if name not in arg_names and name not in value_names]
    _check_grid_node(tree, list(arg_names) + facts, value_names)
    return _DeviceFacts(facts).visit(tree)


def grid_from_python(text):
    """The grid entries a grid written as Python launch code means, or None: `lambda META:
    (triton.cdiv(n, META['BLOCK']),)` and `(triton.cdiv(n, BLOCK), 1)` give ["cdiv(n, BLOCK)"] and
    ["cdiv(n, BLOCK)", "1"]: the lambda's body, the tuple's items, `triton.` / `tl.` left off the
    calls and `META['BLOCK']` read as BLOCK. The entries still need checking."""
    try:
        tree = _parse(text).body
    except ExpressionProblem:
        return None
    meta_names = set()
    if isinstance(tree, ast.Lambda):
        meta_names = {argument.arg for argument in tree.args.args}
        tree = tree.body
    parts = list(tree.elts) if isinstance(tree, (ast.Tuple, ast.List)) else [tree]

    class Plain(ast.NodeTransformer):
        def visit_Attribute(self, node):
            self.generic_visit(node)
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in ("triton", "tl") and node.attr in GRID_CALLS:
                return ast.Name(node.attr, ast.Load())
            return node

        def visit_Subscript(self, node):
            self.generic_visit(node)
            key = node.slice
            if isinstance(node.value, ast.Name) and (node.value.id in meta_names or node.value.id in ("META", "meta")) \
                    and isinstance(key, ast.Constant) and isinstance(key.value, str):
                return ast.Name(key.value, ast.Load())
            return node

    return [ast.unparse(Plain().visit(part)) for part in parts]


class _DeviceFacts(ast.NodeTransformer):
    """Device-fact names become zero-argument calls, which fold to their own grid op."""

    def __init__(self, facts):
        self.facts = facts

    def visit_Name(self, node):
        return ast.Call(ast.Name(node.id, ast.Load()), [], []) if node.id in self.facts else node


def _check_grid_node(node, arg_names, value_names):
    if isinstance(node, ast.Constant):
        if not isinstance(node.value, int) or isinstance(node.value, bool):
            raise ExpressionProblem(f"{describe(node.value)} is not an int literal")
    elif isinstance(node, ast.Name):
        if node.id not in arg_names and node.id not in value_names:
            known = ", ".join(sorted(set(arg_names) | set(value_names))) or "none"
            raise ExpressionProblem(f"unknown name {node.id} (int arguments, constexprs and options: {known})",
                                    unknown_name=node.id)
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
            raise ExpressionProblem("the only calls are cdiv(a, b), min(a, b) and max(a, b); the device's "
                                    "multiprocessor count is num_sms")
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
    if not node.args:  # a device fact
        return [{"op": node.func.id}]
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
