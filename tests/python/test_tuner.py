"""`taot tune`'s bookkeeping with a fake measuring backend (tune_fakes/fake_backend.py): workers as
real processes, one per "GPU"; the journal, resume, the tables in taot's and vLLM's formats, early
stopping, the correctness gate, and candidates that crash or hang their worker."""
import json
import os
import queue
import re
import time
import subprocess
import sys
from pathlib import Path

import pytest

from taot.commands.tune import gpu_list
from taot.errors import TaotError

ROOT = Path(__file__).resolve().parents[2]
FAKES = Path(__file__).resolve().parent / "tune_fakes"

CONFIGS = {f"v{i}": {"BLOCK": block, "num_warps": warps}
           for i, (block, warps) in enumerate((b, w) for b in (16, 32, 64) for w in (4, 8))}
# The fastest candidate per M: v0 at M=1, v3 at 16, v4 at 64, v5 at 256; the others are 1.1x to 3x
# slower, so that some are pruned with the default ratio (1.15).
FACTORS = [1.0, 1.1, 1.5, 2.0, 2.5, 3.0]
BEST = {1: "v0", 16: "v3", 64: "v4", 256: "v5"}


def times():
    table = {}
    for m, best in BEST.items():
        others = [c for c in CONFIGS if c != best]
        table[str(m)] = {best: 0.010 * (1 + m / 64)}
        for candidate, factor in zip(others, FACTORS[1:]):
            table[str(m)][candidate] = 0.010 * (1 + m / 64) * factor
    return table


def manifest():
    return {"schema": "taot.manifest", "schema_version": 2, "library": "fakelib", "kernels": [{
        "name": "moe", "args": [{"name": "a", "kind": "pointer", "dtypes": ["fp16"], "output": True},
                                {"name": "M", "kind": "int", "types": ["i32"]},
                                {"name": "BLOCK", "kind": "constexpr"}],
        "config": [{"name": "BLOCK", "kind": "int", "values": [16, 32, 64], "default": 16},
                   {"name": "num_warps", "kind": "int", "values": [4, 8], "default": 4}],
        "tuning_key": ["M"], "variants": []}]}


@pytest.fixture
def world(tmp_path):
    library = tmp_path / "fakelib"
    library.mkdir()
    (library / "manifest.json").write_text(json.dumps(manifest()))
    plan = {"device": "Fake GPU 80GB", "candidates": [{"id": i, "config": c} for i, c in CONFIGS.items()],
            "times": times()}
    return library, plan, tmp_path


def tune(world, *extra, plan_changes=None, environment=None):
    library, plan, tmp_path = world
    plan = dict(plan, **(plan_changes or {}))
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    environment = dict(os.environ, FAKE_TUNE_PLAN=str(tmp_path / "plan.json"), FAKE_TUNE_LOG=str(tmp_path / "calls.log"),
                       PYTHONPATH=str(ROOT / "python"), **(environment or {}))
    command = [sys.executable, "-m", "taot", "tune", str(library), "--bench", str(FAKES / "bench_fake.py"),
               "--backend", str(FAKES / "fake_backend.py"), "-o", str(tmp_path / "out"), *extra]
    return subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)


def calls(tmp_path):
    log = tmp_path / "calls.log"
    return log.read_text().split("\n")[:-1] if log.exists() else []


def journal_entries(tmp_path):
    return [json.loads(line) for line in (tmp_path / "out" / "moe.journal.jsonl").read_text().splitlines()]


def test_tables_hold_the_fastest_candidate_per_key_on_two_workers(world):
    result = tune(world, "--gpus", "2")
    assert result.returncode == 0, result.stderr
    table = json.loads((world[2] / "out" / "moe.json").read_text())
    assert table["schema"] == "taot.tuning" and table["kernel"] == "moe" and table["device"] == "Fake GPU 80GB"
    assert table["key"] == ["M"]
    chosen = {entry["key"][0]: entry["measured"]["variant"] for entry in table["entries"]}
    assert chosen == BEST
    for entry in table["entries"]:
        assert entry["config"] == CONFIGS[BEST[entry["key"][0]]]  # both fields vary, both are given
    vllm = json.loads((world[2] / "out" / "device_name=Fake_GPU_80GB.json").read_text())
    assert {key: value for key, value in vllm.items() if key != "triton_version"} == \
        {str(m): CONFIGS[best] for m, best in BEST.items()}
    assert "picks the tuned variant for 4 of 4 shapes" in result.stderr
    assert len(re.findall(r"GPU \d \(Fake GPU 80GB\): worker ready in \d+\.\d s \(reading the plan 0\.0 s\)",
                          result.stderr)) == 2
    # Early stopping: the 2x-3x candidates are timed only briefly, unless timed before the best was known.
    full = [line for line in calls(world[2]) if line.endswith("full")]
    assert len(full) < 4 * len(CONFIGS)
    statuses = [e["status"] for e in journal_entries(world[2]) if "result" in e]
    assert statuses.count("ok") + statuses.count("pruned") == 4 * len(CONFIGS) and "pruned" in statuses


