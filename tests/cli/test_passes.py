"""`taot passes` through the real binary: Triton's own pipelines replayed pass by pass on IR that Triton
compiled here for sm_90 (no GPU needed); the final output must equal what Triton's own stage gives."""
import gzip
import json
import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

KERNEL = textwrap.dedent("""
    import json
    import sys
    import triton
    import triton.language as tl
    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    # Keep every real pass manager Triton makes (one per stage: ttir, ttgir, llir) to read its pipeline.
    made = []
    real_pass_manager = ir.pass_manager
    def keeping_pass_manager(context):
        made.append(real_pass_manager(context))
        return made[-1]
    ir.pass_manager = keeping_pass_manager

    @triton.jit
    def masked_add_sum(x, y, out, total, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        s = tl.load(x + offsets, mask=mask, other=0.0) + tl.load(y + offsets, mask=mask, other=0.0)
        tl.store(out + offsets, s, mask=mask)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for start in range(0, n, BLOCK):
            acc += tl.load(x + start + tl.arange(0, BLOCK), mask=start + tl.arange(0, BLOCK) < n, other=0.0)
        tl.atomic_add(total, tl.sum(s, axis=0) + tl.sum(acc, axis=0))

    folder = sys.argv[1]
    target = GPUTarget("cuda", 90, 32)
    backend = triton.compiler.make_backend(target)
    signature = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "total": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    source = ASTSource(masked_add_sum, signature, {"BLOCK": 1024}, {(0,): [["tt.divisibility", 16]]})
    options = backend.parse_options({"num_warps": 4}).__dict__
    compiled = triton.compile(source, target=target, options=options)
    for stage in ("ttir", "ttgir"):
        with open(f"{folder}/k.{stage}", "w") as stream:
            stream.write(compiled.asm[stage])
    with open(f"{folder}/pipelines.json", "w") as stream:
        json.dump(dict(zip(("ttir", "ttgir", "llir"), (pm.get_pipeline_str() for pm in made), strict=True)), stream)
    # The references: what Triton's own stages make from these files (a file's text loses what MLIR
    # does not print, such as the locations of loop-carried values, so compare with Triton from the file).
    with open(f"{folder}/triton_from_ttir.ttgir", "w") as stream:
        stream.write(triton.compile(f"{folder}/k.ttir", target=target, options=options).asm["ttgir"])
    with open(f"{folder}/triton_from_ttgir.llir", "w") as stream:
        stream.write(triton.compile(f"{folder}/k.ttgir", target=target, options=options).asm["llir"])
""")


@pytest.fixture(scope="session")
def triton_ir(tmp_path_factory):
    """k.ttir and k.ttgir as the installed Triton compiles the kernel above for sm_90, the pipelines it ran,
    and what Triton's own stages make from those files."""
    folder = tmp_path_factory.mktemp("triton_ir")
    (folder / "kernel.py").write_text(KERNEL)
    environment = dict(os.environ, TRITON_CACHE_DIR=str(folder / "cache"))
    subprocess.run([sys.executable, str(folder / "kernel.py"), str(folder)], check=True, env=environment,
                   timeout=300)
    return folder


@pytest.fixture
def ir_copy(triton_ir, tmp_path):
    """A fresh folder with copies of the reference IR files (so outputs land in the test's own folder)."""
    def copy(name):
        (tmp_path / name).write_text((triton_ir / name).read_text())
        return tmp_path / name
    return copy


def triton_pass_names(triton_ir, stage):
    """The MLIR pass names, without options, of the pass manager Triton's own `stage` function ran."""
    text = json.loads((triton_ir / "pipelines.json").read_text())[stage]
    while re.search(r"\{[^{}]*\}", text):
        text = re.sub(r"\{[^{}]*\}", "", text)
    assert text.startswith("any(") and text.endswith(")")
    return text[len("any("):-1].split(",")


@pytest.mark.parametrize("stage, ir_file", [("ttir", "k.ttir"), ("ttgir", "k.ttir"), ("llir", "k.ttgir")])
def test_the_listed_passes_are_the_ones_triton_runs(run_taot, triton_ir, stage, ir_file):
    listed = run_json(run_taot, triton_ir / ir_file, "--list", "--pipeline", stage)
    names = [step["mlir"] for step in listed["passes"] if step["pass"] != "translate-to-llvm-ir"]
    assert names == triton_pass_names(triton_ir, stage)


