# Write a spec (the tables spec.py validates) as TOML text, with comments: what taot writes for the
# user to go on from (taot import-cache). Only the shapes a spec uses: scalars, lists, inline tables.
import json
import math
import re

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def one_or_list(values):
    """A spec value: the one value alone, else the list."""
    values = list(values)
    return values[0] if len(values) == 1 else values


def unique(values):
    """`values` without repeats, in order (True stays apart from 1)."""
    seen, kept = set(), []
    for value in values:
        key = json.dumps(value, sort_keys=True, separators=(",", ":")) + type(value).__name__
        if key not in seen:
            seen.add(key)
            kept.append(value)
    return kept


def render_spec(library, kernels, header=()):
    """TOML text of a spec: `library` is the [library] table; `kernels` a list of (table, comments,
    arg_comments), each table a [[kernel]] dict whose "args", "options" and "default" become
    sub-tables, `comments` lines written above it and `arg_comments` name -> lines written above that
    argument (or in place of it, for an argument the table leaves out)."""
    lines = [f"# {line}" if line else "#" for line in header]
    if lines:
        lines.append("")
    lines.append("[library]")
    lines += [f"{key_text(key)} = {value_text(value)}" for key, value in library.items()]
    for table, comments, arg_comments in kernels:
        lines.append("")
        lines += [f"# {line}" if line else "#" for line in comments]
        lines.append("[[kernel]]")
        subtables = {key: table[key] for key in ("args", "options", "default") if key in table}
        lines += [f"{key_text(key)} = {value_text(value)}" for key, value in table.items() if key not in subtables]
        pending = dict(arg_comments)
        for key, values in subtables.items():
            lines += ["", f"[kernel.{key}]"]
            for name, value in values.items():
                if key == "args":
                    lines += [f"# {line}" for line in pending.pop(name, ())]
                lines.append(f"{key_text(name)} = {value_text(value)}")
            if key == "args":
                for name in list(pending):
                    lines += [f"# {line}" for line in pending.pop(name)]
    return "\n".join(lines) + "\n"


def key_text(key):
    return key if _BARE_KEY.fullmatch(key) else json.dumps(key)


def value_text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        if "\n" in value and "'''" not in value:
            return f"'''{value}'''"  # a literal string: the text exactly, newlines kept
        return json.dumps(value)     # JSON's escapes are TOML's
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(item) for item in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{key_text(key)} = {value_text(item)}" for key, item in value.items()) + " }"
    raise TypeError(f"a spec holds no {type(value).__name__} values")
