"""A generated Python module from a hand-written schema-2 manifest (fake cubins, no GPU, no front
end): None for a pointer that has None variants, a launch-only int read by the grid, a string
config field, grid=, and per-image targets in _variants(). Without a driver, a call that gets past
selection fails only at loading libcuda, so what these tests see is what the module and the
runtime's selection say."""
import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _image(root, variant_id, target):
    folder = f"artifacts/{variant_id}/{target}"
    cubin = f"{folder}/kernel.cubin"
    data = b"\x7fELF fake cubin " + f"{variant_id}/{target}".encode()
    (root / folder).mkdir(parents=True, exist_ok=True)
    (root / cubin).write_bytes(data)
    arch = int(target[3:5])
    return {"target": target, "arch": arch, "arch_specific": False, "dir": folder, "cubin": cubin,
            "cubin_sha256": hashlib.sha256(data).hexdigest(), "function_name": "kernel", "num_warps": 4,
            "num_ctas": 1, "num_stages": 3, "shared": 0, "global_scratch_size": 0, "global_scratch_align": 1,
            "profile_scratch_size": 0, "profile_scratch_align": 1, "launch_cooperative_grid": False,
            "launch_pdl": False, "cluster_dims": [1, 1, 1], "tmem_size": 0, "maxnreg": None, "artifacts": {}}


def _variant(root, variant_id, bias_none, activation, targets, grid):
    bias = {"arg": "bias_ptr", "dtype": "fp16", "align": 0}
    if bias_none:
        bias["none"] = True
    return {"id": variant_id, "hash": variant_id,
            "specialization": [{"arg": "x_ptr", "dtype": "fp32", "align": 16}, bias,
                               {"arg": "n", "type": "i32", "hint": 0}, {"arg": "n_rows", "type": "i32", "hint": 0}],
            "config": {"ACTIVATION": activation},
            "params": ["x_ptr", "n"] if bias_none else ["x_ptr", "bias_ptr", "n"],
            "grid": [grid, [{"op": "lit", "value": 1}], [{"op": "lit", "value": 1}]],
            "images": [_image(root, variant_id, target) for target in targets]}


def _kernel(root, name, grid_text, grid, variants, targets):
    return {"name": name, "function": "kernel", "source": "kernel.py", "source_hash": "0", "targets": targets,
            "grid": [grid_text, "1", "1"], "tuning_key": ["n"],
            "args": [{"name": "x_ptr", "kind": "pointer", "dtypes": ["fp32"], "output": True},
                     {"name": "bias_ptr", "kind": "pointer", "dtypes": ["fp16"], "none": True},
                     {"name": "n", "kind": "int", "types": ["i32"]},
                     {"name": "ACTIVATION", "kind": "constexpr"},
                     {"name": "n_rows", "kind": "int", "types": ["i32"], "launch_only": True}],
            "config": [{"name": "ACTIVATION", "kind": "string", "values": ["gelu", "relu"], "default": "relu"}],
            "variants": [_variant(root, f"{name}_{i}", *choice, grid) for i, choice in enumerate(variants)]}


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory, taot_bin):
    root = tmp_path_factory.mktemp("schema_two")
    rows = [{"op": "arg", "name": "n_rows"}]
    persistent_grid = [{"op": "arg", "name": "n_rows"}, {"op": "num_sms"}, {"op": "min"}]
    manifest = {
        "schema": "taot.manifest", "schema_version": 2, "triton_version": "3.6.0", "library": "schema_two",
        "spec": "schema_two.toml", "targets": ["sm_80", "sm_90"],
        "kernels": [
            # Both variants on sm_90 only: selection needs no device.
            _kernel(root, "act", "n_rows", rows, [(True, "gelu", ["sm_90"]), (False, "relu", ["sm_90"])],
                    ["sm_90"]),
            # Variant 1 lacks an sm_80 image, and the grid reads num_sms: every call asks for the device.
            _kernel(root, "persistent", "min(n_rows, num_sms)", persistent_grid,
                    [(True, "relu", ["sm_80", "sm_90"]), (False, "relu", ["sm_90"])], ["sm_80", "sm_90"]),
        ],
    }
    return build_module(taot_bin, root, manifest)