def run_json(run_taot, *args):
    result = run_taot("passes", *args, "--json", "-q")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert (document["schema"], document["schema_version"]) == ("taot.passes", 1)  # every command's --json
    return document


def test_ttgir_pipeline_replays_make_ttgir(run_taot, triton_ir, ir_copy, tmp_path):
    ttir = ir_copy("k.ttir")
    report = run_json(run_taot, ttir, "-o", tmp_path / "out")
    steps = {step["pass"]: step for step in report["steps"]}
    assert report["pipeline"] == "ttgir" and report["target"]["name"] == "sm_90"
    convert = steps["convert-to-ttgpuir"]
    assert convert["changed"] and convert["mlir"] == "convert-triton-to-tritongpu"
    assert convert["arguments"] == ["cuda:90", 4, 32, 1]
    assert any(not step["changed"] for step in report["steps"])
    assert len(steps) == len(report["steps"])  # names are unique
    assert {"canonicalizer", "canonicalizer.2", "coalesce", "remove-layout-conversions.2"} <= set(steps)
    out = tmp_path / "out"
    for step in report["steps"]:
        assert (out / step["file"]).is_file()
        assert step["file"] == f"{step['step']:02d}-{step['pass']}.ttgir"
    before, after = (out / "00-input.ttgir").read_text(), (out / "01-convert-to-ttgpuir.ttgir").read_text()
    assert "tt.func public @masked_add_sum" in before and "#ttg.blocked" not in before and "#ttg.blocked" in after
    # The replay, one pass manager per pass, gives exactly what Triton's own make_ttgir gives.
    assert (out / "final.ttgir").read_text() == (triton_ir / "triton_from_ttir.ttgir").read_text()
    assert json.loads((out / "passes.json").read_text())["steps"] == report["steps"]


def test_table_and_default_output_folder(run_taot, ir_copy, tmp_path):
    ttir = ir_copy("k.ttir")
    result = run_taot("passes", ttir)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[1]: line.split() for line in result.stdout.splitlines() if line[:3].strip().isdigit()}
    assert rows["convert-to-ttgpuir"][2] == "yes" and rows["f32-dot-tc"][2] == "no"
    assert "passes changed the IR" in result.stdout
    assert (tmp_path / "k.ttir.passes" / "final.ttgir").is_file()
    assert result.stderr == ""  # a short run shows no progress when stderr is not a terminal


def listed_index(run_taot, ir_file, pipeline, name):
    """The 1-based index `taot passes --list` gives pass `name` in a pipeline (where it is depends on
    the Triton release: its stage functions add different passes)."""
    listed = run_json(run_taot, ir_file, "--list", "--pipeline", pipeline)
    return next(step["index"] for step in listed["passes"] if step["pass"] == name)


def test_list_runs_nothing(run_taot, triton_ir, ir_copy, tmp_path):
    ttir = ir_copy("k.ttir")
    result = run_taot("passes", ttir, "--list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split()[:2] == ["1", "convert-to-ttgpuir"] and "add_convert_to_ttgpuir('cuda:90', 4, 32, 1)" in line
               for line in lines)
    assert not (tmp_path / "k.ttir.passes").exists()
    listed = run_json(run_taot, ttir, "--list", "--pipeline", "ttir")
    assert listed["passes"][0]["pass"] == "inliner"
    assert [step["mlir"] for step in listed["passes"]] == triton_pass_names(triton_ir, "ttir")
    assert not (tmp_path / "k.ttir.passes").exists()


def test_ttir_pipeline_changes_nothing_on_triton_ttir(run_taot, ir_copy, tmp_path):
    report = run_json(run_taot, ir_copy("k.ttir"), "--pipeline", "ttir", "-o", tmp_path / "out")
    assert report["final"] == "final.ttir" and len(report["steps"]) > 5
    assert not any(step["changed"] for step in report["steps"])  # make_ttir's output is its own fixpoint
    assert (tmp_path / "out" / "final.ttir").read_text() == (tmp_path / "out" / "00-input.ttir").read_text()