def test_one_keys_candidates_are_spread_over_every_worker_and_progress_says_time_left(world):
    many = {f"v{i}": {"BLOCK": 16 * (i + 1), "num_warps": 4} for i in range(40)}
    plan = {"candidates": [{"id": i, "config": c} for i, c in many.items()],
            "times": {"1": {i: 0.010 * (1 + n / 10) for n, i in enumerate(many)}}, "sleep_ms": 20, "wait_for_workers": 2}
    result = tune(world, "--gpus", "2", "--where", "M=1", "--prune-ratio", "0", plan_changes=plan)
    assert result.returncode == 0, result.stderr
    devices = {line.split()[2] for line in calls(world[2])}
    assert devices == {"0", "1"}  # the one key's 40 candidates were timed on both GPUs
    assert re.search(r"\[1/1 keys\] key \[1\]: 40/40 candidates, best 10\.00 us \(v0\); \d+ s elapsed, about \d+ s "
                     r"left \(\d+ candidates/s\)", result.stderr), result.stderr
    # --prune-ratio 0: no quick timing, and the table says 0 (strict JSON: the runtime's reader takes no Infinity)
    assert {line.split()[3] for line in calls(world[2])} == {"full"}
    table = json.loads((world[2] / "out" / "moe.json").read_text(), parse_constant=pytest.fail)
    assert table["measured"]["prune_ratio"] == 0


def test_a_filtered_candidate_has_one_outcome_though_a_chunk_is_sent_before_its_result_arrives(world):
    """The worker that lists a key is sent its first chunk at once: the begin names the filtered
    candidates, so that none is sent and reported filtered a second time."""
    filtered = [[1, "v1"], [16, "v1"], [64, "v2"], [256, "v0"]]
    result = tune(world, "--gpus", "2", plan_changes={"filtered": filtered})
    assert result.returncode == 0, result.stderr
    outcomes = [(entry["task"], entry["result"]) for entry in journal_entries(world[2]) if "result" in entry]
    assert len(outcomes) == len(set(outcomes)) == 4 * len(CONFIGS)
    assert sum(1 for entry in journal_entries(world[2]) if entry.get("status") == "filtered") == 4


def test_the_vllm_json_is_read_back_by_the_tuning_loader(world):
    result = tune(world)
    assert result.returncode == 0, result.stderr
    path = world[2] / "out" / "device_name=Fake_GPU_80GB.json"
    loaded = json.loads(path.read_text())
    assert sorted(int(k) for k in loaded if k != "triton_version") == sorted(BEST)


def test_gate_crash_hang_and_fatal_are_recorded_and_skipped(world):
    changes = {"wrong": [[1, "v0"]], "crash": [[16, "v3"]], "hang": [[64, "v4"]], "fatal": [[256, "v5"]],
               "filtered": [[1, "v1"]], "refused": [[1, "v2"]]}
    result = tune(world, "--candidate-timeout", "3", plan_changes=changes)
    assert result.returncode == 0, result.stderr
    results = {(e["task"], e["result"]): e for e in journal_entries(world[2]) if "result" in e}
    assert results[(0, "v0")]["status"] == "wrong" and "differ" in results[(0, "v0")]["detail"]
    assert results[(0, "v1")]["status"] == "filtered"
    assert results[(1, "v3")]["status"] == "crashed" and "status 9" in results[(1, "v3")]["detail"]
    assert results[(2, "v4")]["status"] == "hung"
    assert results[(3, "v5")]["status"] == "crashed"  # a fatal driver error ends the worker after the report
    assert all(entry["gpu"] == "GPU-fake-0" for entry in results.values())  # every outcome names its GPU's id
    table = json.loads((world[2] / "out" / "moe.json").read_text())
    chosen = {entry["key"][0]: entry["measured"]["variant"] for entry in table["entries"]}
    assert all(chosen[m] != BEST[m] for m in BEST)  # the failed best is never chosen
    assert results[(0, "v2")]["status"] == "error" and "does not accept" in results[(0, "v2")]["detail"]
    assert chosen[1] == "v3"  # v0 wrong, v1 filtered, v2 refused: the next fastest
    assert "restarting" in result.stderr


