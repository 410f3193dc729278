"""`taot compile/build --cluster ADDRESS` through the real binary on a local Ray cluster: the library
compiled on the nodes is byte-equal to the one compiled here, a node with another Triton is named and
given nothing, a node lost mid-build leaves its jobs to the others (each compiled and written once),
and Ctrl-C cancels the tasks, the next build finishing the job."""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_trusted_builds import write_project as write_scale_project  # noqa: E402  (the same small project)


def write_project(root, blocks=(64, 128, 256)):
    """kernels.py and scale.toml (tests/cli/test_trusted_builds.py's): 3 hints x len(blocks) variants
    of scale_kernel for sm_90; returns that count."""
    write_scale_project(root, blocks=blocks)
    return 3 * len(blocks)


def run_taot(taot_bin, *args, cwd):
    environment = dict(os.environ, TAOT_PYTHON=sys.executable)
    return subprocess.run([str(taot_bin), *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          env=environment, timeout=600)


def files_of(out):
    """Every file of the library (relative path -> SHA-256) but the lock."""
    return {path.relative_to(out).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in Path(out).rglob("*") if path.is_file() and path.name != ".taot.lock"}


def summary(stderr):
    match = re.search(r"^compiled (\d+), up to date (\d+), in", stderr, re.MULTILINE)
    assert match, stderr
    return int(match.group(1)), int(match.group(2))


def test_a_library_compiled_on_the_cluster_is_byte_equal_and_another_triton_is_named(cluster, taot_bin, tmp_path):
    jobs = write_project(tmp_path)
    cluster.other_triton()
    cluster.wait_for_nodes()
    local = run_taot(taot_bin, "build", "scale.toml", "-o", "local", "-j", "2", "-q", cwd=tmp_path)
    assert local.returncode == 0, local.stderr
    remote = run_taot(taot_bin, "build", "scale.toml", "-o", "remote", "--cluster", cluster.address, cwd=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert re.search(r"--cluster: node \S+ \(\w{8}\) has Triton 3\.0\.0, this machine Triton \d+\.\d+\.\d+: no compile "
                     r"jobs go there", remote.stderr), remote.stderr
    assert re.search(rf"--cluster {re.escape(cluster.address)}: compiling on 2 node\(s\)", remote.stderr), remote.stderr
    assert summary(remote.stderr) == (jobs, 0)
    compiled = [lambda path: path.startswith("artifacts/") or path == "manifest.json"]
    local_files = {path: digest for path, digest in files_of(tmp_path / "local").items() if compiled[0](path)}
    remote_files = {path: digest for path, digest in files_of(tmp_path / "remote").items() if compiled[0](path)}
    assert len(local_files) > jobs * 3
    assert local_files == remote_files  # cubins, IR, metadata, records and the manifest alike
    # (the generated sources name the manifest's folder, so they differ by "local" and "remote" only)
    for name in ("scale.cpp", "scale_cubins.cpp", "scale_tables.cpp"):
        assert (tmp_path / "local" / name).read_text().replace("local/", "remote/") == \
            (tmp_path / "remote" / name).read_text()
    again = run_taot(taot_bin, "build", "scale.toml", "-o", "remote", "--cluster", cluster.address, cwd=tmp_path)
    assert summary(again.stderr) == (0, jobs)  # incremental, as a local build


def start(taot_bin, *args, cwd):
    return subprocess.Popen([str(taot_bin), *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ, TAOT_PYTHON=sys.executable),
                            start_new_session=True)


def wait_for_line(process, pattern, lines):
    """Reads `process`'s stderr into `lines` until a line matches `pattern`."""
    deadline = time.monotonic() + 300
    for line in process.stderr:
        lines.append(line)
        if re.search(pattern, line):
            return
        assert time.monotonic() < deadline, "".join(lines)
    raise AssertionError(f"ended before a line matching {pattern!r}:\n{''.join(lines)}")


def test_a_node_lost_mid_build_leaves_its_jobs_to_the_others(cluster, taot_bin, tmp_path):
    jobs = write_project(tmp_path, blocks=(16, 32, 64, 128, 256, 512, 1024, 2048, 4096))
    reference = run_taot(taot_bin, "compile", "scale.toml", "-o", "reference", "-j", "2", "-q", cwd=tmp_path)
    assert reference.returncode == 0, reference.stderr
    build = start(taot_bin, "compile", "scale.toml", "-o", "out", "--cluster", cluster.address, cwd=tmp_path)
    lines = []
    wait_for_line(build, r"^\[1/\d+\] ", lines)
    cluster.remove_node(cluster.workers[1])  # a node lost: its raylet and workers end
    _, rest = build.communicate(timeout=600)
    stderr = "".join(lines) + rest
    assert build.returncode == 0, stderr
    assert re.search(r"^--cluster: node \S+ \(\w{8}\) was lost; its \d+ job\(s\) under way go to 1 other node\(s\)$",
                     stderr, re.MULTILINE), stderr
    assert summary(stderr) == (jobs, 0)
    reported = [line.split()[1] for line in stderr.splitlines() if re.match(r"\[\d+/\d+\] ", line)]
    assert len(reported) == jobs and len(set(reported)) == jobs  # every job reported once: none lost or doubled
    cubins = {path: digest for path, digest in files_of(tmp_path / "out").items() if path.endswith(".cubin")}
    assert cubins == {path: digest for path, digest in files_of(tmp_path / "reference").items()
                      if path.endswith(".cubin")}


def test_ctrl_c_cancels_the_tasks_and_the_next_build_finishes(cluster, taot_bin, tmp_path):
    jobs = write_project(tmp_path, blocks=(16, 32, 64, 128, 256, 512))
    build = start(taot_bin, "compile", "scale.toml", "-o", "out", "--cluster", cluster.address, cwd=tmp_path)
    lines = []
    wait_for_line(build, r"^\[1/\d+\] ", lines)
    os.killpg(build.pid, signal.SIGINT)
    _, rest = build.communicate(timeout=120)
    stderr = "".join(lines) + rest
    assert build.returncode == 130, stderr
    assert re.search(r"^interrupted: \d+ of \d+ compiled; run the same command to continue$", stderr, re.MULTILINE), stderr
    assert "Traceback" not in stderr and not (tmp_path / "out" / "manifest.json").exists()
    again = run_taot(taot_bin, "compile", "scale.toml", "-o", "out", "--cluster", cluster.address, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    compiled, up_to_date = summary(again.stderr)
    assert compiled + up_to_date == jobs and up_to_date >= 1
    json.loads((tmp_path / "out" / "manifest.json").read_text())


def test_addresses_that_cannot_be_used_are_said_before_anything_compiles(taot_bin, tmp_path):
    write_project(tmp_path)
    malformed = run_taot(taot_bin, "compile", "scale.toml", "--cluster", "nope", cwd=tmp_path)
    assert malformed.returncode == 2
    assert "--cluster nope: expected auto, HOST:PORT or ray://HOST:PORT" in malformed.stderr
    started = time.monotonic()
    closed = run_taot(taot_bin, "compile", "scale.toml", "-o", "out", "--cluster", "127.0.0.1:1", cwd=tmp_path)
    assert time.monotonic() - started < 60  # not Ray's minutes of retries
    assert closed.returncode == 1
    assert closed.stderr.splitlines()[-1] == ("error: --cluster 127.0.0.1:1: nothing answers at 127.0.0.1:1 "
                                              "(Connection refused); is the Ray cluster up (ray status)?")
    assert not (tmp_path / "out" / "artifacts").exists()