def test_named_passes_only_and_earlier_output_replaced(run_taot, ir_copy, tmp_path):
    ttir = ir_copy("k.ttir")
    out = tmp_path / "out"
    run_json(run_taot, ttir, "-o", out)
    (out / "notes.txt").write_text("mine")
    report = run_json(run_taot, ttir, "-o", out, "--passes", "1,coalesce,canonicalizer.2")
    second_canonicalizer = listed_index(run_taot, ttir, "ttgir", "canonicalizer.2")
    assert [(step["step"], step["index"], step["pass"]) for step in report["steps"]] == \
        [(1, 1, "convert-to-ttgpuir"), (2, 2, "coalesce"), (3, second_canonicalizer, "canonicalizer.2")]
    assert sorted(path.name for path in out.iterdir() if path.name != ".taot.lock") == [
        "00-input.ttgir", "01-convert-to-ttgpuir.ttgir", "02-coalesce.ttgir", "03-canonicalizer.2.ttgir",
        "final.ttgir", "notes.txt", "passes.json"]
    assert (out / "final.ttgir").read_text() == (out / "03-canonicalizer.2.ttgir").read_text()


def test_llir_pipeline_replays_make_llir(run_taot, triton_ir, ir_copy, tmp_path):
    report = run_json(run_taot, ir_copy("k.ttgir"), "-o", tmp_path / "out")
    assert report["pipeline"] == "llir"
    assert report["options"]["num_warps"] == {"value": 4, "from": "the IR"}
    names = [step["pass"] for step in report["steps"]]
    assert names[-1] == "translate-to-llvm-ir" and "to-llvmir" in names
    steps = {step["pass"]: step for step in report["steps"]}
    assert steps["to-llvmir"]["changed"] and steps["to-llvmir"]["ops_after"] > steps["to-llvmir"]["ops_before"]
    assert steps["to-llvmir"]["file"].endswith("-to-llvmir.mlir")
    assert steps["di-scope"]["locations_only"]
    assert report["metadata"]["shared"] > 0  # the tl.sum's scratch, as make_llir records it
    assert (tmp_path / "out" / "final.llir").read_text() == (triton_ir / "triton_from_ttgir.llir").read_text()


def test_artifact_folder_options(run_taot, triton_ir, tmp_path):
    folder = tmp_path / "artifacts" / "v" / "sm_90"
    folder.mkdir(parents=True)
    (folder / "k.ttir.gz").write_bytes(gzip.compress((triton_ir / "k.ttir").read_bytes()))
    (folder / "metadata.json").write_text(json.dumps({"num_warps": 8, "num_stages": 2, "arch": "sm90"}))
    listed = run_json(run_taot, folder / "k.ttir", "--list")  # the plain name finds the .gz taot keeps
    assert listed["options"]["num_warps"] == {"value": 8, "from": "metadata.json"}
    assert listed["passes"][0]["arguments"] == ["cuda:90", 8, 32, 1]
    assert {"from": "metadata.json", "value": 2} == listed["options"]["num_stages"]
    flagged = run_json(run_taot, folder / "k.ttir.gz", "--list", "--num-warps", "2", "--target", "sm_80")
    assert flagged["passes"][0]["arguments"] == ["cuda:80", 2, 32, 1]
    run_json(run_taot, folder / "k.ttir.gz")
    assert (folder / "k.ttir.passes" / "final.ttgir").is_file()


def test_a_failing_pass_is_named_and_earlier_output_kept(run_taot, ir_copy, tmp_path):
    out = tmp_path / "out"
    ttgir = ir_copy("k.ttgir")
    # Lowering to LLVM before shared memory is allocated fails inside Triton's pass.
    result = run_taot("passes", ttgir, "--passes", "to-llvmir", "-o", out, "-q")
    assert result.returncode == 1
    index = listed_index(run_taot, ttgir, "llir", "to-llvmir")
    assert f"pass {index} to-llvmir (nvidia.passes.ttgpuir.add_to_llvmir) failed" in result.stderr
    assert "00-input.mlir" in result.stderr and "error:" in result.stderr.split("failed", 1)[1]
    assert (out / "00-input.mlir").is_file() and not (out / "final.mlir").exists()
    assert json.loads((out / "passes.json").read_text())["failed"]["pass"] == "to-llvmir"


@pytest.mark.parametrize("args, named", [
    (["--passes", "1,bogus"], ["'bogus'", "1 convert-to-ttgpuir", "coalesce"]),
    (["--pipeline", "llir"], ["llir pipeline starts from a .ttgir"]),
])
def test_errors_about_the_pipeline(run_taot, ir_copy, args, named):
    result = run_taot("passes", ir_copy("k.ttir"), *args)
    assert result.returncode == 1
    for text in named:
        assert text in result.stderr