def test_resume_times_only_what_the_journal_lacks(world):
    assert tune(world).returncode == 0
    path = world[2] / "out" / "moe.journal.jsonl"
    lines = path.read_text().splitlines()
    # Cut the run short inside task 2: drop its later lines and the tasks after it, end on a half line.
    task2_begin = next(i for i, line in enumerate(lines) if '"begin": true' in line and '"task": 2' in line)
    kept = lines[:task2_begin + 4]
    path.write_text("\n".join(kept) + "\n" + lines[task2_begin + 4][:20])
    done_before = {(e["task"], e["result"]) for e in map(json.loads, kept[1:]) if "result" in e}
    (world[2] / "calls.log").unlink()
    again = tune(world)
    assert again.returncode == 1 and "--resume" in again.stderr
    resumed = tune(world, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    timed = {(int(line.split()[0]), line.split()[1]) for line in calls(world[2])}
    m_of = {0: 1, 1: 16, 2: 64, 3: 256}
    assert not {(m_of[task], candidate) for task, candidate in done_before} & timed
    assert {m for m, _ in timed} == {64, 256}
    table = json.loads((world[2] / "out" / "moe.json").read_text())
    assert {entry["key"][0]: entry["measured"]["variant"] for entry in table["entries"]} == BEST


def test_a_run_resumed_under_other_visible_devices_records_each_result_under_the_gpu_that_timed_it(world):
    """The journal names a GPU by its id (the UUID the worker reports), not by its index among the
    visible ones: resumed with CUDA_VISIBLE_DEVICES reversed, worker 0 runs on GPU 1 and says so."""
    assert tune(world, "--gpus", "2", environment={"CUDA_VISIBLE_DEVICES": "0,1"}).returncode == 0
    path = world[2] / "out" / "moe.journal.jsonl"
    lines = path.read_text().splitlines()
    task2_begin = next(i for i, line in enumerate(lines) if '"begin": true' in line and '"task": 2' in line)
    path.write_text("\n".join(lines[:task2_begin + 1]) + "\n")
    (world[2] / "calls.log").unlink()
    resumed = tune(world, "--gpus", "2", "--resume", environment={"CUDA_VISIBLE_DEVICES": "1,0"})
    assert resumed.returncode == 0, resumed.stderr
    timed_on = {}  # the first timing of a candidate is its measurement (a final comparison may follow elsewhere)
    for line in calls(world[2]):
        m, candidate, device, _ = line.split()
        timed_on.setdefault((int(m), candidate), device)
    m_of = {0: 1, 1: 16, 2: 64, 3: 256}  # (keys in flight beside task 2 may have lost results too)
    resumed_results = [e for e in journal_entries(world[2])[task2_begin + 1:] if "result" in e and e["status"] != "filtered"]
    assert 2 in {e["task"] for e in resumed_results}  # (keys answer their begins in any order: 3 may be done)
    for entry in resumed_results:
        assert entry["gpu"] == f"GPU-fake-{timed_on[(m_of[entry['task']], entry['result'])]}", entry


def test_ctrl_c_stops_the_workers_at_once_and_the_journal_resumes(world):
    """Ctrl-C reaches the group: the workers print nothing of their own, the command stops within
    seconds (not after each worker's unit) naming the journal, and --resume finishes the job."""
    import signal
    library, plan, tmp_path = world
    (tmp_path / "plan.json").write_text(json.dumps(dict(plan, sleep_ms=100)))
    environment = dict(os.environ, FAKE_TUNE_PLAN=str(tmp_path / "plan.json"), FAKE_TUNE_LOG=str(tmp_path / "calls.log"),
                       PYTHONPATH=str(ROOT / "python"))
    command = [sys.executable, "-m", "taot", "tune", str(library), "--bench", str(FAKES / "bench_fake.py"),
               "--backend", str(FAKES / "fake_backend.py"), "-o", str(tmp_path / "out"), "--gpus", "2"]
    # (SIGINT's default restored for the command: a pytest-xdist worker ignores it, and an ignored signal
    # stays ignored across exec, where Python then installs no KeyboardInterrupt)
    process = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=environment,
                               start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not calls(tmp_path):
        assert time.monotonic() < deadline and process.poll() is None, process.communicate()
        time.sleep(0.05)
    time.sleep(0.3)
    interrupted_at = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert time.monotonic() - interrupted_at < 5
    assert process.returncode == 130, stderr
    assert stderr.splitlines()[-1] == (f"interrupted: the journal {tmp_path}/out/moe.journal.jsonl keeps what was "
                                       "measured; --resume goes on")
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
    resumed = tune(world, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    table = json.loads((tmp_path / "out" / "moe.json").read_text())
    assert {entry["key"][0]: entry["measured"]["variant"] for entry in table["entries"]} == BEST


def test_resume_on_another_device_is_refused(world):
    assert tune(world).returncode == 0
    result = tune(world, "--resume", plan_changes={"device": "Other GPU"})
    assert result.returncode == 1
    assert "measured on a Fake GPU 80GB" in result.stderr and "--restart" in result.stderr


def test_restart_discards_the_journal(world):
    assert tune(world).returncode == 0
    (world[2] / "calls.log").unlink()
    assert tune(world, "--restart").returncode == 0
    assert len({line.split()[1] for line in calls(world[2])}) == len(CONFIGS)


def test_a_tune_into_a_folder_another_command_holds_waits_or_with_no_wait_names_it(world):
    from taot.compile.output_lock import OutputLock
    with OutputLock(world[2] / "out"):
        busy = tune(world, "--no-wait")
    assert busy.returncode == 1 and "is being built by" in busy.stderr and "drop --no-wait" in busy.stderr
    assert not (world[2] / "out" / "kernel.journal.jsonl").exists() and not calls(world[2])
    assert tune(world).returncode == 0  # released: the next one runs


def test_each_worker_sees_its_own_gpu_of_those_the_caller_sees(world):
    result = tune(world, "--gpus", "2")
    assert result.returncode == 0, result.stderr
    assert "GPU 0 (Fake GPU 80GB): worker ready in" in result.stderr
    assert "GPU 1 (Fake GPU 80GB): worker ready in" in result.stderr
    log = world[2] / "calls.log.devices"
    assert sorted(log.read_text().split()) == ["0", "1"]
    log.unlink()
    library, plan, tmp_path = world
    os.environ["CUDA_VISIBLE_DEVICES"] = "GPU-5c1d,GPU-77ab,GPU-0e42"
    try:
        assert tune(world, "--gpus", "0,2", "--restart").returncode == 0
    finally:
        del os.environ["CUDA_VISIBLE_DEVICES"]
    assert sorted(log.read_text().split()) == ["GPU-0e42", "GPU-5c1d"]


@pytest.fixture(scope="module")
def fake_driver(tmp_path_factory):
    """A folder holding a fake libcuda.so.1 (tune_fakes/fake_libcuda.c), for LD_LIBRARY_PATH."""
    folder = tmp_path_factory.mktemp("driver")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(folder / "libcuda.so.1"), str(FAKES / "fake_libcuda.c")],
                   check=True)
    return folder


