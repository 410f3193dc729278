"""Builds you can trust, through the real taot binary: damaged artifacts are compiled again, one
output folder is built by one build at a time, Ctrl-C stops quietly and the next build finishes
the job with the same cubins, paths with spaces and non-ASCII characters build, IR is kept
compressed (or plain, or not at all) and read either way, and libraries sharing a folder keep
each other's artifacts."""
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

from taot.compile.ir_files import read_stage  # noqa: E402

KERNEL = textwrap.dedent('''
    import triton
    import triton.language as tl


    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * 2, mask=mask)
''')


def spec_text(library="scale", source="kernels.py", blocks=(64, 128), hints=(16, 1, "none")):
    """3 hints x len(blocks) variants of scale_kernel, for sm_90 only."""
    return textwrap.dedent(f'''
        [library]
        name = "{library}"
        targets = ["sm_90"]

        [[kernel]]
        name = "scale_kernel"
        source = "{source}"
        grid = ["cdiv(n, BLOCK)", 1, 1]

        [kernel.args]
        x_ptr = {{ type = "*fp32", align = [16] }}
        out_ptr = {{ type = "*fp32", align = [16] }}
        n = {{ type = "i32", hint = {json.dumps(list(hints))} }}
        BLOCK = {{ constexpr = {json.dumps(list(blocks))} }}

        [kernel.options]
        num_warps = [4]

        [kernel.default]
        BLOCK = {blocks[0]}
    ''')


def write_project(root, spec="scale.toml", **spec_arguments):
    root.mkdir(parents=True, exist_ok=True)
    source = spec_arguments.get("source", "kernels.py")
    (root / source).write_text(KERNEL)
    (root / spec).write_text(spec_text(**spec_arguments))
    return root / spec


def cubin_hashes(out):
    """artifact folder (relative) -> SHA-256 of its cubin, from the files."""
    return {path.parent.relative_to(out).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in Path(out).glob("artifacts/*/*/*.cubin")}


def assert_manifest_matches_files(out):
    """Every image of the manifest names a cubin whose bytes have the recorded hash."""
    manifest = json.loads((Path(out) / "manifest.json").read_text())
    images = [image for kernel in manifest["kernels"] for variant in kernel["variants"] for image in variant["images"]]
    assert images
    for image in images:
        cubin = (Path(out) / image["cubin"]).read_bytes()
        assert cubin and hashlib.sha256(cubin).hexdigest() == image["cubin_sha256"], image["cubin"]
        json.loads((Path(out) / image["artifacts"]["metadata"]).read_text())
    return manifest


def summary(stderr):
    match = re.search(r"^compiled (\d+), up to date (\d+), in", stderr, re.MULTILINE)
    assert match, stderr
    return int(match.group(1)), int(match.group(2))


@pytest.fixture
def project(tmp_path):
    """A folder holding kernels.py and scale.toml (6 variants for sm_90)."""
    write_project(tmp_path)
    return tmp_path


def reference_hashes(project, run_taot):
    """The cubin hashes of a clean `taot compile` of the project (the kernel's path is in the cubin's
    line info, so builds compare within one project folder)."""
    result = run_taot("compile", "scale.toml", "-o", "reference", "-j", "2", "--quiet", cwd=project)
    assert result.returncode == 0, result.stderr
    return cubin_hashes(project / "reference")


# ---- damaged artifacts ----

def truncate_cubin(folder):
    cubin, = folder.glob("*.cubin")
    cubin.write_bytes(cubin.read_bytes()[:100])


def empty_cubin(folder):
    cubin, = folder.glob("*.cubin")
    cubin.write_bytes(b"")


def damage_metadata(folder):
    metadata = folder / "metadata.json"
    metadata.write_text(metadata.read_text()[:40])


