# Without a GPU: kernels.py goes in unchanged. The real taot binary builds its library, Python module
# included, from kernels.toml; the module's calls as a user writes them get past argument conversion
# and variant selection (they stop only at loading the CUDA driver, which this machine lacks); the
# manifest carries the tuning key, the rules and each variant's targets.
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DRIVER_MISSING = "RuntimeError: cannot load the CUDA driver"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    taot = Path(os.environ.get("TAOT_BIN", REPO / "build" / "tools" / "taot" / "taot"))
    if not taot.exists():
        pytest.fail(f"the taot binary is not built at {taot} (set TAOT_BIN or build first)")
    out = tmp_path_factory.mktemp("as_written")
    result = subprocess.run([str(taot), "build", str(HERE / "kernels.toml"), "-o", str(out), "--python",
                             "--build-library", "-j", str(os.cpu_count() or 2), "--quiet"],
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def run(built, body):
    prelude = """
        import as_written as aw

        class CudaArray:
            def __init__(self, address, typestr, shape=(64, 64)):
                self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": shape,
                                                 "version": 3}

        def error_of(call):
            try:
                call()
            except Exception as error:
                return f"{type(error).__name__}: {error}"
            return "no error"
    """
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(built / "build"), os.environ["PYTHONPATH"]])}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(prelude) + textwrap.dedent(body)],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def test_manifest_carries_what_the_decorators_said(built):
    manifest = json.loads((built / "manifest.json").read_text())
    kernels = {kernel["name"]: kernel for kernel in manifest["kernels"]}
    assert kernels["matmul"]["tuning_key"] == ["M", "N", "K"]
    # Its configs are timed at each key's first launch, as the JIT's autotuner times them.
    assert kernels["matmul"]["autotune"] == {
        "at_first_call": True, "fields": ["BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps",
                                          "num_stages"], "reset_to_zero": [], "restore_value": []}
    assert "autotune" not in kernels["rms_norm"]  # heuristics only: nothing to time
    assert [{key: rule[key] for key in ("field", "expression")} for rule in kernels["rms_norm"]["heuristics"]] == [
        {"field": "BLOCK_SIZE", "expression": "next_power_of_2(n_cols)"},
        {"field": "num_warps", "expression": "8 if BLOCK_SIZE >= 2048 else 4"},
        {"field": "HAS_WEIGHT", "expression": "weight_ptr is not None"}]
    matmul_targets = [[image["target"] for image in variant["images"]] for variant in kernels["matmul"]["variants"]]
    assert ["sm_90"] in matmul_targets and ["sm_80", "sm_90"] in matmul_targets   # num_stages 5 is sm_90 only
    assert {kernel["name"]: kernel["targets"] for kernel in manifest["kernels"]} == {
        "matmul": ["sm_80", "sm_90"], "rms_norm": ["sm_90"], "bias_act": ["sm_80", "sm_90"],
        "persistent_scale": ["sm_90"], "layer_norm_fwd": ["sm_90"], "affine": ["sm_90"], "softcap_clamp": ["sm_90"]}
    assert kernels["persistent_scale"]["variants"][0]["grid"][0] == [
        {"op": "num_sms"}, {"op": "arg", "name": "n_elements"}, {"op": "lit", "value": 2048}, {"op": "cdiv"},
        {"op": "min"}]


def test_calls_as_users_write_them_reach_the_driver(built):
    lines = run(built, """
        x16, w16 = CudaArray(0x7f0000000000, "<f2"), CudaArray(0x7f0000100000, "<f2", (64,))
        x32 = CudaArray(0x7f0000200000, "<f4", (64 * 64,))
        print(error_of(lambda: aw.matmul(x16, x16, x16, 64, 64, 64, 64, 1, 64, 1, 64, 1, BLOCK_SIZE_M=64,
                                         BLOCK_SIZE_N=128, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, num_warps=4, num_stages=4,
                                         ACTIVATION="leaky_relu")))
        print(error_of(lambda: aw.rms_norm(x16, None, x16, 64, 64, 64, 1e-6, 64, BLOCK_SIZE=256, HAS_WEIGHT=False)))
        print(error_of(lambda: aw.bias_act(x16, None, x16, 4096, 64, ACTIVATION="gelu")))
        print(error_of(lambda: aw.bias_act(x16, w16, x16, 4096, 64)))
        print(error_of(lambda: aw.persistent_scale(x32, x32, 4096, 1.5)))
        print(error_of(lambda: aw.layer_norm_fwd(x16, x16, w16, w16, 64, 64, 1e-5, 64, BLOCK_SIZE=256)))
    """)
    for line in lines:
        assert line.startswith(DRIVER_MISSING), lines