@pytest.mark.parametrize("environment, answer", [
    ({"FAKE_GPU_COUNT": "3"}, "3"),
    ({"FAKE_CUINIT": "100"}, "0"),  # a driver and no GPU
    ({"FAKE_CUINIT": "999"}, "TaotError: the CUDA driver failed to start: error 999 (CUDA_ERROR_UNKNOWN)"),
    ({"FAKE_CUINIT": "34"}, "TaotError: the CUDA driver failed to start: error 34"),
])
def test_the_gpu_count_is_the_drivers(fake_driver, environment, answer):
    program = ("from taot.measure import tuner\ntry:\n    print(tuner.visible_gpu_count())\n"
               "except Exception as error:\n    print(f'{type(error).__name__}: {error}')")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True,
                            env=dict(os.environ, **environment, LD_LIBRARY_PATH=str(fake_driver),
                                     PYTHONPATH=str(ROOT / "python")))
    assert result.stdout.strip() == answer


@pytest.mark.parametrize("text, count, expected", [
    ("all", 3, [0, 1, 2]), ("2", 3, [0, 1]), ("0,2", 3, [0, 2]), ("1,1", 2, [1]), ("0,", 1, [0]),
    ("5", None, [0, 1, 2, 3, 4]),
])
def test_gpu_lists(text, count, expected):
    assert gpu_list(text, count) == expected


