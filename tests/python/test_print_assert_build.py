# Debug builds and static_print: `--debug` forces Triton's debug option on every kernel (ids and
# hashes change, tl.device_assert kept in the cubin), and tl.static_print output is captured per
# compile job and shown once per variant beside the progress lines.
import io

from conftest import base_spec
from taot.compile import jobs
from taot.compile.engine import build, plan_jobs
from taot.commands.compile import Progress
from taot.spec.validate import force_debug, load_spec

PRINTING_SOURCE = '''\
import triton
import triton.language as tl


@triton.jit
def checked_kernel(x_ptr, n, limit, BLOCK: tl.constexpr):
    tl.static_print("BLOCK is", BLOCK)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0)
    tl.device_assert(x < limit, "x reached limit")
    tl.store(x_ptr + offsets, x + 1, mask=mask)
'''


def printing_spec(options=None):
    kernel = {"name": "checked", "source": "checked.py", "function": "checked_kernel", "grid": ["cdiv(n, BLOCK)"],
              "args": {"x_ptr": "*i32", "n": "i32", "limit": "i32", "BLOCK": {"constexpr": [64, 128]}},
              "default": {"BLOCK": 64}}
    if options is not None:
        kernel["options"] = options
    return {"library": {"name": "checked", "targets": ["sm_90", "sm_80"]}, "kernel": [kernel]}


def load(project, spec, debug=False):
    (project.root / "checked.py").write_text(PRINTING_SOURCE)
    path = project.write_spec(spec)
    return load_spec(path, label="spec.toml", debug=debug)


def ids(library):
    return [variant.id for variants in library.variants.values() for variant in variants]


def test_debug_sets_the_option_on_every_kernel_and_changes_ids_and_hashes(project, tmp_path):
    release = load(project, printing_spec())
    debug = load(project, printing_spec(), debug=True)
    assert ids(release) == ["checked_i32_i32_i32_B64", "checked_i32_i32_i32_B128"]
    assert ids(debug) == [variant_id + "_dbg1" for variant_id in ids(release)]
    _, release_hashes = plan_jobs(release, tmp_path / "out")
    _, debug_hashes = plan_jobs(debug, tmp_path / "out")
    assert set(release_hashes.values()).isdisjoint(debug_hashes.values())
    planned, _ = plan_jobs(debug, tmp_path / "out")
    assert all(job.inputs["options"]["debug"] is True for job in planned)


def test_debug_overrides_what_the_spec_says():
    spec = base_spec()
    spec["kernel"][0]["options"] = {"num_warps": [4], "debug": [False, True]}
    spec["kernel"][0]["configs"] = [{"BLOCK": 64, "debug": False}, {"BLOCK": 128}]
    forced = force_debug(spec)
    assert forced["kernel"][0]["options"] == {"num_warps": [4], "debug": True}
    assert forced["kernel"][0]["configs"] == [{"BLOCK": 64, "debug": True}, {"BLOCK": 128}]
    assert spec["kernel"][0]["options"]["debug"] == [False, True]  # the caller's dict is left alone
    assert force_debug({"kernel": "not a list"}) == {"kernel": "not a list"}


def test_a_debug_build_keeps_device_asserts_and_a_release_build_has_none(project):
    for debug in (False, True):
        library = load(project, printing_spec(), debug=debug)
        build(library, project.root / "out", workers=1)
        cubins = sorted((project.root / "out" / "artifacts").glob("*/sm_90/*.cubin"))
        assert len(cubins) == 2
        assert all((b"__assertfail" in cubin.read_bytes()) == debug for cubin in cubins), (debug, cubins)


def test_static_print_is_captured_per_job_not_printed(project, capfd):
    library = load(project, printing_spec())
    planned, _ = plan_jobs(library, project.root / "out")
    outcome = jobs.run_job(planned[0])
    assert outcome.error is None
    assert outcome.static_print == "BLOCK is 64\n"
    out, err = capfd.readouterr()
    assert "BLOCK is" not in out + err


def test_static_print_output_of_a_failed_compile_is_kept(project):
    (project.root / "checked.py").write_text(PRINTING_SOURCE.replace("tl.store(", "tl.stor("))
    library = load_spec(project.write_spec(printing_spec()), label="spec.toml")
    planned, _ = plan_jobs(library, project.root / "out")
    outcome = jobs.run_job(planned[0])
    assert outcome.error is not None
    assert outcome.static_print == "BLOCK is 64\n"


def test_static_print_is_shown_once_per_variant_after_its_progress_line():
    stream = io.StringIO()
    progress = Progress(stream)
    outcomes = [jobs.Outcome("v_B64", "sm_90", 0.5, static_print="BLOCK is 64\nsecond line\n"),
                jobs.Outcome("v_B128", "sm_90", 0.5),
                jobs.Outcome("v_B64", "sm_80", 0.5, static_print="BLOCK is 64\nsecond line\n")]
    for done, outcome in enumerate(outcomes, start=1):
        progress(done, len(outcomes), outcome)
    progress.finish()
    assert stream.getvalue().splitlines() == [
        "[1/3] v_B64 sm_90 0.50s",
        "v_B64: static_print: BLOCK is 64",
        "v_B64: static_print: second line",
        "[2/3] v_B128 sm_90 0.50s",
        "[3/3] v_B64 sm_80 0.50s",
    ]


def test_static_print_ends_a_redrawn_progress_line_first():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    progress = Progress(stream)
    progress(1, 2, jobs.Outcome("v_B64", "sm_90", 0.5, static_print="BLOCK is 64\n"))
    progress(2, 2, jobs.Outcome("v_B128", "sm_90", 0.5))
    progress.finish()
    assert stream.getvalue() == ("\r\033[K[1/2] v_B64 sm_90 0.50s\nv_B64: static_print: BLOCK is 64\n"
                                 "\r\033[K[2/2] v_B128 sm_90 0.50s\n")
