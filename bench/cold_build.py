"""Cold build of a large library: `taot build SPEC -o FRESH_FOLDER -j N` from nothing (compile with
Triton, then gen), timed, with the output folder's size against its cubins'. Needs no GPU; the
figure that matters comes from a 16-core GPU machine.

    python3 bench/cold_build.py [SPEC] [-j N] [--taot PATH]
"""
import argparse
import os
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
    parser.add_argument("spec", nargs="?", default=str(REPO / "bench" / "specs" / "matmul_1000.toml"))
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--taot", default=os.environ.get("TAOT_BIN", str(REPO / "build" / "tools" / "taot" / "taot")))
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="taot-cold-build-") as folder:
        out = Path(folder) / "out"
        command = [arguments.taot, "build", arguments.spec, "-o", str(out), "-j", str(arguments.jobs), "--quiet"]
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            print(result.stdout[-2000:] + result.stderr[-4000:], file=sys.stderr)
            return result.returncode
        import json
        manifest = json.loads((out / "manifest.json").read_text())
        variants = sum(len(kernel["variants"]) for kernel in manifest["kernels"])
        images = sum(len(variant["images"]) for kernel in manifest["kernels"] for variant in kernel["variants"])
        total, cubins = folder_bytes(out), folder_bytes(out, ".cubin")
        print(f"cold build of {Path(arguments.spec).name}: {variants} variants, {images} compile jobs, -j {arguments.jobs} "
              f"({os.cpu_count()} cores): {seconds:.1f} s ({images / seconds:.1f} jobs/s)")
        print(f"output folder {total / 2**20:.1f} MiB, cubins {cubins / 2**20:.1f} MiB: {total / cubins:.2f}x")
        start = time.perf_counter()
        again = subprocess.run(command, capture_output=True, text=True)
        print(f"no-change rebuild: {time.perf_counter() - start:.1f} s (exit {again.returncode})")
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