@pytest.mark.parametrize("text, count, message", [
    ("all", 0, "--gpus all: the CUDA driver sees no GPU"),
    ("3", 2, "--gpus 3: 3 GPUs asked, but the CUDA driver sees 2 (indices 0 to 1)"),
    ("0,5", 2, "--gpus 0,5: GPU 5 asked, but the CUDA driver sees 2 (indices 0 to 1)"),
    ("0", 2, "--gpus 0: a count of GPUs must be 1 or more (GPU 0 alone: --gpus 0,)"),
    ("1", 0, "--gpus 1: 1 GPU asked, but the CUDA driver sees none"),
    ("a,b", 2, "--gpus a,b: expected all, a count, or GPU indices, comma-separated"),
])
def test_gpu_list_errors_name_the_value_and_what_the_driver_sees(text, count, message):
    with pytest.raises(TaotError) as error:
        gpu_list(text, count)
    assert str(error.value).startswith(message)


def test_usage_errors(world):
    for option, value in (("--prune-ratio", "0.5"), ("--prune-ratio", "inf"), ("--prune-ratio", "nan"),
                          ("--rep-ms", "inf"), ("--quick-ms", "nan")):
        result = tune(world, option, value)
        assert result.returncode == 2 and f"{option} {value}" in result.stderr, (option, value, result.stderr)
    result = tune(world, "--gpus", "x")
    assert result.returncode == 1 and "--gpus x" in result.stderr
    result = tune(world, "--kernel", "nope")
    assert result.returncode == 1 and "nope" in result.stderr


def test_where_tunes_some_shapes_and_a_journal_of_others_is_refused(world):
    result = tune(world, "--where", "M=16,256")
    assert result.returncode == 0, result.stderr
    table = json.loads((world[2] / "out" / "moe.json").read_text())
    assert {entry["key"][0]: entry["measured"]["variant"] for entry in table["entries"]} == {16: "v3", 256: "v5"}
    again = tune(world, "--resume", "--where", "M=1")
    assert again.returncode == 1 and "the journal is of another run (shapes" in again.stderr


# ---- the coordinator in-process, with scripted workers: which GPU measures what is fixed ----

class ScriptedWorker:
    """Stands in for a worker process: answers each request at once, timing candidate c at
    TRUE_MS[c] x the speed of its GPU (GPU 1 runs 6% slow)."""
    SPEED = {0: 1.0, 1: 1.06}
    TRUE_MS = {"c1": 1.02, "c2": 1.5, "c3": 2.0, "c0": 1.00, "c4": 2.5, "c5": 3.0}  # listed in this order
    sent = []

    def __init__(self, gpu, settings, messages):
        self.gpu, self.messages, self.process = gpu, messages, object()
        self.restarts, self.unit, self.running, self.launched_at = 0, None, None, time.monotonic()
        self.messages.put((self, self.process, {"ready": {"device": "Scripted GPU"}}))

    def reply(self, message):
        self.messages.put((self, self.process, message))

    def ms(self, candidate):
        return self.TRUE_MS[candidate] * self.SPEED[self.gpu]

    def send(self, request):
        ScriptedWorker.sent.append((self.gpu, request))
        if "begin" in request:
            self.reply({"begin": request["begin"], "key": [1],
                        "candidates": [{"id": c, "config": {"C": c}} for c in self.TRUE_MS]})
        elif "measure" in request:
            for candidate in request["candidates"]:
                self.reply({"task": request["measure"], "result": candidate, "status": "ok",
                            "median_ms": self.ms(candidate), "samples": 10})
            self.reply({"measured": request["measure"]})
        elif "final" in request:  # as tune_worker's Session: a start per leader and round, no result of their own
            for _ in range(request["rounds"]):
                for candidate in request["leaders"]:
                    self.reply({"task": request["final"], "start": candidate})
            self.reply({"final": request["final"], "times": {c: self.ms(c) for c in request["leaders"]}})

    def stop(self):
        pass

    def kill(self):
        pass


def run_scripted(tmp_path, monkeypatch, resume=False, worker=ScriptedWorker, shapes=({"M": 1},), said=None):
    from taot.measure import tuner
    monkeypatch.setattr(tuner, "_Worker", worker)
    ScriptedWorker.sent = []
    header = {"schema": tuner.JOURNAL_SCHEMA, "library": "fakelib", "kernel": "moe", "key": ["M"],
              "shapes": list(shapes)}
    journal = tuner.Journal(tmp_path / "moe.journal.jsonl", header, resume)
    say = (lambda line: None) if said is None else said.append
    coordinator = tuner.Coordinator({}, list(shapes), journal, tuner.TuneOptions([0, 1], 60.0), say)
    coordinator.run()
    journal.close()
    # Nothing left looking busy: a worker still "running" a leader would be killed as hung once idle.
    assert all(worker.running is None and worker.unit is None for worker in coordinator.workers)
    return journal


