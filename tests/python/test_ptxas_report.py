# ptxas' -v report as Triton prints it: parsed per entry function, and kept out of what a build shows.
import sys

from conftest import REPO  # noqa: F401 (puts python/ on sys.path)
from taot.compile import ptxas_report

SPILLING_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    16 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function 'softmax_kernel' for 'sm_90a'
ptxas info    : Function properties for softmax_kernel
    752 bytes stack frame, 1064 bytes spill stores, 1308 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 752 bytes cumulative stack size
ptxas info    : Compile time = 78.222 ms

"""


def test_the_entry_functions_report_is_read():
    assert ptxas_report.parse(SPILLING_LOG, "softmax_kernel") == {
        "registers": 32, "spill_stores": 1064, "spill_loads": 1308, "stack": 752}


def test_another_function_or_no_log_gives_nothing():
    assert ptxas_report.parse(SPILLING_LOG, "other_kernel") is None
    assert ptxas_report.parse("", "softmax_kernel") is None
    # registers without the frame line (a truncated log) is no report
    truncated = SPILLING_LOG.replace("    752 bytes stack frame, 1064 bytes spill stores, 1308 bytes spill loads\n", "")
    assert ptxas_report.parse(truncated, "softmax_kernel") is None


def test_the_log_is_removed_and_other_output_kept():
    assert ptxas_report.without_log(SPILLING_LOG) == ""
    assert ptxas_report.without_log("a print\n" + SPILLING_LOG) == "a print\n\n"


def test_recording_collects_the_log_and_passes_other_prints_on(capsys):
    from triton import knobs
    before = knobs.nvidia.dump_ptxas_log
    with ptxas_report.recording() as log:
        assert knobs.nvidia.dump_ptxas_log
        print(SPILLING_LOG)
        print("kernel says hi")
    assert knobs.nvidia.dump_ptxas_log == before
    assert ptxas_report.parse(log.text, "softmax_kernel")["registers"] == 32
    assert capsys.readouterr().out.strip() == "kernel says hi"
    assert sys.stdout is not log.buffer


def test_the_blackwell_ptxas_report_is_read():
    """Triton runs ptxas-blackwell for sm_100 and up; its lines say so."""
    log = SPILLING_LOG.replace("ptxas info", "ptxas-blackwell info")
    assert ptxas_report.parse(log, "softmax_kernel")["spill_loads"] == 1308
    assert ptxas_report.without_log(log) == ""
