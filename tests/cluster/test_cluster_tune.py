"""`taot tune --cluster ADDRESS` with the tuner tests' fake measuring backend on a local Ray cluster whose
nodes declare GPUs: one worker (a Ray actor) per GPU, a key's candidates measured on every node of
the device tuned, a node with another kind of GPU named and not used (also when Ray places the first
worker there: the final comparisons go to the first worker on the device tuned), and the table the
fastest candidate per key."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FAKES = ROOT / "tests" / "python" / "tune_fakes"
sys.path.insert(0, str(ROOT / "tests" / "python"))
from test_tuner import BEST, CONFIGS, manifest, times  # noqa: E402  (the tuner tests' world)

cluster_utils = pytest.importorskip("ray.cluster_utils")


@pytest.fixture
def world(tmp_path, monkeypatch):
    """The fake library and plan; the nodes started after this read them (they inherit the environment)."""
    library = tmp_path / "fakelib"
    library.mkdir()
    (library / "manifest.json").write_text(json.dumps(manifest()))
    close = times()
    for m, best in BEST.items():  # a runner-up within 2% of each key's best: each key has a final comparison
        runner_up = next(candidate for candidate in CONFIGS if candidate != best)
        close[str(m)][runner_up] = close[str(m)][best] * 1.02
    plan = {"device": "Fake H200", "candidates": [{"id": i, "config": c} for i, c in CONFIGS.items()],
            "times": close, "sleep_ms": 20}
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    monkeypatch.setenv("FAKE_TUNE_PLAN", str(tmp_path / "plan.json"))
    monkeypatch.setenv("FAKE_TUNE_LOG", str(tmp_path / "calls.log"))
    return library, tmp_path


def test_tune_on_every_gpu_of_the_cluster_and_another_device_is_named(world):
    library, tmp_path = world
    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        for node in ("a", "b"):
            cluster.add_node(num_cpus=1, num_gpus=1, env_vars={"FAKE_TUNE_NODE": f"@{node}"})
        cluster.add_node(num_cpus=1, num_gpus=1, env_vars={"FAKE_TUNE_NODE": "@c", "FAKE_TUNE_DEVICE": "Fake A100"})
        cluster.wait_for_nodes()
        address = cluster.address
        command = [sys.executable, "-m", "taot", "tune", str(library), "--bench", str(FAKES / "bench_fake.py"),
                   "--backend", str(FAKES / "fake_backend.py"), "-o", str(tmp_path / "out"),
                   "--cluster", cluster.address, "--device", "Fake H200", "--prune-ratio", "0"]
        result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    finally:
        cluster.shutdown()
    assert result.returncode == 0, result.stderr
    assert f"--cluster {address}: 3 GPU(s); 3 worker(s)" in result.stderr
    assert re.search(r"GPU \S+ GPU \S+ is a Fake A100, not a Fake H200: not used", result.stderr), result.stderr
    nodes = {line.split()[2] for line in (tmp_path / "calls.log").read_text().splitlines()}
    assert nodes == {"0@a", "0@b"}  # both H200 nodes measured, the A100 none
    table = json.loads((tmp_path / "out" / "moe.json").read_text())
    assert table["device"] == "Fake H200"
    assert {entry["key"][0]: entry["measured"]["variant"] for entry in table["entries"]} == BEST
    assert "picks the tuned variant for 4 of 4 shapes" in result.stderr
    journal = [json.loads(line) for line in (tmp_path / "out" / "moe.journal.jsonl").read_text().splitlines()]
    assert sorted(entry["task"] for entry in journal if "final" in entry) == [0, 1, 2, 3]
    assert not [entry for entry in journal if entry.get("status") in ("hung", "crashed")]
