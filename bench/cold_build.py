"""Cold build of large libraries: `taot build SPEC -o FRESH_FOLDER -j N` from nothing (compile with
Triton, then gen), timed, with how busy the workers were (the compile seconds the progress lines
report, over wall time x workers) and the output folder's size against its cubins'. Needs no GPU;
the figure that matters comes from a 16-core GPU machine.

    python3 bench/cold_build.py [SPEC ...] [-j N] [--taot PATH]

Default specs: bench/specs/softmax_1000.toml (480 light variants: the softmax kernel's
@triton.heuristics keep one warp count per tile; 960 before) and matmul_1000.toml (1016 matmul tiles
up to 256 x 256 with up to 5 stages: LLVM and ptxas take ~1.5 core-seconds per tile).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def folder_bytes(folder, suffix=None):
    return sum(path.stat().st_size for path in Path(folder).rglob("*")
               if path.is_file() and (suffix is None or path.name.endswith(suffix)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=[str(REPO / "bench" / "specs" / name)
                                                      for name in ("softmax_1000.toml", "matmul_1000.toml")])
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--taot", default=os.environ.get("TAOT_BIN", str(REPO / "build" / "tools" / "taot" / "taot")))
    arguments = parser.parse_args()
    for spec in arguments.specs:
        status = cold_build(spec, arguments)
        if status != 0:
            return status
    return 0


JOB_LINE = re.compile(r"^\[\d+/\d+\] \S+ \S+ (\d+\.\d+)s$")


def cold_build(spec, arguments):
    with tempfile.TemporaryDirectory(prefix="taot-cold-build-") as folder:
        out = Path(folder) / "out"
        command = [arguments.taot, "build", spec, "-o", str(out), "-j", str(arguments.jobs)]
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            print(result.stdout[-2000:] + result.stderr[-4000:], file=sys.stderr)
            return result.returncode
        job_seconds = sum(float(match.group(1)) for match in map(JOB_LINE.match, result.stderr.splitlines()) if match)
        compile_step = re.search(r"^compiled \d+, up to date \d+, in (\d+\.\d+)s$", result.stderr, re.MULTILINE)
        manifest = json.loads((out / "manifest.json").read_text())
        variants = sum(len(kernel["variants"]) for kernel in manifest["kernels"])
        images = sum(len(variant["images"]) for kernel in manifest["kernels"] for variant in kernel["variants"])
        compiled = sum(path.stat().st_size for path in (out / "artifacts").rglob("*") if path.is_file()) + \
            (out / "manifest.json").stat().st_size
        total, cubins = folder_bytes(out), folder_bytes(out, ".cubin")
        print(f"cold build of {Path(spec).name}: {variants} variants, {images} compile jobs, -j {arguments.jobs} "
              f"({os.cpu_count()} cores): {seconds:.1f} s ({images / seconds:.1f} jobs/s); compile seconds "
              f"{job_seconds:.0f} = {job_seconds / images:.2f} s per job, workers busy "
              f"{job_seconds / (seconds * arguments.jobs):.0%} of the wall time")
        if compile_step:
            print(f"  of which the compile step {compile_step.group(1)} s, gen (and the rest) "
                  f"{seconds - float(compile_step.group(1)):.1f} s")
        print(f"  output: compile {compiled / 2**20:.1f} MiB = {compiled / cubins:.2f}x the cubins "
              f"({cubins / 2**20:.1f} MiB); with the generated sources {total / cubins:.2f}x")
        start = time.perf_counter()
        again = subprocess.run(command + ["--quiet"], capture_output=True, text=True)
        print(f"  no-change rebuild: {time.perf_counter() - start:.1f} s (exit {again.returncode})")
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
