"""Reading compute-sanitizer's report (taot sanitize) and the command's usage errors, without a GPU."""
import os
import subprocess
import sys
from pathlib import Path

from taot.debug import sanitizer

ROOT = Path(__file__).resolve().parents[2]

MEMCHECK = """\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at oob_double_kernel+0x1b0 in /work/tests/gpu/sanitize/kernels.py:11
=========     by thread (0,0,0) in block (32,0,0)
=========     Address 0x7f3a2e001000 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a2e000000 of size 16384 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: [0x2f2b6f] in libcuda.so.1
=========
========= Invalid __global__ write of size 4 bytes
=========     at oob_double_kernel+0x1b0 in /work/tests/gpu/sanitize/kernels.py:11
=========     by thread (1,0,0) in block (32,0,0)
=========
========= Program hit CUDA_ERROR_LAUNCH_FAILED (error 719) due to "unspecified launch failure" on CUDA API call to cuStreamSynchronize.
=========
========= ERROR SUMMARY: 3 errors
"""

RACECHECK = """\
========= Error: Race reported between Write access at softmax_kernel+0x2c0 in /k/softmax.py:30
=========     and Read access at softmax_kernel+0x310 in /k/softmax.py:33 [512 hazards]
=========
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""


def test_memcheck_findings_name_kernel_file_and_line():
    findings, summary = sanitizer.parse_report(MEMCHECK)
    assert summary == 3
    assert findings[0] == sanitizer.Finding("Invalid __global__ write of size 4 bytes", "oob_double_kernel",
                                            "/work/tests/gpu/sanitize/kernels.py", 11)
    assert len(findings) == 3 and findings[2].kind.startswith("Program hit CUDA_ERROR_LAUNCH_FAILED")
    (top, count), _ = sanitizer.summarize(findings)
    assert count == 2 and top.where() == "oob_double_kernel at /work/tests/gpu/sanitize/kernels.py:11"


def test_racecheck_findings():
    findings, summary = sanitizer.parse_report(RACECHECK)
    assert summary is None
    (finding,) = findings
    assert finding.kind.startswith("Error: Race reported between Write access")


def test_clean_report():
    assert sanitizer.parse_report("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n") == ([], 0)


def test_usage_errors():
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    run = lambda *a: subprocess.run([sys.executable, "-m", "taot", "sanitize", *a], capture_output=True, text=True,  # noqa: E731
                                    env=environment, timeout=60)
    result = run("--per-variant", "--", "bench", "x")
    assert result.returncode == 2 and "--per-variant: the command must be `check`" in result.stderr
    result = run("--tool", "leakcheck", "--", "check", "x")
    assert result.returncode == 2 and "leakcheck" in result.stderr


def test_initcheck_host_api_findings_have_no_kernel():
    text = ("========= Host API uninitialized memory access\n"
            "=========     at 0x7f1 on access by cudaMemcpyAsync source at 0x7f3a2e000000 [16384 bytes]\n"
            "========= ERROR SUMMARY: 512 errors\n")
    findings, summary = sanitizer.parse_report(text)
    assert summary == 512 and findings == [sanitizer.Finding("Host API uninitialized memory access")]