def test_what_was_not_compiled_is_named(built):
    """rms_norm's variants share their target, so selection needs no device (bias_act's and matmul's
    differ per target: their selection waits for the device, and here the driver is missing first)."""
    weight_with_none, block, none_x = run(built, """
        x16, w16 = CudaArray(0x7f0000000000, "<f2"), CudaArray(0x7f0000100000, "<f2", (64,))
        print(error_of(lambda: aw.rms_norm(x16, None, x16, 64, 64, 64, 1e-6, 64, BLOCK_SIZE=256, HAS_WEIGHT=True)))
        print(error_of(lambda: aw.rms_norm(x16, w16, x16, 64, 64, 64, 1e-6, 64, BLOCK_SIZE=128)))
        print(error_of(lambda: aw.bias_act(None, w16, x16, 4096, 64)))
    """)
    assert weight_with_none.startswith("ValueError: as_written::rms_norm: no compiled variant accepts weight_ptr = "
                                       "None (a null pointer)"), weight_with_none
    assert block.startswith("ValueError: as_written::rms_norm: config BLOCK_SIZE=128 was not compiled; compiled "
                            "values: 256, 512, 1024, 2048, 4096, 8192"), block
    assert none_x == ("TypeError: as_written.bias_act: x_ptr: None is accepted only for pointers of one dtype; "
                      "this one takes fp16, bf16, fp32"), none_x


def test_a_constexpr_named_variant_keeps_its_keyword(built):
    doc, chosen, by_index = run(built, """
        x32 = CudaArray(0x7f0000200000, "<f4", (64 * 64,))
        print(aw.affine.__doc__.splitlines()[0])
        print([aw.affine.variants()[i]["config"]["variant"] for i in (aw.affine.choose(x32, x32, 4096, variant=1)[0],
                                                                      aw.affine.choose(x32, x32, 4096)[0])])
        print(aw.affine.choose(x32, x32, 4096, variant_=1))
    """)
    assert doc.startswith("Launches as_written.affine(x_ptr, out_ptr, n_elements, *, stream=None, variant_=None, "
                          "grid=None, **config)"), doc
    assert chosen == "[1, 0]", chosen
    assert by_index == "(1, 'variant')", by_index


def test_scalar_forms_select_their_variants(built):
    """softcap is None or an fp32, lower an int or an fp32: each form its own variants, chosen by the
    value's Python type as the JIT's specialization does; other types are refused naming the argument."""
    lines = run(built, """
        x32 = CudaArray(0x7f0000200000, "<f4", (64 * 64,))
        variants = aw.softcap_clamp.variants()
        for softcap, lower in [(None, -128), (None, -448.0), (30.0, 0), (0.75, 0.25)]:
            index, step = aw.softcap_clamp.choose(x32, x32, 4096, softcap, lower)
            print(variants[index]["id"], variants[index]["config"]["HAS_SOFTCAP"])
        print(error_of(lambda: aw.softcap_clamp(x32, x32, 4096, 1.0, None)))
        print(error_of(lambda: aw.softcap_clamp(x32, x32, 4096, 1, True)))
        print(error_of(lambda: aw.softcap_clamp(x32, x32, 4096, "1", 2)))
    """)
    chosen = [line.split() for line in lines[:4]]
    assert [("_none_" in name, "_fp32_fp32_" in name or name.count("fp32") >= 4) for name, _ in chosen][0][0]
    assert [has for _, has in chosen] == ["False", "False", "True", "True"], lines
    forms = [name.split("softcap_clamp_fp32a16_fp32a16_i32_")[1] for name, _ in chosen]
    assert [form.split("_")[:2] for form in forms] == [["none", "i32"], ["none", "fp32"], ["fp32", "i32"],
                                                        ["fp32", "fp32"]], lines
    assert lines[4].startswith("TypeError: as_written.softcap_clamp: lower: expected an int, a float, got NoneType"), lines
    assert lines[5].startswith("TypeError: as_written.softcap_clamp: lower: expected an int, a float, got bool"), lines
    assert lines[6].startswith("TypeError: as_written.softcap_clamp: softcap: expected a float, None, got str"), lines


def test_first_call_results_bake_in_with_gen_tuning(built, tmp_path):
    """A file of first-call results as the runtime writes it ($TAOT_AUTOTUNE_DIR/<library>/<kernel>/
    <device>.json: taot's format, naming the library and its build) is a tuned table for taot gen."""
    results = tmp_path / "NVIDIA_H200.json"
    results.write_text(json.dumps({
        "schema": "taot.tuning", "schema_version": 1, "kernel": "matmul", "library": "as_written",
        "library_id": "4f1c2a9b0d3e5f67", "device": "NVIDIA H200", "match": "nearest", "key": ["M", "N", "K"],
        "entries": [{"key": [7, 1000, 4096], "config": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32,
                                                        "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 4}}]}))
    taot = Path(os.environ.get("TAOT_BIN", REPO / "build" / "tools" / "taot" / "taot"))
    out = tmp_path / "baked"
    result = subprocess.run([str(taot), "gen", str(built / "manifest.json"), "-o", str(out), "--tuning", str(results),
                             "--quiet"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    tables = (out / "as_written_tables.cpp").read_text()
    assert "NVIDIA H200" in tables and "7, 1000, 4096" in tables
