# bench/tune_agreement.py without a GPU: two runs' folders written as taot tune writes them (a table and
# a journal), each run's choices judged in the other by its final comparison, by the medians of the GPU
# that timed it, or by its quick time where it was pruned; and the exit status for runs of other keys.
import importlib.util
import json

from conftest import REPO

_spec = importlib.util.spec_from_file_location("tune_agreement", REPO / "bench" / "tune_agreement.py")
script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(script)


def write_run(folder, keys):
    """keys: {M: (chosen id, {id: (status, ms, gpu)}, {id: final ms} or None)}."""
    folder.mkdir()
    table = {"entries": [{"key": [m], "config": {}, "measured": {"variant": chosen}}
                         for m, (chosen, _, _) in keys.items()]}
    (folder / "k.json").write_text(json.dumps(table))
    lines = [{"header": {}}]
    for task, (m, (_, results, final)) in enumerate(keys.items()):
        lines.append({"task": task, "begin": True, "key": [m], "candidates": [{"id": c, "config": {}} for c in results]})
        lines += [{"task": task, "result": c, "status": status, "median_ms": ms, "gpu": gpu}
                  for c, (status, ms, gpu) in results.items()]
        if final:
            lines.append({"task": task, "final": final, "chosen": min(final, key=final.get), "gpu": 0})
    (folder / "k.journal.jsonl").write_text("\n".join(map(json.dumps, lines)) + "\n" + '{"task": 0, "res')


def test_choices_are_judged_by_finals_then_by_their_own_gpus_medians_then_by_quick_times(tmp_path, capsys):
    write_run(tmp_path / "a", {1: ("x", {}, None), 2: ("y", {}, None), 4: ("z", {}, None), 8: ("w", {}, None)})
    write_run(tmp_path / "b", {
        1: ("v", {"v": ("ok", 1.0, 0), "x": ("ok", 1.01, 0)}, {"v": 1.0, "x": 1.01}),   # final: 1.010
        # y timed on GPU 1, which runs 6% slow: against GPU 1's best (1.06), not GPU 0's (1.0)
        2: ("v", {"v": ("ok", 1.0, 0), "y": ("ok", 1.07, 1), "u": ("ok", 1.06, 1)}, None),
        4: ("v", {"v": ("ok", 1.0, 0), "z": ("pruned", 1.3, 0)}, None),                 # quick: 1.300
        8: ("v", {"v": ("ok", 1.0, 0), "w": ("wrong", None, 0)}, None)})
    assert script.main([str(tmp_path / "a"), str(tmp_path / "b"), "--kernel", "k", "--names", "A", "B"]) == 0
    out = capsys.readouterr().out
    assert "the same config chosen for 0 of 4 keys" in out
    assert "A choices in the B run: 3 of 4 timed there, worst 1.300x its best (key [4], judged by its pruned " \
           "time; target 1.02); within 1.02: 2 of 3" in out
    assert "key [8]: not judged (wrong)" in out
    run_b = script.Run(tmp_path / "b", "k")
    assert round(run_b.ratio((2,), "y")[0], 4) == round(1.07 / 1.06, 4)
    assert run_b.ratio((1,), "x") == (1.01, "final")


def test_a_run_of_other_keys_fails_unless_it_is_a_subset_given_as_one(tmp_path, capsys):
    write_run(tmp_path / "full", {1: ("x", {"x": ("ok", 1.0, 0)}, None), 2: ("y", {"y": ("ok", 1.0, 0)}, None)})
    write_run(tmp_path / "some", {2: ("y", {"y": ("ok", 1.0, 0), "q": ("ok", 1.5, 1)}, None)})
    arguments = [str(tmp_path / "full"), str(tmp_path / "some"), "--kernel", "k"]
    assert script.main(arguments) == 1
    assert "the runs tuned different keys: [(1,)]" in capsys.readouterr().out
    assert script.main(arguments + ["--subset"]) == 0
    assert "run A choices in the run B run: 1 of 1 timed there, worst 1.000x" in capsys.readouterr().out
    assert script.main([str(tmp_path / "full"), str(tmp_path / "nowhere")]) == 2
    journal = tmp_path / "some" / "k.journal.jsonl"
    lines = journal.read_text().split("\n")
    journal.write_text("\n".join(lines[:2] + ["{not json"] + lines[2:]))  # damaged inside, not cut short
    assert script.main(arguments) == 2
    assert f"{journal}:3: not a JSON line" in capsys.readouterr().err
