"""`taot bench` without a GPU: its usage errors, the library and bench-file errors it reports before
any GPU work, and the parts of its engine that need no device."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from taot.measure import bench
from taot.measure.benchfile import load_bench_file
from taot.commands.bench import shape_filter
from taot.errors import TaotError
from taot.library.built import load_library, manifest_kernels

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD_BENCH = ROOT / "examples" / "vector_add" / "bench_vector_add.py"


def taot_bench(*arguments):
    environment = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    return subprocess.run([sys.executable, "-m", "taot", "bench", *map(str, arguments)], capture_output=True,
                          text=True, env=environment, timeout=120)


def test_usage_errors_name_the_option_and_value(tmp_path):
    result = taot_bench(tmp_path, "--bench", VECTOR_ADD_BENCH, "--where", "n4096")
    assert result.returncode == 2 and "--where n4096: expected DIM=VALUE[,VALUE...]" in result.stderr
    result = taot_bench(tmp_path, "--bench", VECTOR_ADD_BENCH, "--peak", "gbps=fast")
    assert result.returncode == 2 and "gbps=fast" in result.stderr
    result = taot_bench(tmp_path, "--bench", VECTOR_ADD_BENCH, "--rep-ms", "0")
    assert result.returncode == 2 and "--rep-ms 0" in result.stderr
    result = taot_bench(tmp_path, "--bench", VECTOR_ADD_BENCH, "--variants", ",")
    assert result.returncode == 2 and "--variants" in result.stderr


def test_errors_before_any_gpu_work(tmp_path):
    result = taot_bench(tmp_path / "missing", "--bench", VECTOR_ADD_BENCH)
    assert result.returncode == 1 and "missing: no such library folder" in result.stderr
    result = taot_bench(tmp_path, "--bench", VECTOR_ADD_BENCH, "--baselines", "cublas")
    assert result.returncode == 1 and "--baselines cublas: not in " in result.stderr
    assert "torch, triton" in result.stderr
    result = taot_bench(tmp_path, "--bench", VECTOR_ADD_BENCH)
    assert result.returncode == 1 and "no manifest.json here" in result.stderr


def test_a_library_whose_module_is_not_built_says_how_to_build_it(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"schema": "taot.manifest", "schema_version": 2,
                                                        "library": "vector_add", "kernels": []}))
    with pytest.raises(TaotError, match="the Python module vector_add is not built.*--build-library"):
        load_library(tmp_path)
    assert manifest_kernels(tmp_path) == ("vector_add", {})


@pytest.mark.parametrize("manifest, message", [
    ("[", "not valid JSON"),
    ([], "expected a taot manifest (schema taot.manifest), got list"),
    ({"library": "vector_add", "kernels": []}, "expected a taot manifest (schema taot.manifest), got None"),
    ({"schema": "taot.manifest", "schema_version": 1, "library": "vector_add", "kernels": []},
     "expected schema_version 2 (the version this taot reads), got 1"),
    ({"schema": "taot.manifest", "schema_version": 2, "library": "vector_add",
      "kernels": [{"name": "k", "args": [{"name": "x", "kind": "vector"}], "variants": []}]},
     "expected args of k each with a name and a kind (pointer, int, float, bool, tensordesc, scalar, constexpr)"),
])
def test_every_reader_of_a_manifest_names_the_file_and_what_is_wrong(tmp_path, manifest, message):
    from taot.library import overrides
    from taot.library.built import read_manifest
    path = tmp_path / "manifest.json"
    path.write_text(manifest if isinstance(manifest, str) else json.dumps(manifest))
    for read in (read_manifest, manifest_kernels, load_library, overrides.load_manifest):
        with pytest.raises(TaotError) as error:
            read(tmp_path)
        assert str(error.value).startswith(f"{path}: ") and message in str(error.value), str(error.value)


def test_variant_selection_and_shape_filters():
    assert bench.parse_variant_selection("auto, 3,add_kernel_x") == ["auto", 3, "add_kernel_x"]
    assert bench.parse_variant_selection("all") == ["all"]
    bench_file = load_bench_file(VECTOR_ADD_BENCH)
    keep = shape_filter([("n", {"4096", "16384"}), ("dtype", {"bf16"})], bench_file)
    kept = [shape for shape in bench_file.kernels[0].shapes if keep(shape)]
    assert [dict(shape) for shape in kept] == [{"n": 4096, "dtype": "bf16"}, {"n": 16384, "dtype": "bf16"}]
    with pytest.raises(TaotError, match="has no dimension size; its dimensions: dtype, n"):
        shape_filter([("size", {"1"})], bench_file)


class FakeKernel:
    """variants() as a generated module's kernel gives them."""

    def variants(self):
        return [{"index": 0, "id": "k_B64", "config": {"BLOCK": 64}},
                {"index": 1, "id": "k_B128", "config": {"BLOCK": 128}}]


def test_implementations_in_order_with_baselines():
    kernel_bench = load_bench_file(VECTOR_ADD_BENCH).kernels[0]
    chosen = bench.implementations("k", FakeKernel(), kernel_bench, ["auto", 1, "k_B64"], None)
    assert [(i.name, i.kind, i.variant) for i in chosen] == [
        ("auto", "auto", None), ("k_B128", "variant", 1), ("k_B64", "variant", 0),
        ("torch", "baseline", None), ("triton", "baseline", None)]
    every = bench.implementations("k", FakeKernel(), kernel_bench, ["all"], [])
    assert [i.name for i in every] == ["k_B64", "k_B128"]
    with pytest.raises(TaotError, match="--variants 2: kernel k has 2 variants"):
        bench.implementations("k", FakeKernel(), kernel_bench, [2], [])
    with pytest.raises(TaotError, match="--variants k_B32: not a variant of kernel k"):
        bench.implementations("k", FakeKernel(), kernel_bench, ["k_B32"], [])


def test_args_depend_on_passes_the_fields_to_make_args(tmp_path):
    path = tmp_path / "bench_blocks.py"
    path.write_text('KERNEL = "k"\nDIMS = ("M",)\nSHAPES = [1, 64]\nARGS_DEPEND_ON = ("BLOCK_SIZE_M",)\n'
                    'def make_args(shape, device, config):\n'
                    '    return [shape["M"], config["BLOCK_SIZE_M"]]\n')
    kernel_bench = load_bench_file(path).kernels[0]
    assert kernel_bench.args_depend_on == ("BLOCK_SIZE_M",)
    call = kernel_bench.call(kernel_bench.shapes[1], "cpu", {"BLOCK_SIZE_M": 32, "num_warps": 4})
    assert call.args == (64, 32)
    with pytest.raises(TaotError, match=r"make_args\(M=1\): expected a value for each of BLOCK_SIZE_M"):
        kernel_bench.call(kernel_bench.shapes[0], "cpu", {"num_warps": 4})
    path.write_text('KERNEL = "k"\nDIMS = ("M",)\nSHAPES = [1]\nARGS_DEPEND_ON = ("BLOCK_SIZE_M",)\n'
                    'def make_args(shape, device):\n    return [1]\n')
    with pytest.raises(TaotError, match=r"make_args: expected a function make_args\(shape, device, config\)"):
        load_bench_file(path)