def test_a_keys_leaders_are_compared_again_on_one_gpu(tmp_path, monkeypatch):
    """c1 (GPU 0) looks faster than c0 (GPU 1, 6% slow) when each is timed where its chunk went; the
    final comparison times both on one GPU and chooses c0, the faster."""
    from taot.measure.tuner import best_result
    journal = run_scripted(tmp_path, monkeypatch)
    chunks = {gpu: request["candidates"] for gpu, request in ScriptedWorker.sent if "measure" in request}
    assert chunks == {0: ["c1", "c2", "c3"], 1: ["c0", "c4", "c5"]}
    state = journal.tasks[0]
    assert min((r for r in state["results"].values()), key=lambda r: r["median_ms"])["result"] == "c1"
    finals = [(gpu, request) for gpu, request in ScriptedWorker.sent if "final" in request]
    assert len(finals) == 1 and sorted(finals[0][1]["leaders"]) == ["c0", "c1"]  # c2 is 1.5x: not a leader
    assert finals[0][0] == 0  # on the GPU that listed the key
    assert state["chosen"] == "c0" and best_result(state)["result"] == "c0" and state["done"]


def test_a_run_stopped_before_a_keys_final_comparison_resumes_with_it_alone(tmp_path, monkeypatch):
    run_scripted(tmp_path, monkeypatch)
    path = tmp_path / "moe.journal.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(line for line in lines if '"final"' not in line and '"end"' not in line) + "\n")
    journal = run_scripted(tmp_path, monkeypatch, resume=True)
    assert [next(iter(request)) for _, request in ScriptedWorker.sent] == ["final"]
    assert journal.tasks[0]["chosen"] == "c0"


class CrowdedWorker(ScriptedWorker):
    """GPU 0's chunk holds ten configs within 2% of each other; the true best, c0, is in GPU 1's chunk,
    and GPU 1 runs 8% slow: by the medians alone c0 is 1.07x the best, past the 5% span."""
    SPEED = {0: 1.0, 1: 1.08}
    TRUE_MS = {**{f"c{i}": 1.0 + i / 1000 for i in range(1, 11)}, "c0": 1.00,
               **{f"c{i}": 2.0 + i / 1000 for i in range(11, 20)}}


def test_each_gpus_leaders_are_compared_and_medians_of_two_gpus_are_not(tmp_path, monkeypatch):
    journal = run_scripted(tmp_path, monkeypatch, worker=CrowdedWorker)
    chunks = {gpu: request["candidates"] for gpu, request in ScriptedWorker.sent if "measure" in request}
    assert chunks[0] == [f"c{i}" for i in range(1, 11)] and chunks[1][0] == "c0"
    assert all(result["gpu"] == (0 if result["result"] in chunks[0] else 1)
               for result in journal.tasks[0]["results"].values())
    (final,) = [request for _, request in ScriptedWorker.sent if "final" in request]
    # GPU 0's best, GPU 1's best, GPU 0's second, ...: GPU 1's others are 2x its best, not leaders.
    assert final["leaders"] == ["c1", "c0", "c2", "c3", "c4", "c5", "c6", "c7"]
    assert journal.tasks[0]["chosen"] == "c0"


def test_a_chunk_is_pruned_against_the_best_of_its_own_gpu(tmp_path, monkeypatch):
    """A GPU's later chunks carry the best of what that GPU timed before (GPU 1's medians are all 8%
    above GPU 0's)."""
    from taot.measure import tuner
    monkeypatch.setattr(tuner, "CHUNK", 5)
    journal = run_scripted(tmp_path, monkeypatch, worker=CrowdedWorker)
    measures = [(gpu, request) for gpu, request in ScriptedWorker.sent if "measure" in request]
    assert [(gpu, request["best"]) for gpu, request in measures[:2]] == [(0, None), (1, None)]  # sent at once
    results = journal.tasks[0]["results"]
    timed = {gpu: [results[c]["median_ms"] for c in request["candidates"]] for gpu, request in measures[:2]}
    for gpu, request in measures[2:]:  # a GPU is sent its next chunk once its last one's results are in
        assert request["best"] == min(timed[gpu]), (gpu, request)
        timed[gpu] += [results[c]["median_ms"] for c in request["candidates"]]
    assert {gpu for gpu, request in measures[2:]} == {0, 1}


