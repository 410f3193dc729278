"""`taot compile --list` of very large specs: wall time and peak resident memory of the whole command,
for this front end and, side by side in the same run, an earlier commit's (--before REF). The specs are
a product of three constexpr lists and an int hint, no filters: N variants for one target. Needs no GPU.

    python3 bench/list_memory.py [--sizes 120000,960000] [--before REF] [--timeout SECONDS]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from enumeration import extract_front_end  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
KERNEL = """
import triton
import triton.language as tl


@triton.jit
def list_kernel(x_ptr, n, A: tl.constexpr, B: tl.constexpr, C: tl.constexpr):
    tl.store(x_ptr + tl.program_id(0), A + B + C)
"""


def write_spec(folder, variants):
    """A spec of exactly `variants` variants (a multiple of 30,000: 3 hints x 100 x 100 x C)."""
    if variants % 30_000:
        raise SystemExit(f"--sizes {variants}: expected a multiple of 30,000")
    (folder / "k.py").write_text(KERNEL)
    spec = folder / f"list_{variants}.toml"
    spec.write_text(f"""[library]
name = "listing"
targets = ["sm_90"]

[[kernel]]
name = "list_kernel"
source = "k.py"
grid = ["n", 1, 1]

[kernel.args]
x_ptr = {{ type = "*fp32", align = [16] }}
n = {{ type = "i32", hint = [16, 1, "none"] }}
A = {{ constexpr = {list(range(100))} }}
B = {{ constexpr = {list(range(100))} }}
C = {{ constexpr = {list(range(variants // 30_000))} }}
""")
    return spec


def measure(python_path, spec, timeout):
    """(seconds, peak RSS in MiB, ids listed) of `python -m taot compile SPEC --list`, or an error line."""
    env = dict(os.environ, PYTHONPATH=str(python_path))
    start = time.perf_counter()
    with tempfile.TemporaryFile() as listing:
        process = subprocess.Popen([sys.executable, "-m", "taot", "compile", str(spec), "--list", "-q",
                                    "--max-variants", "100000000"], cwd=spec.parent, env=env, stdout=listing,
                                   stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if process.poll() is None:
            process.kill()
            process.wait()
            return f"did not finish in {timeout} s"
        seconds = time.perf_counter() - start
        if process.returncode != 0:
            return (process.stderr.read().decode().strip().splitlines() or ["failed"])[-1][:100]
        listing.seek(0)
        ids = sum(1 for _ in listing) - 1
    return seconds, ids


def run_one(python_path, spec, timeout):
    """Runs measure() in a child of its own so that RUSAGE_CHILDREN's peak is this command's alone."""
    import json
    code = (f"import json, resource, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import list_memory; "
            f"from pathlib import Path; result = list_memory.measure({str(python_path)!r}, Path({str(spec)!r}), "
            f"{timeout}); peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024; "
            "print(json.dumps([result, peak]))")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    result, peak = json.loads(child.stdout)
    if isinstance(result, str):
        return f"| {result} | |"
    seconds, ids = result
    return f"{ids:,} ids | {seconds:.1f} s | {peak:.0f} MiB"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="120000,960000", help="variant counts, multiples of 30,000")
    parser.add_argument("--before", help="a git ref whose front end runs beside this one")
    parser.add_argument("--timeout", type=float, default=1200)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        fronts = [("this tree", REPO / "python")]
        if arguments.before:
            (folder / "before").mkdir()
            fronts.append((arguments.before, extract_front_end(arguments.before, folder / "before")))
        print("| variants | front end | listed | time | peak RSS |")
        print("|---|---|---|---|---|")
        for size in (int(text) for text in arguments.sizes.split(",")):
            spec = write_spec(folder, size)
            for name, python_path in fronts:
                print(f"| {size:,} | {name} | {run_one(python_path, spec, arguments.timeout)} |", flush=True)


if __name__ == "__main__":
    main()
