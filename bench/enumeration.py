"""Listing variants: the time and peak memory of validating and enumerating a spec, for this front end
and, side by side in the same run, for the front end of an earlier commit (which built the whole
product before filtering). Needs no GPU.

    python3 bench/enumeration.py [--before REF] [--timeout SECONDS]

Each measurement runs in a fresh process: `list` is the wall time of `python -m taot compile SPEC
--list` (Python start and the Triton import included), `enumerate` the median of three in-process
load_spec() calls after a first one, `peak` tracemalloc's peak over one load_spec() call.
"""
import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPECS = [
    ("fused MoE example, tiles as a config list", "examples/fused_moe/fused_moe.toml"),
    ("tile space: 10^6 combinations, filters keep ~2000", "bench/specs/tile_space.toml"),
]

CHILD = r"""
import json, statistics, sys, time, tracemalloc
from taot.spec.validate import load_spec
path = sys.argv[1]
library = load_spec(path, label=path)
times = []
for _ in range(3):
    start = time.perf_counter()
    load_spec(path, label=path)
    times.append(time.perf_counter() - start)
tracemalloc.start()
load_spec(path, label=path)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"variants": sum(len(found) for found in library.variants.values()),
                  "seconds": statistics.median(times), "peak": peak}))
"""


def measure(python_path, spec, timeout):
    env = dict(os.environ, PYTHONPATH=str(python_path))
    start = time.perf_counter()
    try:
        listed = subprocess.run([sys.executable, "-m", "taot", "compile", spec, "--list", "--quiet"], cwd=REPO, env=env,
                                capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"--list did not finish in {timeout} s"}
    list_seconds = time.perf_counter() - start
    if listed.returncode != 0:
        return {"error": (listed.stderr.strip().splitlines() or ["failed"])[-1][:120]}
    try:
        child = subprocess.run([sys.executable, "-c", CHILD, spec], cwd=REPO, env=env, capture_output=True, text=True,
                               timeout=timeout * 6)
    except subprocess.TimeoutExpired:
        return {"error": f"load_spec did not finish in {timeout * 6} s", "list": list_seconds}
    if child.returncode != 0:
        return {"error": (child.stderr.strip().splitlines() or ["failed"])[-1][:120], "list": list_seconds}
    return dict(json.loads(child.stdout), list=list_seconds)


def extract_front_end(ref, folder):
    archive = Path(folder) / "front_end.tar"
    with open(archive, "wb") as stream:
        subprocess.run(["git", "archive", ref, "python/taot"], cwd=REPO, stdout=stream, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return Path(folder) / "python"


def row(name, result):
    if "error" in result:
        return f"| {name} | {result['error']} | | | |"
    return (f"| {name} | {result['variants']} | {result['seconds'] * 1000:.0f} ms | {result['peak'] / 2**20:.1f} MiB | "
            f"{result['list']:.2f} s |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="3e5a028", help="the earlier commit to compare with (default: %(default)s)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds one --list may take (default: %(default)s)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        before = extract_front_end(arguments.before, folder)
        print("| spec, front end | variants | enumerate | peak memory | `--list` wall |")
        print("| --- | --- | --- | --- | --- |")
        for title, spec in SPECS:
            print(row(f"{title}: now", measure(REPO / "python", spec, arguments.timeout)), flush=True)
            print(row(f"{title}: {arguments.before}", measure(before, spec, arguments.timeout)), flush=True)


if __name__ == "__main__":
    main()