def test_leaders_come_from_every_gpu_in_a_fixed_order_and_a_gpu_without_fast_ones_gives_none(tmp_path, monkeypatch):
    """GPU 1's chunk holds only configs 2x the best: it timed none of the leading candidates."""
    journal = run_scripted(tmp_path, monkeypatch, worker=SlowChunkWorker)
    (final,) = [request for _, request in ScriptedWorker.sent if "final" in request]
    assert final["leaders"] == ["c0", "c1", "c2"] and journal.tasks[0]["chosen"] == "c0"


class SlowChunkWorker(ScriptedWorker):
    SPEED = {0: 1.0, 1: 1.0}
    TRUE_MS = {"c0": 1.0, "c1": 1.01, "c2": 1.02, "c3": 2.0, "c4": 2.01, "c5": 2.02}


def test_each_worker_measures_keys_of_its_own_and_compares_their_leaders_itself(tmp_path, monkeypatch):
    """Four keys on two GPUs: each GPU lists a key and measures it alone while keys nobody has listed
    are left, so that a key's arguments are made on one GPU; its final comparison runs on that GPU."""
    from taot.measure import tuner
    monkeypatch.setattr(tuner, "CHUNK", 2)
    said = []
    journal = run_scripted(tmp_path, monkeypatch, shapes=[{"M": m} for m in (1, 2, 3, 4)], said=said)
    home = {request["begin"]: gpu for gpu, request in ScriptedWorker.sent if "begin" in request}
    assert sorted(home) == [0, 1, 2, 3] and set(home.values()) == {0, 1}
    for gpu, request in ScriptedWorker.sent:
        task = next(request[kind] for kind in ("begin", "measure", "final") if kind in request)
        if "measure" in request and task < 2:  # keys listed while others were left: measured at home
            assert gpu == home[task], (gpu, request)
        if "final" in request:
            assert gpu == home[task], (gpu, request)
    assert all(journal.tasks[task]["chosen"] == "c0" for task in range(4))
    usage = [line for line in said if re.match(r"GPU \d: \d+ candidates, \d+ final comparisons; busy", line)]
    assert len(usage) == 2
    assert sum(int(line.split()[2]) for line in usage) == 4 * len(ScriptedWorker.TRUE_MS)


def test_a_worker_with_no_key_left_to_list_shares_the_key_with_the_most_left(tmp_path, monkeypatch):
    from taot.measure import tuner
    monkeypatch.setattr(tuner, "CHUNK", 2)
    journal = run_scripted(tmp_path, monkeypatch, shapes=[{"M": 1}])
    chunks = [(gpu, request["candidates"]) for gpu, request in ScriptedWorker.sent if "measure" in request]
    assert {gpu for gpu, _ in chunks} == {0, 1}  # one key: both GPUs measure it
    measured = [c for _, chunk in chunks for c in chunk]
    assert sorted(measured) == sorted(ScriptedWorker.TRUE_MS)  # each candidate once
    assert journal.tasks[0]["chosen"] == "c0"


class _Recorded:
    """Stands in for RealBackend._begin: counts the shapes it is asked to enter."""

    def __init__(self):
        self.entered = []

    def __call__(self, shape):
        self.entered.append(shape)
        return f"cache {shape}", ([shape], [], [])


def test_the_backend_keeps_the_shapes_it_entered_last():
    """A worker going back to a key (its final comparison after starting the next key) does not make
    its arguments and reference again; the oldest of more than KEPT_SHAPES is dropped."""
    from taot.measure.tuner import KEPT_SHAPES, RealBackend
    backend = object.__new__(RealBackend)  # no torch, no GPU: only the bookkeeping of begin()
    backend.kept, backend._begin = {}, _Recorded()
    assert KEPT_SHAPES == 2
    for shape in ("a", "b", "a", "b", "c", "b", "a"):
        assert backend.begin(shape) == ([shape], [], []) and backend.cache == f"cache {shape}"
        assert backend.shape == shape
    assert backend._begin.entered == ["a", "b", "c", "a"]  # "a" dropped when "c" came; "b" kept


class _StandIn:
    """A worker as the coordinator's scheduling sees it (hashable, as workers are)."""

    def __init__(self, gpu):
        self.gpu, self.unit, self.running, self.restarts = gpu, None, None, 0

    def send(self, request):
        pass

    def start(self):
        pass


