"""Output folder size against cubin size, per example spec: `taot build SPEC -o FRESH -j N` with the
default IR storage (and, with --ir-modes, the others), then the bytes of what the compile wrote
(manifest.json + artifacts/), of the generated sources, and of the cubins. Target: the compile's
output at most 2x its cubins. Needs no GPU.

    python3 bench/output_size.py [SPEC ...] [-j N] [--ir-modes compressed plain none] [--taot PATH]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def sizes(out):
    """Bytes (file sizes, as `du -b` counts them) by part of the output folder."""
    parts = {"cubins": 0, "ir": 0, "records": 0, "manifest": 0, "generated": 0}
    for path in Path(out).rglob("*"):
        if not path.is_file() or "build" in path.relative_to(out).parts[:1]:
            continue
        size = path.stat().st_size
        if path.parts[len(Path(out).parts)] == "artifacts":
            key = "cubins" if path.suffix == ".cubin" else "records" if path.suffix == ".json" else "ir"
        elif path.name == "manifest.json":
            key = "manifest"
        elif path.name == ".taot.lock":
            continue
        else:
            key = "generated"
        parts[key] += size
    return parts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="*", help="spec files (default: every examples/*/*.toml)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--ir-modes", nargs="+", default=["compressed"], choices=["compressed", "plain", "none"])
    parser.add_argument("--taot", default=os.environ.get("TAOT_BIN", str(REPO / "build" / "tools" / "taot" / "taot")))
    arguments = parser.parse_args()
    specs = arguments.specs or sorted(str(path) for path in (REPO / "examples").glob("*/*.toml"))
    print(f"{'spec':<24} {'--ir':<10} {'jobs':>5} {'cubins MiB':>10} {'IR':>6} {'records':>7} {'manifest':>8} "
          f"{'compile output':>14} {'x cubins':>8} {'+ generated':>11} {'x cubins':>8} {'seconds':>7}")
    worst = 0.0
    for spec in specs:
        for mode in arguments.ir_modes:
            with tempfile.TemporaryDirectory(prefix="taot-output-size-") as folder:
                out = Path(folder) / "out"
                command = [arguments.taot, "build", spec, "-o", str(out), "-j", str(arguments.jobs), "--quiet",
                           "--ir", mode]
                start = time.perf_counter()
                result = subprocess.run(command, capture_output=True, text=True)
                seconds = time.perf_counter() - start
                if result.returncode != 0:
                    print(f"{Path(spec).name}: taot build failed (exit {result.returncode}):\n{result.stderr[-3000:]}",
                          file=sys.stderr)
                    return 1
                part = sizes(out)
                jobs = sum(1 for _ in (out / "artifacts").glob("*/*/*.cubin"))
            cubins = part["cubins"]
            compiled = cubins + part["ir"] + part["records"] + part["manifest"]
            if mode == "compressed":
                worst = max(worst, compiled / cubins)
            mib = 2.0 ** 20
            print(f"{Path(spec).name:<24} {mode:<10} {jobs:>5} {cubins / mib:>10.2f} {part['ir'] / cubins:>5.2f}x "
                  f"{part['records'] / cubins:>6.2f}x {part['manifest'] / cubins:>7.2f}x {compiled / mib:>10.2f} MiB "
                  f"{compiled / cubins:>7.2f}x {(compiled + part['generated']) / mib:>7.2f} MiB "
                  f"{(compiled + part['generated']) / cubins:>7.2f}x {seconds:>7.1f}")
    print(f"IR, records (inputs.json + metadata.json) and manifest as multiples of the cubins' bytes; "
          f"largest compile output with the default --ir compressed: {worst:.2f}x its cubins (target 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
