"""taot gen --tuning through the real binary: a taot-format table names its kernel, KERNEL=FILE
binds a vLLM table, and each refusal (an unbound vLLM file, a value that was not compiled, two
tables for one device, bad JSON, an unknown kernel) exits 1 naming the file and the entry."""
import hashlib
import json

import pytest

VLLM_NAME = "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3.json"


def _variant(root, index, block, warps):
    data = f"\x7fELF fake cubin {index}".encode()
    cubin = f"artifacts/v{index}/sm_90/kernel.cubin"
    (root / cubin).parent.mkdir(parents=True, exist_ok=True)
    (root / cubin).write_bytes(data)
    image = {"target": "sm_90", "arch": 90, "arch_specific": False, "dir": f"artifacts/v{index}/sm_90",
             "cubin": cubin, "cubin_sha256": hashlib.sha256(data).hexdigest(), "function_name": "kernel",
             "num_warps": warps, "num_ctas": 1, "num_stages": 3, "shared": 0, "global_scratch_size": 0,
             "global_scratch_align": 1, "profile_scratch_size": 0, "profile_scratch_align": 1,
             "launch_cooperative_grid": False, "launch_pdl": False, "cluster_dims": [1, 1, 1], "tmem_size": 0,
             "maxnreg": None, "artifacts": {}}
    return {"id": f"v{index}", "hash": f"v{index}",
            "specialization": [{"arg": "x_ptr", "dtype": "fp32", "align": 16}, {"arg": "M", "type": "i32", "hint": 0}],
            "config": {"BLOCK_SIZE_M": block, "num_warps": warps}, "params": ["x_ptr", "M"],
            "grid": [[{"op": "arg", "name": "M"}], [{"op": "lit", "value": 1}], [{"op": "lit", "value": 1}]],
            "images": [image]}


@pytest.fixture
def tuned(tmp_path):
    """A manifest with kernel `scale` (tuning key M; BLOCK_SIZE_M 16 or 64, num_warps 4 or 8)."""
    variants = [_variant(tmp_path, index, block, warps)
                for index, (block, warps) in enumerate([(16, 4), (16, 8), (64, 4), (64, 8)])]
    kernel = {"name": "scale", "function": "kernel", "source": "kernel.py", "source_hash": "0", "targets": ["sm_90"],
              "grid": ["M", "1", "1"], "tuning_key": ["M"],
              "args": [{"name": "x_ptr", "kind": "pointer", "dtypes": ["fp32"]},
                       {"name": "M", "kind": "int", "types": ["i32"]},
                       {"name": "BLOCK_SIZE_M", "kind": "constexpr"}],
              "config": [{"name": "BLOCK_SIZE_M", "kind": "int", "values": [16, 64], "default": 16},
                         {"name": "num_warps", "kind": "int", "values": [4, 8], "default": 4}],
              "variants": variants}
    manifest = {"schema": "taot.manifest", "schema_version": 2, "triton_version": "3.6.0", "library": "tuned",
                "spec": "tuned.toml", "targets": ["sm_90"], "kernels": [kernel]}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    (tmp_path / "tables").mkdir()
    return tmp_path


def taot_table(root, name, entries, device=None):
    table = {"schema": "taot.tuning", "schema_version": 1, "kernel": "scale", "key": ["M"], "match": "floor",
             "entries": [{"key": [key], "config": config} for key, config in entries]}
    if device is not None:
        table["device"] = device
    (root / "tables" / name).write_text(json.dumps(table))
    return f"tables/{name}"


def vllm_table(root, entries, name=VLLM_NAME):
    (root / "tables" / name).write_text(json.dumps({str(key): config for key, config in entries}))
    return f"tables/{name}"


def gen(run_taot, root, *tuning):
    arguments = [item for path in tuning for item in ("--tuning", path)]
    return run_taot("gen", root / "manifest.json", "-o", root / "out", "-q", *arguments, cwd=root)


def test_tables_of_both_formats_generate(run_taot, tuned):
    mine = taot_table(tuned, "scale.json", [(1, {"BLOCK_SIZE_M": 16}), (4096, {"BLOCK_SIZE_M": 64, "num_warps": 8})])
    vllm = vllm_table(tuned, [(1, {"BLOCK_SIZE_M": 16, "num_warps": 4}), (256, {"BLOCK_SIZE_M": 64})])
    result = gen(run_taot, tuned, mine, f"scale={vllm}")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert (tuned / "out" / "tuned.cpp").is_file()


@pytest.mark.parametrize("case", ["unbound", "uncompiled", "same_device", "bad_json", "unknown_kernel", "missing"])
def test_refusals_name_the_file_and_the_entry(run_taot, tuned, case):
    vllm = vllm_table(tuned, [(1, {"BLOCK_SIZE_M": 16})])
    if case == "unbound":
        arguments = [vllm]
        message = f"--tuning {vllm}: a vLLM table does not name its kernel; write --tuning KERNEL={vllm}"
    elif case == "uncompiled":
        arguments = [taot_table(tuned, "x.json", [(64, {"BLOCK_SIZE_M": 32})])]
        message = "tables/x.json: entry M=64: BLOCK_SIZE_M=32 was not compiled; compiled values: 16, 64"
    elif case == "same_device":
        h100 = taot_table(tuned, "h100.json", [(1, {})], device="NVIDIA H100 80GB HBM3")
        arguments = [f"scale={vllm}", h100]
        message = (f'{h100}: kernel "scale" already has a table for device "NVIDIA H100 80GB HBM3", from {vllm}; '
                   "give one table per device")
    elif case == "bad_json":
        (tuned / "tables" / "bad.json").write_text('{"1": {"num_warps": 4}\n "2": {}}')
        arguments = ["scale=tables/bad.json"]
        message = ("tables/bad.json: not valid JSON: parse error at line 2, column 4: syntax error while parsing "
                   "object - unexpected string literal; expected '}'")
    elif case == "unknown_kernel":
        arguments = [f"softmax={vllm}"]
        message = f'--tuning softmax={vllm}: {tuned / "manifest.json"} has no kernel "softmax"; its kernels: scale'
    else:
        arguments = ["tables/none.json"]
        message = "tables/none.json: cannot read the tuning file (missing or unreadable)"
    result = gen(run_taot, tuned, *arguments)
    assert result.returncode == 1
    assert result.stderr == f"error: {message}\n"
    assert not (tuned / "out").exists()


def test_a_key_on_a_config_field_generates_and_bakes_its_table(run_taot, tuned):
    # @triton.autotune(key=["BLOCK_SIZE_M"]) on a constexpr the caller gives: tables key on its value.
    manifest = json.loads((tuned / "manifest.json").read_text())
    manifest["kernels"][0]["tuning_key"] = ["M", "BLOCK_SIZE_M"]
    (tuned / "manifest.json").write_text(json.dumps(manifest))
    table = {"schema": "taot.tuning", "schema_version": 1, "kernel": "scale", "key": ["M", "BLOCK_SIZE_M"],
             "entries": [{"key": [1, 16], "config": {"num_warps": 4}}, {"key": [1, 64], "config": {"num_warps": 8}}]}
    (tuned / "tables" / "field.json").write_text(json.dumps(table))
    result = gen(run_taot, tuned, "tables/field.json")
    assert result.returncode == 0, result.stderr
    tables = (tuned / "out" / "tuned_tables.cpp").read_text()
    assert "constexpr taot::table::TuningKeyPart tuning_key[] = {{1, false}, {0, true}};" in tables
    assert "tuned_0_keys[] = {1, 16, 1, 64};" in tables
