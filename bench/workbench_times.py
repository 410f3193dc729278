"""The workbench's figures, no GPU needed: `taot inspect` of a large library (cold: its first run
after the build; then warm), and `taot from-ir` of one variant from each stage (ttir, ttgir, llir,
ptx, cubin), the stage file being the variant's own (so each rebuild gives the compiled cubin back).

  TAOT_BIN=build/tools/taot/taot python3 bench/workbench_times.py [--spec bench/specs/softmax_1000.toml]
      [--library DIR (already built from --spec: inspect it instead of building)] [-j N]
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def taot(*arguments, check=True):
    binary = os.environ.get("TAOT_BIN", str(ROOT / "build" / "tools" / "taot" / "taot"))
    start = time.perf_counter()
    result = subprocess.run([binary, *map(str, arguments)], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if check and result.returncode != 0:
        sys.exit(f"taot {' '.join(map(str, arguments))} failed:\n{result.stderr}")
    return result, seconds


def inspect_figures(library):
    manifest = json.loads((library / "manifest.json").read_text())
    variants = sum(len(kernel["variants"]) for kernel in manifest["kernels"])
    images = sum(len(variant["images"]) for kernel in manifest["kernels"] for variant in kernel["variants"])
    _, cold = taot("inspect", library)
    warm = sorted(taot("inspect", library)[1] for _ in range(5))
    _, as_json = taot("inspect", library, "--json")
    print(f"taot inspect of {library.name}: {variants} variants, {images} images")
    print(f"  first run {cold:.3f} s; then median {warm[2]:.3f} s (min {warm[0]:.3f}); --json {as_json:.3f} s")


def from_ir_figures(work):
    library = work / "vector_add"
    taot("build", ROOT / "examples" / "vector_add" / "vector_add.toml", "-o", library, "-q", "-j", "2")
    manifest = json.loads((library / "manifest.json").read_text())
    variant = manifest["kernels"][0]["variants"][0]
    image = next(image for image in variant["images"] if image["target"] == "sm_90")
    folder = library / image["dir"]
    stages = {}
    for stage in ("ttir", "ttgir", "llir", "ptx"):
        source = folder / f"{image['function_name']}.{stage}.gz"
        plain = work / f"edited.{stage}"
        plain.write_bytes(gzip.decompress(source.read_bytes()))
        stages[stage] = plain
    stages["cubin"] = work / "edited.cubin"
    shutil.copyfile(library / image["cubin"], stages["cubin"])
    compiled = (library / image["cubin"]).read_bytes()
    print(f"taot from-ir of {variant['id']} for sm_90, from each stage (wall time of the command, then "
          f"--drop; the same cubin back each time):")
    for stage, path in stages.items():
        result, seconds = taot("from-ir", path, "--variant", variant["id"], "--target", "sm_90", "-o", library, "-q")
        rebuilt = json.loads((library / "manifest.json").read_text())["kernels"][0]["variants"][0]
        same = (library / next(i for i in rebuilt["images"] if i["target"] == "sm_90")["cubin"]).read_bytes() == compiled
        taot("from-ir", "--drop", "--variant", variant["id"], "--target", "sm_90", "-o", library, "-q")
        print(f"  {stage:6} {seconds:6.2f} s  {'same cubin' if same else 'DIFFERENT cubin'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default=str(ROOT / "bench" / "specs" / "softmax_1000.toml"))
    parser.add_argument("--library", help="a library already built from --spec")
    parser.add_argument("-j", "--jobs", default=str(os.cpu_count() or 1))
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        library = Path(arguments.library) if arguments.library else work / Path(arguments.spec).stem
        if not arguments.library:
            _, seconds = taot("build", arguments.spec, "-o", library, "-q", "-j", arguments.jobs)
            print(f"built {library.name} in {seconds:.0f} s")
        inspect_figures(library)
        from_ir_figures(work)


if __name__ == "__main__":
    main()
