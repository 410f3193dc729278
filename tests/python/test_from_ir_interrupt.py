"""Ctrl-C during from-ir's gen step: the manifest already has the change and the generated sources may
not, so the interruption says which command brings them in step."""
import argparse
import json
import shutil

import pytest

from conftest import REPO
from taot.commands import build, from_ir


def test_an_interrupted_gen_step_names_the_gen_command(tmp_path, monkeypatch):
    manifest = tmp_path / "manifest.json"
    shutil.copy(REPO / "tests/fuzz/corpus/valid_noop.json", manifest)
    (tmp_path / f"{json.loads(manifest.read_text())['library']}_python.cpp").write_text("")

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "run_gen", interrupted)
    arguments = argparse.Namespace(quiet=True, json=False, tuning=[])
    with pytest.raises(KeyboardInterrupt) as caught:
        from_ir._regenerate(tmp_path, arguments, lambda line: None)
    assert str(caught.value) == (f"manifest.json has the change, the generated sources may not: run taot gen "
                                 f"{manifest} -o {tmp_path} --python")
