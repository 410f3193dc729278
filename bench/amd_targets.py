"""Compile time per target: each example spec compiled from nothing for sm_90, gfx942 and gfx950, one
target at a time (`taot compile SPEC --target T -o FRESH -j N`), side by side in one run: variants,
wall seconds, compile core-seconds per variant, and the variants refused (an AMD variant over the
target's LDS). Needs no GPU.

    python3 bench/amd_targets.py [SPEC ...] [--targets sm_90,gfx942,gfx950] [-j N] [--taot PATH]
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = ("vector_add/vector_add.toml", "softmax/softmax.toml", "layer_norm/layer_norm.toml",
            "matmul/matmul.toml", "persistent_matmul/persistent_matmul.toml", "fused_moe/fused_moe.toml")
_PROGRESS = re.compile(r"^\[\d+/\d+\] \S+ \S+ ([\d.]+)s$", re.MULTILINE)


def compile_once(taot, spec, target, jobs):
    """(variants in the manifest, wall seconds, compile core-seconds, refused variants, exit code)."""
    folder = Path(tempfile.mkdtemp(prefix="taot-amd-bench-"))
    try:
        start = time.perf_counter()
        done = subprocess.run([taot, "compile", spec, "--target", target, "-o", str(folder / "lib"), "-j", str(jobs)],
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        core_seconds = sum(float(value) for value in _PROGRESS.findall(done.stderr))
        refused = done.stderr.count("bytes of LDS (shared memory) per workgroup")
        manifest = folder / "lib" / "manifest.json"
        variants = sum(len(kernel["variants"]) for kernel in json.loads(manifest.read_text())["kernels"]) \
            if manifest.exists() else 0
        if done.returncode != 0 and not refused:
            print(done.stderr[-2000:])
        return variants, seconds, core_seconds, refused, done.returncode
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", default=[str(REPO / "examples" / name) for name in EXAMPLES])
    parser.add_argument("--targets", default="sm_90,gfx942,gfx950")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--taot", default=os.environ.get("TAOT_BIN", str(REPO / "build" / "tools" / "taot" / "taot")))
    arguments = parser.parse_args()
    targets = arguments.targets.split(",")
    print(f"{'spec':<28} {'target':<7} {'variants':>8} {'wall s':>8} {'core s/variant':>15} {'refused':>8}  (-j {arguments.jobs})")
    for spec in arguments.specs:
        for target in targets:
            variants, seconds, core, refused, code = compile_once(arguments.taot, spec, target, arguments.jobs)
            compiled = max(variants, 1)
            print(f"{Path(spec).name:<28} {target:<7} {variants:>8} {seconds:>8.1f} {core / compiled:>15.3f} "
                  f"{refused:>8}" + ("" if code == 0 or refused else f"  (exit {code})"), flush=True)


if __name__ == "__main__":
    main()