@pytest.mark.parametrize("damage, reason", [
    (truncate_cubin, "the cubin changed since it was compiled"),
    (empty_cubin, "the cubin is empty"),
    (damage_metadata, "metadata.json is damaged"),
], ids=["truncated cubin", "empty cubin", "damaged metadata.json"])
def test_a_damaged_artifact_is_compiled_again_by_the_next_build(project, run_taot, damage, reason):
    built = run_taot("compile", "scale.toml", "-o", "out", "-j", "2", cwd=project)
    assert built.returncode == 0, built.stderr
    hashes = cubin_hashes(project / "out")
    damaged = sorted(hashes)[1]
    damage(project / "out" / damaged)
    result = run_taot("compile", "scale.toml", "-o", "out", "-j", "2", cwd=project)
    assert result.returncode == 0, result.stderr
    assert f"{damaged}: {reason}; recompiling\n" in result.stderr
    assert "Traceback" not in result.stderr
    assert summary(result.stderr) == (1, len(hashes) - 1)
    assert cubin_hashes(project / "out") == hashes
    assert_manifest_matches_files(project / "out")


# ---- one build at a time ----

def start(taot_bin, *args, cwd):
    """`taot ARGS` in its own session (so a test can Ctrl-C its whole process group), output to files."""
    stdout = open(Path(cwd) / f"stdout.{time.monotonic_ns()}", "w+")
    stderr = open(Path(cwd) / f"stderr.{time.monotonic_ns()}", "w+")
    process = subprocess.Popen([str(taot_bin), *map(str, args)], cwd=cwd, stdout=stdout, stderr=stderr,
                               start_new_session=True)
    process.outputs = (stdout, stderr)
    return process


def finish(process, timeout=600):
    process.wait(timeout=timeout)
    stdout, stderr = process.outputs
    texts = []
    for stream in (stdout, stderr):
        stream.seek(0)
        texts.append(stream.read())
        stream.close()
    return process.returncode, texts[0], texts[1]


def wait_until(condition, process, what, timeout=300):
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, f"the build ended before {what}: {finish(process)}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def holds_lock(out):
    lock = Path(out) / ".taot.lock"
    return lock.exists() and lock.read_text().startswith("pid ")


def compiled_lines(process):
    """The progress lines of the compiles that finished so far."""
    return [line for line in Path(process.outputs[1].name).read_text().splitlines()
            if re.match(r"\[\d+/\d+\] scale_kernel_", line)]


def test_two_builds_into_one_folder_take_turns_and_both_end_correct(project, taot_bin, run_taot):
    reference = reference_hashes(project, run_taot)
    first = start(taot_bin, "build", "scale.toml", "-o", "out", "-j", "1", cwd=project)
    wait_until(lambda: holds_lock(project / "out"), first, "the first build takes the lock")
    second = start(taot_bin, "build", "scale.toml", "-o", "out", "-j", "2", cwd=project)
    first_code, _, first_err = finish(first)
    second_code, _, second_err = finish(second)
    assert first_code == 0, first_err
    assert second_code == 0, second_err
    assert f"waiting for pid {first.pid} on " in second_err
    assert "taot build scale.toml -o out -j 1" in second_err
    assert summary(first_err) == (6, 0)
    assert summary(second_err) == (0, 6)
    assert cubin_hashes(project / "out") == reference
    assert_manifest_matches_files(project / "out")
    assert (project / "out" / "scale.h").is_file()


def test_no_wait_fails_naming_the_build_that_holds_the_folder(project, taot_bin, run_taot):
    first = start(taot_bin, "build", "scale.toml", "-o", "out", "-j", "1", cwd=project)
    wait_until(lambda: holds_lock(project / "out"), first, "the first build takes the lock")
    os.killpg(first.pid, signal.SIGSTOP)  # it holds the lock for as long as the test needs
    try:
        refused = run_taot("compile", "scale.toml", "-o", "out", "--no-wait", cwd=project)
        refused_by_build = run_taot("build", "scale.toml", "-o", "out", "--no-wait", cwd=project)
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    code, _, err = finish(first)
    assert code == 0, err
    assert refused_by_build.returncode == 1
    assert f"error: out is being built by pid {first.pid} on " in refused_by_build.stderr
    assert refused.returncode == 1
    assert re.search(rf"^error: out is being built by pid {first.pid} on \S+ since [0-9-]+ [0-9:]+: "
                     r".*taot build scale.toml -o out -j 1; wait for it or drop --no-wait$", refused.stderr,
                     re.MULTILINE), refused.stderr


