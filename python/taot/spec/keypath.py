# Walking a parsed spec with key paths, so every problem names file, key and expectation.
import json

from ..errors import SpecError


def describe(value):
    """A short, TOML-flavoured rendering of a value for 'got ...' in messages."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, (list, tuple)):
        text = "[" + ", ".join(describe(item) for item in value) + "]"
        return text if len(text) <= 60 else "a list of " + str(len(value)) + " values"
    return "a " + type(value).__name__


def one_of(choices):
    """'1, 16 or "none"' for [1, 16, "none"]."""
    rendered = [describe(choice) for choice in choices]
    if len(rendered) == 1:
        return rendered[0]
    return ", ".join(rendered[:-1]) + " or " + rendered[-1]


def is_list(value):
    return isinstance(value, (list, tuple))


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


class Node:
    """A value inside the spec together with the file it came from and its key path."""

    def __init__(self, file, path, value):
        self.file = file
        self.path = path
        self.value = value

    def key(self, name):
        path = f"{self.path}.{name}" if self.path else name
        value = self.value.get(name) if isinstance(self.value, dict) else None
        return Node(self.file, path, value)

    def item(self, index):
        return Node(self.file, f"{self.path}[{index}]", self.value[index])

    def items(self):
        return [self.item(index) for index in range(len(self.value))]

    def error(self, expected, got=None):
        return SpecError(self.file, self.path, expected, describe(self.value) if got is None else got)

    def missing(self, expected):
        return SpecError(self.file, self.path, expected, "nothing (the key is missing)")

    def table(self, expected, allowed, required=()):
        """Check this is a table whose keys are all in `allowed` and include every `required` key."""
        if not isinstance(self.value, dict):
            raise self.error(expected) if self.present() else self.missing(expected)
        for name in self.value:
            if name not in allowed:
                raise self.key(name).error("one of the keys " + ", ".join(allowed), "an unknown key")
        for name in required:
            if name not in self.value:
                raise self.key(name).missing(allowed[name])
        return self

    def present(self):
        return self.value is not None

    def string(self, expected):
        if not isinstance(self.value, str) or not self.value:
            raise self.error(expected)
        return self.value

    def value_list(self, expected):
        """Nodes for a non-empty list of values; a single value counts as a list of one."""
        if not is_list(self.value):
            return [self]
        if len(self.value) == 0:
            raise self.error(f"a non-empty list of {expected}", "an empty list")
        nodes = self.items()
        seen = []
        for node in nodes:
            if any(type(node.value) is type(earlier) and node.value == earlier for earlier in seen):
                raise node.error(f"no duplicate values in {self.path}", f"{describe(node.value)} again")
            seen.append(node.value)
        return nodes
