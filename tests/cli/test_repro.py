"""`taot repro` without a GPU: a recording (launch.json as the runtime's recorder writes it, with its
buffers) becomes a CMake project whose replay program compiles with -Wall -Wextra -Werror against the
vector_add library generated here; a recording that cannot be replayed is refused, naming why."""
import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SPEC = REPO / "examples" / "vector_add" / "vector_add.toml"


def run(*args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=1800, **kwargs)


@pytest.fixture(scope="module")
def library(tmp_path_factory, taot_bin):
    out = tmp_path_factory.mktemp("vector_add_repro") / "generated"
    built = run(taot_bin, "build", SPEC, "-o", out, "--target", "sm_90", "-j", str(os.cpu_count() or 2), "--quiet")
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    return out


def recording(folder, **changes):
    """A recorded vector_add launch: x and y in one allocation, out in another, n = 256 in fp16."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "buffer0.bin").write_bytes(bytes(range(256)) * 4)
    (folder / "buffer1.bin").write_bytes(bytes(512))
    (folder / "buffer1.after.bin").write_bytes(bytes([7]) * 512)
    launch = {
        "schema": "taot.repro", "version": 1, "library": "vector_add", "kernel": "add_kernel",
        "variant": "fp16_a16_a16_a16_d16_b1024_w4_s3", "variant_index": 5, "step": "default", "launch_index": 0,
        "grid": [1, 1, 1], "device": 0,
        "buffers": [{"file": "buffer0.bin", "bytes": 1024, "output": False},
                    {"file": "buffer1.bin", "bytes": 512, "output": True, "after": "buffer1.after.bin"}],
        "args": [{"name": "x_ptr", "kind": "pointer", "dtype": "fp16", "output": False, "buffer": 0, "offset": 0},
                 {"name": "y_ptr", "kind": "pointer", "dtype": "fp16", "output": False, "buffer": 0, "offset": 512},
                 {"name": "output_ptr", "kind": "pointer", "dtype": "fp16", "output": True, "buffer": 1, "offset": 0},
                 {"name": "n_elements", "kind": "int", "value": 256, "bits": "0x0000000000000100"}],
        "status": "TAOT_OK", "errors": []}
    launch.update(changes)
    (folder / "launch.json").write_text(json.dumps(launch, indent=1))
    return folder


def fake_library(folder, variants=6):
    """The files repro reads from a built vector_add library: CMakeLists.txt, the C header and a
    manifest whose add_kernel has `variants` variants (nothing is compiled)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "CMakeLists.txt").write_text("# stand-in\n")
    (folder / "vector_add_c.h").write_text("/* stand-in */\n")
    (folder / "manifest.json").write_text(json.dumps({
        "schema": "taot.manifest", "schema_version": 2, "library": "vector_add",
        "kernels": [{"name": "add_kernel", "args": [], "variants": [{"id": f"v{i}"} for i in range(variants)]}]}))
    return folder


def test_the_replay_program_compiles_with_strict_warnings(library, run_taot, tmp_path):
    out = tmp_path / "repro"
    made = run_taot("repro", recording(tmp_path / "recorded"), "-o", out, "--library", library)
    assert made.returncode == 0, made.stdout + made.stderr
    assert sorted(p.name for p in (out / "data").iterdir()) == [
        "buffer0.bin", "buffer1.after.bin", "buffer1.bin", "launch.json"]
    replay = (out / "replay.cpp").read_text()
    assert "do not edit" in replay
    assert '{"y_ptr", ArgKind::pointer, TAOT_DTYPE_FP16, 0u, 512u, 0}' in replay
    assert '{"n_elements", ArgKind::scalar, TAOT_DTYPE_UNKNOWN, 0, 0, 0x0000000000000100u}' in replay
    configured = run("cmake", "-S", out, "-B", out / "build", "-G", "Ninja")
    assert configured.returncode == 0, configured.stdout[-4000:] + configured.stderr[-4000:]
    compiled = run("cmake", "--build", out / "build", "--target", "replay")
    assert compiled.returncode == 0, compiled.stdout[-6000:] + compiled.stderr[-2000:]
    assert "-Werror" in (out / "build" / "build.ninja").read_text()
    assert (out / "build" / "replay").is_file()
    again = run_taot("repro", tmp_path / "recorded", "-o", out, "--library", library)
    assert again.returncode == 0
    rebuilt = run("cmake", "--build", out / "build", "--target", "replay")
    assert "no work to do" in rebuilt.stdout, rebuilt.stdout  # the same recording writes the same files


@pytest.mark.parametrize("changes, message", [
    ({"schema": "taot.profile.trace"}, "not a recorded launch (schema 'taot.repro', version 1)"),
    ({"status": None}, "the recorded launch never ended"),
    ({"args": [{"name": "desc", "kind": "tensordesc", "dtype": "fp16"}]},
     "argument desc is a tensor descriptor; repro cannot replay those yet"),
])
def test_a_recording_that_cannot_be_replayed_is_refused(run_taot, tmp_path, changes, message):
    (tmp_path / "lib").mkdir()
    result = run_taot("repro", recording(tmp_path / "recorded", **changes), "-o", tmp_path / "out",
                      "--library", tmp_path / "lib")
    assert result.returncode == 1
    assert message in result.stderr, result.stderr


def test_a_consistent_recording_is_written_without_building_anything(run_taot, tmp_path):
    out = tmp_path / "out"
    made = run_taot("repro", recording(tmp_path / "recorded"), "-o", out, "--library", fake_library(tmp_path / "lib"))
    assert made.returncode == 0, made.stderr
    assert (out / "data" / "buffer0.bin").read_bytes() == bytes(range(256)) * 4
    assert "const std::size_t kVariantIndex = 5;" in (out / "replay.cpp").read_text()