def test_taot_gen_holds_the_folder_as_builds_do(project, taot_bin, run_taot):
    """gen writes a folder too: into one a build holds, it waits (or with --no-wait fails naming the
    build)."""
    assert run_taot("build", "scale.toml", "-o", "ref", cwd=project).returncode == 0
    first = start(taot_bin, "build", "scale.toml", "-o", "out", "-j", "1", cwd=project)
    wait_until(lambda: holds_lock(project / "out"), first, "the build takes the lock")
    os.killpg(first.pid, signal.SIGSTOP)
    try:
        refused = run_taot("gen", "ref/manifest.json", "-o", "out", "--no-wait", cwd=project)
        waiting = start(taot_bin, "gen", "ref/manifest.json", "-o", "out", cwd=project)
        wait_until(lambda: "waiting for" in Path(waiting.outputs[1].name).read_text(), waiting, "gen waits")
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    assert refused.returncode == 1
    assert re.search(rf"^error: out is being built by pid {first.pid} on \S+ since [0-9-]+ [0-9:]+: "
                     r".*taot build scale.toml -o out -j 1; wait for it or drop --no-wait$", refused.stderr,
                     re.MULTILINE), refused.stderr
    assert finish(first)[0] == 0
    code, _, err = finish(waiting)
    assert code == 0 and f"waiting for pid {first.pid} on " in err, err
    assert (project / "out" / ".taot.lock").read_text() == ""  # released: names no holder


