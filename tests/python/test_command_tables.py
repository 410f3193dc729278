"""The taot binary's command table (tools/taot/commands.cpp) and the front end's (python/taot/cli.py)
agree: every command the binary forwards to Python (no C++ declare function) is one cli.py runs, and
every command cli.py runs is in the binary's table, so `taot --help` lists it."""
import importlib
import re

from conftest import REPO

from taot import cli

TABLE = REPO / "tools" / "taot" / "commands.cpp"
# {"name", "summary", declare_function_or_nullptr},  (the summary may continue on the next line)
ROW = re.compile(r'\{"([\w-]+)",\s*"(?:[^"\\]|\\.)*",\s*(\w+)\}', re.S)


def binary_commands():
    """name -> the C++ declare function, or None for a command forwarded to Python."""
    text = TABLE.read_text()
    body = text[text.index("kCommands[] = {"):]
    body = body[:body.index("\n};")]
    rows = {name: None if declare == "nullptr" else declare for name, declare in ROW.findall(body)}
    assert len(rows) == body.count('{"'), "tools/taot/commands.cpp: a row this test cannot read"
    return rows


def test_the_commands_the_binary_forwards_are_the_front_ends():
    forwarded = {name for name, declare in binary_commands().items() if declare is None}
    assert forwarded == set(cli.COMMANDS)


def test_every_front_end_command_has_a_module_with_run():
    for name, module in cli.COMMANDS.items():
        loaded = importlib.import_module(module)
        assert callable(getattr(loaded, "run", None)), name
