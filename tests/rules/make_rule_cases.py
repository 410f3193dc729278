"""Writes tests/rules/rule_cases.json: rule programs as the front end compiles them, with argument
and field values and the result Python gives for the rule's text. The runtime's unit tests evaluate
every case with the C++ evaluator; tests/python/test_rules.py checks this file is up to date.

    python3 tests/rules/make_rule_cases.py
"""
import itertools
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from taot.spec.expressions import cdiv, next_power_of_2, parse_rule, rule_program  # noqa: E402

SCALARS = ["n", "m", "scale", "flag", "num_sms"]
POINTERS = ["bias"]
FIELDS = ["BLOCK", "WARPS", "EVEN"]
RULES = [
    "next_power_of_2(n)",
    "max(256, next_power_of_2(n))",
    "8 if BLOCK >= 2048 else 4",
    "n % BLOCK == 0",
    "n <= BLOCK",
    "cdiv(n, BLOCK) * BLOCK - n",
    "min(n, num_sms * 4)",
    "n // m if m != 0 else -1",
    "m != 0 and n % m == 0",
    "m == 0 or n // m > 2",
    "not flag and bias is None",
    "bias is not None",
    "-n + abs(m - 7) * 3",
    "0 < n <= BLOCK < 4096",
    "n * scale > 100.5",
    "scale if flag else 0.5",
    "(n - 1) // -3 + (n % -5)",
    "EVEN and WARPS == 4 or BLOCK > n",
]
NS = [0, 1, 7, 16, 100, 1000, 2048, 5000, -9]
MS = [0, 3, -4]


def python_value(text, values):
    namespace = dict(values, next_power_of_2=next_power_of_2, cdiv=cdiv, min=min, max=max, abs=abs)
    result = eval(text, {"__builtins__": {}}, namespace)
    return int(result) if isinstance(result, bool) else result


def cases():
    out = []
    for text in RULES:
        rule = parse_rule(text, SCALARS, POINTERS, FIELDS)
        program = rule_program(rule, SCALARS)
        runs = []
        for n, m, flag, bias, block in itertools.product(NS, MS, [False, True], [None, 1], [256, 4096]):
            values = {"n": n, "m": m, "scale": 0.75, "flag": flag, "num_sms": 132, "bias": bias, "BLOCK": block,
                      "WARPS": 4, "EVEN": n % 16 == 0}
            expected = python_value(text, values)
            runs.append([n, m, int(flag), int(bias is None), block, int(values["EVEN"]), expected])
        out.append({"rule": rule.text, "program": program, "runs": runs})
    return {"constants": {"scale": 0.75, "num_sms": 132, "WARPS": 4},
            "run_columns": ["n", "m", "flag", "bias_is_none", "BLOCK", "EVEN", "result"], "cases": out}


def render():
    data = cases()
    lines = [json.dumps({key: value for key, value in data.items() if key != "cases"}, sort_keys=True)[:-1] +
             ', "cases": [']
    for number, case in enumerate(data["cases"]):
        comma = "," if number + 1 < len(data["cases"]) else ""
        lines.append(json.dumps(case, sort_keys=True, separators=(",", ":")) + comma)
    return "\n".join(lines) + "\n]}\n"


if __name__ == "__main__":
    (Path(__file__).parent / "rule_cases.json").write_text(render())