def test_taot_gen_locks_its_folder_before_reading_the_manifest_there(project, taot_bin, run_taot):
    """gen of out/manifest.json into out while another command holds out (and is writing that manifest)
    waits for it before reading: neither a half-written manifest nor the one it replaces is read. The
    parent's word that it holds the folder ($TAOT_HELD_LOCK, as build, from-ir and import-cache give
    it) counts only from the process its lock file names."""
    from taot.compile.output_lock import HELD_BY_PARENT, OutputLock
    assert run_taot("build", "scale.toml", "-o", "out", cwd=project).returncode == 0
    manifest = project / "out" / "manifest.json"
    whole = manifest.read_text()
    gen = [str(taot_bin), "gen", "out/manifest.json", "-o", "out", "--no-wait"]
    told = dict(os.environ, **{HELD_BY_PARENT: str(project / "out" / ".taot.lock")})
    with OutputLock(project / "out"):
        manifest.write_text(whole[: len(whole) // 2])  # as a build writing it
        refused = run_taot(*gen[1:], cwd=project)
        inherited = subprocess.run(["sh", "-c", shlex.join(gen)], env=told, cwd=project, capture_output=True, text=True)
        manifest.write_text(whole)
        by_the_holder = subprocess.run(gen, env=told, cwd=project, capture_output=True, text=True)
        manifest.write_text(whole[: len(whole) // 2])
        waiting = start(taot_bin, "gen", "out/manifest.json", "-o", "out", cwd=project)
        wait_until(lambda: "waiting for" in Path(waiting.outputs[1].name).read_text(), waiting, "gen waits")
        manifest.write_text(whole)
    busy = f"error: out is being built by pid {os.getpid()} on "
    assert refused.returncode == 1 and refused.stderr.startswith(busy), refused.stderr
    assert inherited.returncode == 1 and inherited.stderr.startswith(busy), inherited.stderr  # sh is gen's parent
    assert by_the_holder.returncode == 0, by_the_holder.stderr
    code, _, err = finish(waiting)
    assert code == 0 and f"waiting for pid {os.getpid()} on " in err, err


def test_a_killed_build_leaves_no_lock_and_a_tree_the_next_build_finishes(project, taot_bin, run_taot):
    reference = reference_hashes(project, run_taot)
    killed = start(taot_bin, "build", "scale.toml", "-o", "out", "-j", "1", cwd=project)
    wait_until(lambda: len(compiled_lines(killed)) >= 2, killed, "two compiles finished")
    os.killpg(killed.pid, signal.SIGKILL)
    finish(killed)
    result = run_taot("build", "scale.toml", "-o", "out", "--no-wait", cwd=project)
    assert result.returncode == 0, result.stderr
    compiled, up_to_date = summary(result.stderr)
    assert compiled + up_to_date == 6 and up_to_date >= 2
    assert cubin_hashes(project / "out") == reference
    assert_manifest_matches_files(project / "out")


# ---- a full disk ----

def test_a_full_disk_names_the_folder_and_the_next_build_with_room_finishes(project, run_taot, small_filesystem):
    reference = reference_hashes(project, run_taot)
    out = small_filesystem.path / "out"
    full = run_taot("compile", "scale.toml", "-o", out, "-j", "1", cwd=project)
    assert full.returncode == 1
    assert full.stderr.splitlines()[-1] == (f"error: {out}: No space left on device (while writing there; free "
                                            "space and run the command again: what is done is kept)")
    assert "Traceback" not in full.stderr and not (out / "manifest.json").exists()
    small_filesystem.remount("size=64m")
    again = run_taot("compile", "scale.toml", "-o", out, "-j", "1", cwd=project)
    assert again.returncode == 0, again.stderr
    compiled, up_to_date = summary(again.stderr)
    assert compiled + up_to_date == 6
    assert cubin_hashes(out) == reference
    assert_manifest_matches_files(out)


# ---- Ctrl-C ----

@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_stops_quietly_and_the_next_build_gives_the_clean_builds_cubins(project, taot_bin, run_taot, jobs):
    reference = reference_hashes(project, run_taot)
    build = start(taot_bin, "build", "scale.toml", "-o", "out", "-j", jobs, cwd=project)
    wait_until(lambda: len(compiled_lines(build)) >= 1, build, "a first compile finished")
    os.killpg(build.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    code, out, err = finish(build)
    assert code == 130, err
    lines = err.splitlines()
    assert re.fullmatch(r"interrupted: (\d+) of 6 compiled; run the same command to continue", lines[-1]), err
    compiled_now = int(lines[-1].split()[1])
    assert out == ""
    # Everything else it printed is its own progress: no traceback, no IR or PTX dump.
    own = re.compile(r"\[\d+/\d+\] |\[1/2\] taot compile |scale_kernel: \d+ variants ")
    assert [line for line in lines[:-1] if not own.match(line)] == [], err
    assert not (project / "out" / "manifest.json").exists()
    # A compile may finish between Ctrl-C and the end of its worker: it counts as done next time.
    kept = len(list((project / "out").glob("artifacts/*/*/inputs.json")))
    assert compiled_now <= kept < 6

    again = run_taot("build", "scale.toml", "-o", "out", "-j", "2", cwd=project)
    assert again.returncode == 0, again.stderr
    assert summary(again.stderr) == (6 - kept, kept)
    assert cubin_hashes(project / "out") == reference
    assert_manifest_matches_files(project / "out")


@pytest.mark.parametrize("delay", [0.3, 0.8, 1.5])
def test_ctrl_c_while_the_workers_start_stops_quietly(project, taot_bin, delay):
    """Ctrl-C early in a build, while the compile processes start (their interpreters, Triton's
    import): no worker prints "Fatal Python error" or a traceback, and the build says it stopped.
    The moment the signal lands varies with the machine; whatever it meets must be quiet."""
    build = start(taot_bin, "build", "scale.toml", "-o", "out", "-j", "2", cwd=project)
    time.sleep(delay)
    if build.poll() is None:
        os.killpg(build.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    code, _, err = finish(build)
    assert "Fatal Python error" not in err and "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert code in (0, 130, -signal.SIGINT), err  # (-SIGINT: it landed as the build was ending)
    if code == 130:
        assert err.splitlines()[-1].startswith("interrupted"), err


# ---- paths ----

def test_a_kernel_path_with_spaces_and_non_ascii_characters_builds(tmp_path, run_taot):
    project = tmp_path / "my kernels ü"
    spec = write_project(project, spec="spéc.toml", source="scale é.py", blocks=(64,), hints=(16,))
    out = project / "out ö"
    result = run_taot("build", spec, "-o", out, "-j", "2", "--build-library", "--quiet", timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    manifest = assert_manifest_matches_files(out)
    assert manifest["kernels"][0]["source"] == "../scale é.py"
    for name in ("scale.h", "scale.cpp", "scale_tables.cpp", "scale_cubins.cpp", "CMakeLists.txt"):
        assert (out / name).is_file(), name
    assert (out / "build" / "libscale.a").is_file()
    ptx = read_stage(out / manifest["kernels"][0]["variants"][0]["images"][0]["artifacts"]["ptx"])
    assert '.file\t1 "' + str(project).replace("ü", "%C3%BC") + '/scale %C3%A9.py"' in ptx


# ---- IR storage ----

def folder_bytes(out, suffix=""):
    return sum(path.stat().st_size for path in Path(out).rglob("*") if path.is_file() and path.name.endswith(suffix))


def test_ir_is_kept_compressed_by_default_plain_or_not_at_all_on_request(project, run_taot):
    built = run_taot("compile", "scale.toml", "-o", "out", "-j", "2", cwd=project)
    assert built.returncode == 0, built.stderr
    out = project / "out"
    hashes = cubin_hashes(out)

    def manifest_ir():
        image = json.loads((out / "manifest.json").read_text())["kernels"][0]["variants"][0]["images"][0]
        return {stage: path for stage, path in image["artifacts"].items() if stage != "metadata"}

    compressed = manifest_ir()
    assert sorted(compressed) == ["llir", "ptx", "ttgir", "ttir"]
    assert all(path.endswith(f".{stage}.gz") for stage, path in compressed.items())
    texts = {stage: read_stage(out / path) for stage, path in compressed.items()}
    assert ".target sm_90a" in texts["ptx"] and "tt.func" in texts["ttir"]
    compressed_ir_bytes = folder_bytes(out, ".gz")

    plain = run_taot("compile", "scale.toml", "-o", "out", "--ir", "plain", cwd=project)
    assert plain.returncode == 0, plain.stderr
    assert summary(plain.stderr) == (0, len(hashes))  # converted, not compiled again
    assert manifest_ir() == {stage: path[:-len(".gz")] for stage, path in compressed.items()}
    assert {stage: (out / path).read_text() for stage, path in manifest_ir().items()} == texts
    assert {stage: read_stage(out / path) for stage, path in manifest_ir().items()} == texts
    assert folder_bytes(out, ".gz") == 0
    plain_ir_bytes = sum(folder_bytes(out, f".{stage}") for stage in compressed)
    assert 3 * compressed_ir_bytes < plain_ir_bytes

    none = run_taot("compile", "scale.toml", "-o", "out", "--ir", "none", cwd=project)
    assert none.returncode == 0, none.stderr
    assert summary(none.stderr) == (0, len(hashes))
    assert manifest_ir() == {}
    assert sorted(path.name for path in next(out.glob("artifacts/*/sm_90")).iterdir()) == [
        "inputs.json", "metadata.json", "scale_kernel.cubin"]

    back = run_taot("compile", "scale.toml", "-o", "out", cwd=project)
    assert back.returncode == 0, back.stderr
    assert re.search(r"^artifacts/\S+/sm_90 and 5 other folders: its IR was not kept \(built with --ir none\); "
                     r"recompiling$", back.stderr, re.MULTILINE), back.stderr
    assert summary(back.stderr) == (len(hashes), 0)
    assert manifest_ir() == compressed
    assert cubin_hashes(out) == hashes


# ---- libraries sharing a folder ----

def test_a_second_library_in_the_same_folder_keeps_the_first_ones_artifacts(tmp_path, run_taot):
    write_project(tmp_path, spec="first.toml", library="first", blocks=(64,))
    write_project(tmp_path, spec="second.toml", library="second", blocks=(128, 256))
    built = run_taot("compile", "first.toml", "-o", "out", "-j", "2", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    first = cubin_hashes(tmp_path / "out")
    second = run_taot("compile", "second.toml", "-o", "out", "-j", "2", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert "removed" not in second.stderr
    everything = cubin_hashes(tmp_path / "out")
    assert len(everything) == len(first) + 6 and set(first.items()) <= set(everything.items())

    (tmp_path / "second.toml").write_text(spec_text(library="second", blocks=(128,)))
    smaller = run_taot("compile", "second.toml", "-o", "out", "-j", "2", cwd=tmp_path)
    assert smaller.returncode == 0, smaller.stderr
    assert "removed 3 stale artifact folders" in smaller.stderr
    remaining = cubin_hashes(tmp_path / "out")
    assert set(first.items()) <= set(remaining.items()) and not any("B256" in folder for folder in remaining)

    again = run_taot("compile", "first.toml", "-o", "out", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert summary(again.stderr) == (0, len(first))
    assert "removed" not in again.stderr
    assert cubin_hashes(tmp_path / "out") == remaining
