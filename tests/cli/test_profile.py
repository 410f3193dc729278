"""`taot profile` through the real binary: the program runs with $TAOT_PROFILE set to a trace path of
its own (a stand-in program writes there what the runtime would), its exit status is reported and
decides the command's, the tree of its launches is printed (or JSON, or hatchet for proton-viewer),
and a program that makes no launches gives a valid empty profile."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "python" / "profile_fixtures"
TRACE = FIXTURES / "trace-4242.json"
BENCH = FIXTURES / "bench_fused_moe_gemm.py"


def writes_trace_and_exits(code):
    """A program that does what the runtime does at exit under $TAOT_PROFILE (the recorded trace of a
    MoE layer and two vector adds), then exits with `code`."""
    return ("import os, shutil, sys; "
            f"shutil.copy({str(TRACE)!r}, os.environ['TAOT_PROFILE'].replace('%p', str(os.getpid()))); "
            f"sys.exit({code})")


def test_a_program_without_launches_gives_a_valid_empty_profile(run_taot, tmp_path):
    output = tmp_path / "empty.hatchet"
    result = run_taot("profile", "-o", output, "--", sys.executable, "-c", "print('hello from the program')")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "hello from the program"
    assert lines[1].endswith("exited with code 0: no taot launches (no kernel of a taot library ran)")
    data = json.loads(output.read_text())
    assert data == [{"frame": {"name": "ROOT", "type": "function"}, "metrics": {"count": 0, "time (ns)": 0},
                     "children": []}, {}]


def test_a_failing_program_is_reported_with_its_exit_code_and_fails_the_command(run_taot):
    result = run_taot("profile", "--", sys.executable, "-c", "import sys; sys.exit(3)")
    assert result.returncode == 1
    assert "exited with code 3: no taot launches" in result.stdout


def test_the_launches_of_a_failing_program_are_still_shown_with_rates_from_a_bench_file(run_taot, tmp_path):
    output = tmp_path / "moe.hatchet"
    result = run_taot("profile", "--bench", BENCH, "-o", output, "--", sys.executable, "-c",
                      writes_trace_and_exits(3))
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith("exited with code 3: 11 launches of 4 kernels (5 variants) in 2 libraries, 0.778 ms of "
                             "GPU time on NVIDIA H100 80GB HBM3")
    assert lines[1].split()[:3] == ["name", "time", "%"]
    gemm = next(line for line in lines if line.startswith("  fused_moe_kernel "))
    assert gemm.split()[1:3] == ["90.0", "4"] and "221" in gemm.split() and gemm.endswith("table 3, config 1")
    assert ("note: 2 of 11 launches have no time (1 failed, 1 captured into CUDA graphs): counted, not timed"
            in lines)
    assert lines[-1] == f"wrote {output} (proton-viewer -m time/ms {output})"
    hatchet = json.loads(output.read_text())
    assert hatchet[1]["CUDA"]["0"]["arch"] == "90"
    assert [child["frame"]["name"] for child in hatchet[0]["children"]] == ["fused_moe", "vector_add"]


def test_json_report_on_stdout_with_the_programs_output_on_stderr(run_taot):
    program = "print('program output'); " + writes_trace_and_exits(0)
    result = run_taot("profile", "--json", "--", sys.executable, "-c", program)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert "program output" in result.stderr
    assert (report["schema"], report["version"], report["outcome"]) == ("taot.profile", 1, "exited with code 0")
    assert (report["launches"], report["timed"], report["processes"]) == (11, 9, 1)
    moe = report["tree"]["children"][0]
    assert moe["name"] == "fused_moe" and moe["children"][0]["steps"] == {"table": 3, "config": 1}


def test_nvtx_is_asked_of_the_runtime_only_with_the_flag(taot_bin):
    program = "import os; print('nvtx', os.environ.get('TAOT_PROFILE_NVTX'), 'trace' in os.environ['TAOT_PROFILE'])"

    def first_line(*flags):
        result = subprocess.run([str(taot_bin), "profile", *flags, "--", sys.executable, "-c", program],
                                env=dict(os.environ, TAOT_PROFILE_NVTX="1"), capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()[0]

    assert first_line("--nvtx") == "nvtx 1 True"
    assert first_line() == "nvtx None True"  # the flag decides, not the caller's environment


def test_a_python_file_runs_with_the_same_python(run_taot, tmp_path):
    script = tmp_path / "program.py"
    script.write_text("import sys\nprint('args', sys.argv[1:])\n")
    result = run_taot("profile", "--", script, "--json", "x")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "args ['--json', 'x']"


def test_a_program_killed_by_a_signal_says_no_trace_was_written(run_taot):
    result = run_taot("profile", "--", sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert result.returncode == 1
    assert "was killed by SIGKILL: no taot launches" in result.stdout
    assert "note: no trace was written: the program was killed before it exited" in result.stdout


@pytest.mark.parametrize("arguments, code, message", [
    ((), 2, "taot profile: error: expected the program to run: taot profile [options] -- PROGRAM [ARGS...]"),
    (("--", "no-such-program-taot"), 1, "error: no-such-program-taot: no such program (not a file, and not found "
                                        "on PATH)"),
    (("--", "missing.py"), 1, "error: missing.py: no such Python file"),
    (("--bench", "nowhere/bench_x.py", "--", "true"), 1, "error: nowhere/bench_x.py: expected an existing bench file"),
])
def test_errors_name_what_is_wrong(run_taot, tmp_path, arguments, code, message):
    result = run_taot("profile", *arguments, cwd=tmp_path)
    assert result.returncode == code
    assert message in result.stderr, result.stderr


def writes_a_marker(path):
    return f"open({str(path)!r}, 'w').close()"


def test_an_output_folder_that_cannot_be_written_is_refused_before_the_program_runs(run_taot, tmp_path):
    ran = tmp_path / "the-program-ran"
    missing = run_taot("profile", "-o", tmp_path / "no" / "x.hatchet", "--", sys.executable, "-c",
                       writes_a_marker(ran))
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == (f"error: {tmp_path}/no/x.hatchet: cannot be written: its folder {tmp_path}/no does "
                              "not exist\n")
    folder = run_taot("profile", "-o", tmp_path, "--", sys.executable, "-c", writes_a_marker(ran))
    assert folder.returncode == 1
    assert folder.stderr == f"error: {tmp_path}: is a folder, not a hatchet file to write\n"
    assert not ran.exists()


def test_a_read_only_output_folder_is_refused_before_the_program_runs(run_taot, tmp_path, read_only_filesystem):
    ran = tmp_path / "the-program-ran"
    read_only = read_only_filesystem.path
    result = run_taot("profile", "-o", read_only / "x.hatchet", "--", sys.executable, "-c", writes_a_marker(ran))
    assert result.returncode == 1
    assert result.stderr == f"error: {read_only}/x.hatchet: cannot be written in {read_only} (Read-only file system)\n"
    assert not ran.exists()
    assert list(read_only.iterdir()) == []