def build_module(taot_bin, root, manifest):
    """Writes `manifest` to root/manifest.json, runs taot gen --python on it and builds the library
    and its module with CMake; returns the build folder (the module's folder)."""
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    out = root / "generated"
    result = subprocess.run([str(taot_bin), "gen", str(root / "manifest.json"), "-o", str(out), "--python"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    build = out / "build"
    for command in (["cmake", "-S", str(out), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     f"-DTAOT_SOURCE_DIR={REPO}", f"-DPython_EXECUTABLE={sys.executable}", "--log-level=ERROR"],
                    ["cmake", "--build", str(build), "-j", str(os.cpu_count() or 2)]):
        result = subprocess.run(command, capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return build


PRELUDE = """
    import schema_two as st

    class CudaArray:
        def __init__(self, address, typestr, shape=(1024,)):
            self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": shape,
                                             "version": 3}

    x = CudaArray(0x7f0000001000, "<f4")
    bias = CudaArray(0x7f0000002000, "<f2")

    def error_of(call):
        try:
            call()
        except Exception as error:
            return f"{type(error).__name__}: {error}"
        return "no error"
"""


def check(module_dir, body):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(module_dir), os.environ["PYTHONPATH"]])}
    code = textwrap.dedent(PRELUDE) + textwrap.dedent(body)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def test_none_selects_the_none_variants_and_launch_only_ints_size_the_grid(module_dir):
    none_empty, none_launch, bias_launch, wrong_bias, none_relu = check(module_dir, """
        print(error_of(lambda: st.act(x, None, 10, 0)))                    # grid n_rows = 0: nothing to launch
        print(error_of(lambda: st.act(x, None, 10, 5)))                    # selected; then the driver is missing
        print(error_of(lambda: st.act(x, bias, 10, 5)))
        print(error_of(lambda: st.act(x, x, 10, 5)))                       # a non-null fp32 pointer
        print(error_of(lambda: st.act(x, None, 10, 5, ACTIVATION="relu")))
    """)
    assert none_empty == "no error"
    assert none_launch.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), none_launch
    assert bias_launch.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), bias_launch
    assert wrong_bias.startswith("ValueError: schema_two::act: no compiled variant accepts bias_ptr = fp32 pointer "
                                 "0x7f0000001000 (16-byte aligned); given the arguments before it, the variants take "
                                 "bias_ptr as: None, fp16 any alignment"), wrong_bias
    assert none_relu == ("ValueError: schema_two::act: no compiled variant accepts bias_ptr = None (a null pointer); "
                         "given the arguments before it and the requested config, the variants take bias_ptr as: "
                         "fp16 any alignment"), none_relu


def test_string_config_keywords(module_dir):
    uncompiled, wrong_type, unset = check(module_dir, """
        print(error_of(lambda: st.act(x, None, 10, 0, ACTIVATION="tanh")))
        print(error_of(lambda: st.act(x, None, 10, 0, ACTIVATION=3)))
        print(error_of(lambda: st.act(x, None, 10, 0, ACTIVATION=None)))
    """)
    assert uncompiled == ('ValueError: schema_two::act: config ACTIVATION="tanh" was not compiled; compiled values: '
                          '"gelu", "relu"'), uncompiled
    assert wrong_type == "TypeError: schema_two.act(): config ACTIVATION takes a str, got int", wrong_type
    assert unset == "no error"


def test_grid_keyword(module_dir):
    zero, zero_y, given, bad_type, too_many, unknown = check(module_dir, """
        print(error_of(lambda: st.act(x, None, 10, 5, grid=0)))
        print(error_of(lambda: st.act(x, None, 10, 5, grid=(4, 0))))
        print(error_of(lambda: st.act(x, None, 10, 0, grid=[3])))   # a given grid replaces n_rows = 0
        print(error_of(lambda: st.act(x, None, 10, 5, grid="x")))
        print(error_of(lambda: st.act(x, None, 10, 5, grid=(1, 2, 3, 4))))
        print(error_of(lambda: st.act(x, None, 10, 5, grd=1)))
    """)
    assert zero == "no error" and zero_y == "no error"
    assert given.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), given
    expected = "TypeError: schema_two.act(): grid= takes an int or a tuple or list of 1 to 3 ints, got "
    assert bad_type == expected + "str", bad_type
    assert too_many == expected + "tuple", too_many
    assert unknown.startswith("TypeError: schema_two.act(): unknown keyword 'grd'; the keywords are: stream, variant, "
                              "grid, ACTIVATION"), unknown


def test_variants_show_string_values_and_the_targets_of_each_image(module_dir):
    act, persistent, *doc = check(module_dir, """
        print([(v["id"], v["config"], v["description"]) for v in st.act_variants()])
        print([[(image["target"], image["arch"]) for image in v["images"]] for v in st.persistent_variants()])
        print(st.act.__doc__)
    """)
    assert act == ("[('act_0', {'ACTIVATION': 'gelu'}, 'x_ptr: fp32 align 16, bias_ptr: None, n: i32, n_rows: i32; "
                   "ACTIVATION=\"gelu\"; sm_90'), ('act_1', {'ACTIVATION': 'relu'}, 'x_ptr: fp32 align 16, bias_ptr: "
                   "fp16, n: i32, n_rows: i32; ACTIVATION=\"relu\"; sm_90')]"), act
    assert persistent == "[[('sm_80', 80), ('sm_90', 90)], [('sm_90', 90)]]", persistent
    assert "stream=None, variant=None, grid=None, **config) on the grid (n_rows, 1, 1)" in "\n".join(doc), doc


def test_device_dependent_kernels_need_the_device_before_selecting(module_dir):
    (persistent,) = check(module_dir, "print(error_of(lambda: st.persistent(x, None, 10, 0)))")
    # The grid reads num_sms and the variants differ in targets: even an empty grid asks the device.
    assert persistent.startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), persistent