def test_an_output_folder_another_command_holds_is_waited_for_or_named(run_taot, tmp_path):
    """repro writes OUT under its lock, as every command that writes a folder: with --no-wait a held
    folder is an error naming the holder; otherwise it waits, saying so unless -q."""
    import threading
    from taot.compile.output_lock import OutputLock
    out, library = tmp_path / "out", fake_library(tmp_path / "lib")
    recorded = recording(tmp_path / "recorded")
    with OutputLock(out):
        busy = run_taot("repro", recorded, "-o", out, "--library", library, "--no-wait")
    assert busy.returncode == 1
    assert busy.stderr.startswith(f"error: {out} is being built by pid {os.getpid()} on "), busy.stderr
    for quiet, said in ((["-q"], False), ([], True)):
        lock = OutputLock(out).__enter__()
        threading.Timer(1.0, lock.__exit__, (None, None, None)).start()  # released while repro waits
        waited = run_taot("repro", recorded, "-o", out, "--library", library, *quiet)
        assert waited.returncode == 0, waited.stderr
        assert (f"waiting for pid {os.getpid()} on " in waited.stderr) == said, waited.stderr
        assert said or waited.stderr == ""


def pointer(name, buffer, offset):
    return {"name": name, "kind": "pointer", "dtype": "fp16", "output": False, "buffer": buffer, "offset": offset}


@pytest.mark.parametrize("changes, message", [
    ({"args": [pointer("x_ptr", 5, 0)]},
     "launch.json: argument x_ptr points into buffer 5, but the recording has 2 buffers (0 to 1)"),
    ({"args": [pointer("x_ptr", 0, 0), pointer("y_ptr", 0, 99999)]},
     "launch.json: argument y_ptr points at byte offset 99999 of buffer 0 (buffer0.bin), which has 1024 bytes"),
    ({"args": [pointer("out", 1, 512)]},
     "launch.json: argument out points at byte offset 512 of buffer 1 (buffer1.bin), which has 512 bytes"),
    ({"variant_index": -1}, "launch.json: variant_index: expected a variant's index (0 or more), got -1"),
])
def test_an_argument_outside_the_recorded_buffers_is_refused_naming_it(run_taot, tmp_path, changes, message):
    out = tmp_path / "out"
    result = run_taot("repro", recording(tmp_path / "recorded", **changes), "-o", out,
                      "--library", fake_library(tmp_path / "lib"))
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"error: {tmp_path}/recorded/{message}\n"
    assert not out.exists()  # refused before anything is written


@pytest.mark.parametrize("file, size, recorded", [("buffer0.bin", 100, 1024), ("buffer1.after.bin", 600, 512)])
def test_a_buffer_file_of_another_size_than_recorded_is_refused(run_taot, tmp_path, file, size, recorded):
    folder = recording(tmp_path / "recorded")
    (folder / file).write_bytes(bytes(size))
    out = tmp_path / "out"
    result = run_taot("repro", folder, "-o", out, "--library", fake_library(tmp_path / "lib"))
    assert result.returncode == 1
    assert result.stderr == (f"error: {folder}/{file}: {size} bytes, but {folder}/launch.json records {recorded} "
                             "(the file is truncated or not from this recording)\n")
    assert not out.exists()


def test_a_missing_buffer_file_is_named(run_taot, tmp_path):
    folder = recording(tmp_path / "recorded")
    (folder / "buffer1.bin").unlink()
    result = run_taot("repro", folder, "-o", tmp_path / "out", "--library", fake_library(tmp_path / "lib"))
    assert result.returncode == 1
    assert f"error: {folder}/buffer1.bin: missing; {folder}/launch.json records it with 512 bytes" in result.stderr


@pytest.mark.parametrize("changes, variants, message", [
    ({"variant_index": 9999}, 6, "the recorded variant index 9999 (fp16_a16_a16_a16_d16_b1024_w4_s3) is not in the "
                                 "library: its add_kernel has 6 variants (0 to 5); it is not the one recorded"),
    ({}, 5, "the recorded variant index 5 (fp16_a16_a16_a16_d16_b1024_w4_s3) is not in the library: its add_kernel "
            "has 5 variants (0 to 4)"),
    ({"kernel": "mul_kernel"}, 6, "library vector_add has no kernel 'mul_kernel' (its kernels: add_kernel)"),
])
def test_a_variant_the_library_lacks_is_refused(run_taot, tmp_path, changes, variants, message):
    library = fake_library(tmp_path / "lib", variants)
    out = tmp_path / "out"
    result = run_taot("repro", recording(tmp_path / "recorded", **changes), "-o", out, "--library", library)
    assert result.returncode == 1
    assert result.stderr.startswith(f"error: {library}/manifest.json: {message}"), result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not out.exists()


def test_a_library_folder_without_a_manifest_is_named(run_taot, tmp_path):
    library = fake_library(tmp_path / "lib")
    (library / "manifest.json").unlink()
    result = run_taot("repro", recording(tmp_path / "recorded"), "-o", tmp_path / "out", "--library", library)
    assert result.returncode == 1
    assert (f"error: {library}: no manifest.json here; give the folder taot build wrote for the recorded library"
            in result.stderr), result.stderr


def test_a_folder_without_a_recording_is_named(run_taot, tmp_path):
    result = run_taot("repro", tmp_path, "-o", tmp_path / "out", "--library", tmp_path)
    assert result.returncode == 1
    assert f"{tmp_path}/launch.json does not exist: record a launch first" in result.stderr, result.stderr