def _coordinator_at(tmp_path, shapes):
    """A coordinator with two stand-in workers, both ready and free, for stepping _next_unit by hand."""
    from taot.measure import tuner
    header = {"schema": tuner.JOURNAL_SCHEMA, "library": "fakelib", "kernel": "moe", "key": ["M"], "shapes": shapes}
    journal = tuner.Journal(tmp_path / "moe.journal.jsonl", header, False)
    coordinator = tuner.Coordinator({}, shapes, journal, tuner.TuneOptions([0, 1], 60.0), lambda line: None)
    workers = [_StandIn(gpu) for gpu in (0, 1)]
    coordinator.workers, coordinator.ready = workers, set(workers)
    return coordinator, journal, workers


def _measured(journal, task, times, gpu):
    journal.write({"task": task, "begin": True, "key": [task], "candidates": [{"id": c, "config": {}} for c in times]})
    for candidate, ms in times.items():
        journal.write({"task": task, "result": candidate, "status": "ok", "median_ms": ms, "gpu": gpu})


def test_a_keys_final_goes_to_another_gpu_when_the_gpu_that_listed_it_was_left_out(tmp_path):
    """A restarted worker that came back on another kind of device is skipped: the keys it listed are
    compared elsewhere, not waited for."""
    coordinator, journal, (first, second) = _coordinator_at(tmp_path, [{"M": 1}])
    _measured(journal, 0, {"c0": 1.0, "c1": 1.01}, gpu=1)
    plan = coordinator.plans[0]
    plan.remaining, plan.begin_sent, plan.home = [], True, second
    assert coordinator._next_unit(first) is None  # its home is there: the final waits for it
    coordinator.skipped.add(second)
    unit = coordinator._next_unit(first)
    assert unit["final"] == 0 and sorted(unit["leaders"]) == ["c0", "c1"] and plan.home is first


def test_keys_the_resumed_run_listed_are_taken_up_before_new_keys_are_listed(tmp_path):
    coordinator, journal, (first, second) = _coordinator_at(tmp_path, [{"M": 1}, {"M": 2}])
    _measured(journal, 0, {}, gpu=0)
    coordinator.plans[0].remaining = ["c0", "c1", "c2"]  # listed by the run resumed, nobody's home
    unit = coordinator._next_unit(first)
    assert unit["measure"] == 0 and coordinator.plans[0].home is first
    assert coordinator._next_unit(second)["begin"] == 1  # key 0 is first's now: second lists the next


def test_a_restarted_worker_goes_on_with_the_key_it_was_measuring(tmp_path):
    from taot.measure import tuner
    coordinator, journal, (first, second) = _coordinator_at(tmp_path, [{"M": 1}, {"M": 2}])
    _measured(journal, 0, {}, gpu=0)
    every = [f"c{i}" for i in range(40)]
    coordinator.plans[0].remaining, coordinator.plans[0].home = list(every), first
    coordinator.holding[first] = 0  # it listed key 0; key 1 is not listed yet
    coordinator._assign(first)
    assert first.unit["measure"] == 0 and first.unit["candidates"] == every[:tuner.CHUNK]  # its own: a whole chunk
    coordinator._worker_exited(first, 9, coordinator.ready)
    assert coordinator.plans[0].remaining == every  # its chunk came back
    coordinator.ready.add(first)
    assert coordinator._next_unit(first)["measure"] == 0  # not the listing of key 1


class _Crowded(_Recorded):
    """Stands in for RealBackend._begin on a GPU with room for one shape: a second one fails for
    memory while another is kept."""

    def __init__(self, backend):
        super().__init__()
        self.backend = backend

    def __call__(self, shape):
        if self.backend.kept:
            raise MemoryError("CUDA out of memory")
        return super().__call__(shape)


def test_a_shape_that_does_not_fit_beside_the_kept_ones_is_entered_alone():
    from types import SimpleNamespace
    from taot.measure.tuner import RealBackend
    backend = object.__new__(RealBackend)
    emptied = []
    backend.torch = SimpleNamespace(cuda=SimpleNamespace(OutOfMemoryError=MemoryError,
                                                         empty_cache=lambda: emptied.append(True)))
    backend.kept = {}
    backend._begin = _Crowded(backend)
    assert backend.begin("a") == (["a"], [], []) and backend.begin("b") == (["b"], [], [])
    assert list(backend.kept) == ["b"] and backend.cache == "cache b" and emptied == [True]
