"""`taot bench` and `taot tune` on a GPU, through the command line, on libraries that the
build_module fixture (tests/gpu_modules.py) builds:
vector_add and matmul benched against torch and Triton JIT; fused_moe_tune (the MoE GEMM over a
subset of vLLM's config grid) tuned over its bench file's M values, its table loaded and baked
into a rebuilt library whose automatic choice is checked. Figures are printed as the tests go."""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from gpu_modules import module_fixture  # tests/gpu_modules.py, through the repo's conftest.py

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

from taot.measure import report as bench_report  # noqa: E402

pytestmark = pytest.mark.gpu
vector_add = module_fixture("examples/vector_add/vector_add.toml")
matmul = module_fixture("examples/matmul/matmul.toml")
fused_moe_tune = module_fixture("bench/specs/fused_moe_tune.toml")


def taot(*arguments, timeout=560):
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    result = subprocess.run([sys.executable, "-m", "taot", *map(str, arguments)], capture_output=True, text=True,
                            env=environment, timeout=timeout)
    print(result.stdout)
    print(result.stderr[-4000:], file=sys.stderr)
    return result


def bench_and_read(library, bench_file, *extra):
    out = Path(tempfile.mkdtemp()) / library.name
    result = taot("bench", library, "--bench", ROOT / bench_file, "-o", out, "--warmup-ms", "5",
                  "--rep-ms", "30", *extra)
    assert result.returncode == 0, result.stderr
    assert Path(f"{out}.png").stat().st_size > 1000
    return bench_report.read_json(f"{out}.json")


def by_implementation(report):
    table = {}
    for record in report.records:
        table.setdefault(tuple(sorted(record.shape.items())), {})[record.implementation] = record
    return table


def test_bench_vector_add_against_torch_and_jit(vector_add):
    report = bench_and_read(vector_add.folder, "examples/vector_add/bench_vector_add.py", "--where", "dtype=fp32")
    rows = by_implementation(report)
    assert len(rows) == 9
    for shape, implementations in rows.items():
        assert set(implementations) == {"auto", "torch", "triton"}, shape
        assert all(r.median_ms > 0 for r in implementations.values())
    largest = rows[max(rows, key=lambda shape: dict(shape)["n"])]
    ratio = largest["auto"].median_ms / largest["torch"].median_ms
    print(f"vector_add 2^26 fp32: auto {largest['auto'].gbps:.0f} GB/s, torch {largest['torch'].gbps:.0f} GB/s, "
          f"auto/torch time {ratio:.3f}")
    assert 0.8 < ratio < 1.25  # both are bandwidth-bound: the same time within noise


def test_bench_matmul_against_cublas_with_every_variant(matmul):
    report = bench_and_read(matmul.folder, "examples/matmul/bench_matmul.py", "--kernel", "matmul", "--where",
                            "dtype=bf16", "--where", "M=4096", "--variants", "auto,all")
    rows = by_implementation(report)
    (implementations,) = rows.values()
    assert {"auto", "torch", "triton"} <= set(implementations)
    variants = [r for r in implementations.values() if r.kind == "variant"]
    assert len(variants) >= 2
    auto = implementations["auto"]
    best = min(variants, key=lambda r: r.median_ms)
    print(f"matmul 4096^3 bf16: auto {auto.tflops:.0f} TFLOP/s, best variant {best.implementation} "
          f"{best.tflops:.0f}, cuBLAS {implementations['torch'].tflops:.0f}")
    assert auto.tflops > 100