def test_errors_about_the_file(run_taot, ir_copy, tmp_path):
    missing = run_taot("passes", tmp_path / "absent.ttir")
    assert missing.returncode == 1 and "absent.ttir: no such file" in missing.stderr
    (tmp_path / "k.ptx").write_text("//")
    wrong = run_taot("passes", tmp_path / "k.ptx")
    assert wrong.returncode == 1 and "k.ptx: expected a .ttir or .ttgir file" in wrong.stderr
    (tmp_path / "bad.ttir").write_text("module {\n  tt.func @f() {\n    %0 = arith.bogus 1\n  }\n}\n")
    bad = run_taot("passes", tmp_path / "bad.ttir")
    assert bad.returncode == 1
    assert "bad.ttir: not a valid MLIR module" in bad.stderr and "'arith.bogus' is unknown" in bad.stderr
    (tmp_path / "damaged.ttir.gz").write_bytes(b"not gzip")
    damaged = run_taot("passes", tmp_path / "damaged.ttir.gz")
    assert damaged.returncode == 1 and "damaged.ttir.gz: cannot be read as IR text" in damaged.stderr
    conflict = run_taot("passes", ir_copy("k.ttgir"), "--num-warps", "8")
    assert conflict.returncode == 1 and "ttg.num-warps = 4" in conflict.stderr and "--num-warps 8" in conflict.stderr


@pytest.mark.parametrize("args, named", [
    (["--target", "sm_77"], "--target sm_77"),
    (["--num-warps", "3"], "--num-warps 3: expected a power of 2"),
    (["--pipeline", "ptx"], "--pipeline"),
])
def test_usage_errors(run_taot, ir_copy, args, named):
    result = run_taot("passes", ir_copy("k.ttir"), *args)
    assert result.returncode == 2
    assert named in result.stderr


def test_two_runs_into_one_folder_take_turns(taot_bin, ir_copy, tmp_path):
    """Each run holds OUTDIR's lock while it writes: the folder ends with one run's files, complete,
    and --no-wait fails naming the holder instead of waiting."""
    ttir, ttgir = ir_copy("k.ttir"), ir_copy("k.ttgir")
    out = tmp_path / "shared_out"
    first = subprocess.Popen([str(taot_bin), "passes", str(ttir), "-o", str(out)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not (out / ".taot.lock").exists() and time.time() < deadline:
        time.sleep(0.05)
    busy = subprocess.run([str(taot_bin), "passes", str(ttgir), "-o", str(out), "--no-wait"], capture_output=True,
                          text=True, timeout=300)
    second = subprocess.run([str(taot_bin), "passes", str(ttgir), "-o", str(out)], capture_output=True, text=True,
                            timeout=300)
    assert first.wait(timeout=300) == 0, first.stderr.read()
    assert second.returncode == 0, second.stderr
    if busy.returncode != 0:  # the first run still held the lock (it usually does)
        assert "is being built by" in busy.stderr, busy.stderr
    report = json.loads((out / "passes.json").read_text())
    assert report["input"] == str(ttgir)
    listed = set(report["files"])
    written = {path.name for path in out.iterdir()} - {"passes.json", ".taot.lock"}
    assert written == listed, written ^ listed  # nothing of the first run's is left beside the second's


def test_a_full_disk_names_the_folder_and_leaves_a_report_of_what_was_written(run_taot, ir_copy, small_filesystem):
    out = small_filesystem.path / "out"
    result = run_taot("passes", ir_copy("k.ttir"), "-o", out, "-q")
    assert result.returncode == 1
    assert result.stderr == (f"error: {out}: No space left on device (while writing there; free space and run the "
                             "command again: what is done is kept)\n")
    report = json.loads((out / "passes.json").read_text())
    written = sorted(path.name for path in out.iterdir() if path.name not in ("passes.json", ".taot.lock"))
    assert report["files"] and sorted(report["files"]) == written  # no partial or temporary file beside them
    assert report["final"] is None
    small_filesystem.remount("size=64m")
    again = run_taot("passes", ir_copy("k.ttir"), "-o", out, "-q")
    assert again.returncode == 0, again.stderr
    assert (out / "final.ttgir").is_file()