def test_tune_fused_moe_then_the_table_drives_the_automatic_choice(fused_moe_tune):
    library = fused_moe_tune.folder
    out = Path(tempfile.mkdtemp())
    result = taot("tune", library, "--bench", ROOT / "examples/fused_moe/bench_fused_moe.py", "-o", out, "--restart")
    assert result.returncode == 0, result.stderr
    import torch
    count = torch.cuda.device_count()  # --gpus all: a worker on every GPU of the host
    assert f"on GPU{'s' if count > 1 else ''} {', '.join(map(str, range(count)))}" in result.stderr
    assert result.stderr.count("worker ready in") >= count
    table = json.loads((out / "fused_moe_kernel.json").read_text())
    vllm_files = list(out.glob("device_name=*.json"))
    assert len(vllm_files) == 1
    entries = {entry["key"][0]: entry for entry in table["entries"]}
    assert len(entries) == 18
    assert "picks the tuned variant for 18 of 18 shapes" in result.stderr
    # The journal: every candidate of every key has an outcome.
    lines = [json.loads(line) for line in (out / "fused_moe_kernel.journal.jsonl").read_text().splitlines()]
    begins = {line["task"]: len(line["candidates"]) for line in lines if line.get("begin")}
    results = [line for line in lines if "result" in line]
    assert len(results) == sum(begins.values())
    # Baked in: gen with the vLLM file, rebuild, and the automatic choice follows the table.
    rebuilt = out / "rebuilt"
    subprocess.run(["cp", "-r", str(library), str(rebuilt)], check=True)
    subprocess.run(["rm", "-rf", str(rebuilt / "build")], check=True)  # its cache names the first folder
    gen = subprocess.run([os.environ.get("TAOT_BIN", "taot"), "gen", str(rebuilt / "manifest.json"), "-o", str(rebuilt),
                          "--python", "--tuning", f"fused_moe_kernel={vllm_files[0]}"], capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr
    for command in (["cmake", "-S", str(rebuilt), "-B", str(rebuilt / "build"), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                     f"-DTAOT_SOURCE_DIR={ROOT}", f"-DPython_EXECUTABLE={sys.executable}"],
                    ["cmake", "--build", str(rebuilt / "build")]):
        build = subprocess.run(command, capture_output=True, text=True)
        assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-2000:]
    check = subprocess.run([sys.executable, "-c", CHECK_CHOICES, str(rebuilt), str(out / "fused_moe_kernel.json"),
                            str(ROOT / "examples/fused_moe/bench_fused_moe.py")],
                           capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT / "python") + os.pathsep + str(ROOT / "examples/fused_moe")))
    print(check.stdout, check.stderr[-3000:])
    assert check.returncode == 0 and "18 of 18" in check.stdout


# In a fresh process (the rebuilt module has the same name as the first): for each tune shape, the
# variant the rebuilt library chooses with no table loaded is the one the tuner picked, by the table.
CHECK_CHOICES = r"""
import json, sys
from taot.measure.bench import ArgumentCache
from taot.measure.benchfile import load_bench_file
from taot.library.built import load_library
library = load_library(sys.argv[1])
tuned = {e["key"][0]: e["measured"]["variant"] for e in json.load(open(sys.argv[2]))["entries"]}
kernel, info = library.kernel("fused_moe_kernel"), library.info("fused_moe_kernel")
kernel_bench = load_bench_file(sys.argv[3]).kernel("fused_moe_kernel")
variants = kernel.variants()
m_position = info.parameters.index(info.tuning_key[0])
agree = 0
for shape in kernel_bench.tune_shapes:
    cache = ArgumentCache(kernel_bench, info, "cuda:0")
    args, _, _ = cache.entry(shape, cache.default_config(kernel))
    index, step = kernel.choose(*args)
    args, _, _ = cache.entry(shape, variants[index]["config"])
    index, step = kernel.choose(*args)
    same = variants[index]["id"] == tuned[args[m_position]] and step == "table"
    agree += same
    if not same:
        print(f"{dict(shape)}: chose {variants[index]['id']} by {step}, tuned {tuned[args[m_position]]}")
print(f"{agree} of {len(kernel_bench.tune_shapes)} shapes choose the tuned variant from the baked table")
sys.exit(0 if agree == len(kernel_bench.tune_shapes) else 1)
""".strip()
