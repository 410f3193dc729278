"""Calls from Python through a generated module built here without a GPU, from a hand-written
schema-2 manifest: config keywords (resolved once per set of names and values), bind() (the config
resolved and checked once), choose() (the variant a call would use and the step that chose it)
and run-time tuned tables. A grid of 0 programs launches nothing and needs no driver; any other
launch gets as far as loading libcuda, which this machine lacks."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from test_schema_two_module import _image as image_entry, build_module

REPO = Path(__file__).resolve().parents[2]

# scale: 2 dtypes x 3 configs of (BLOCK, num_warps, MODE); not every combination was compiled.
SCALE_CONFIGS = [(64, 4, "fast"), (128, 4, "fast"), (128, 8, "exact")]
SCALE_DTYPES = ["fp32", "fp16"]
# wide: more arguments and config fields than a call keeps in place (32 of each): two variants.
WIDE_POINTERS, WIDE_INTS, WIDE_FIELDS = 9, 25, 34


def _variant(root, variant_id, specialization, config, params, grid_arg):
    grid = [[{"op": "arg", "name": grid_arg}], [{"op": "lit", "value": 1}], [{"op": "lit", "value": 1}]]
    return {"id": variant_id, "hash": variant_id, "specialization": specialization, "config": config,
            "params": params, "grid": grid, "images": [image_entry(root, variant_id, "sm_90")]}


def _scale_kernel(root):
    variants = []
    for dtype in SCALE_DTYPES:
        for block, warps, mode in SCALE_CONFIGS:
            specialization = [{"arg": "x_ptr", "dtype": dtype, "align": 0},
                              {"arg": "out_ptr", "dtype": dtype, "align": 0}, {"arg": "n", "type": "i32", "hint": 0}]
            variants.append(_variant(root, f"scale_{dtype}_B{block}_w{warps}_{mode}", specialization,
                                     {"BLOCK": block, "num_warps": warps, "MODE": mode}, ["x_ptr", "out_ptr", "n"],
                                     "n"))
    return {"name": "scale", "function": "scale", "source": "kernel.py", "source_hash": "0", "targets": ["sm_90"],
            "grid": ["n", "1", "1"], "tuning_key": ["n"],
            "args": [{"name": "x_ptr", "kind": "pointer", "dtypes": SCALE_DTYPES},
                     {"name": "out_ptr", "kind": "pointer", "dtypes": SCALE_DTYPES, "output": True},
                     {"name": "n", "kind": "int", "types": ["i32"]},
                     {"name": "BLOCK", "kind": "constexpr"}, {"name": "MODE", "kind": "constexpr"}],
            "config": [{"name": "BLOCK", "kind": "int", "values": [64, 128], "default": 128},
                       {"name": "num_warps", "kind": "int", "values": [4, 8], "default": 4},
                       {"name": "MODE", "kind": "string", "values": ["fast", "exact"], "default": "fast"}],
            "variants": variants}


def _wide_kernel(root):
    pointers = [f"p{i}" for i in range(WIDE_POINTERS)]
    ints = [f"n{i}" for i in range(WIDE_INTS)]
    fields = [f"F{i}" for i in range(WIDE_FIELDS)]
    specialization = ([{"arg": name, "dtype": "fp32", "align": 0} for name in pointers] +
                      [{"arg": name, "type": "i32", "hint": 0} for name in ints])
    variants = [_variant(root, f"wide_{value}", specialization, {name: value for name in fields}, pointers + ints,
                         "n0") for value in (1, 2)]
    return {"name": "wide", "function": "wide", "source": "kernel.py", "source_hash": "0", "targets": ["sm_90"],
            "grid": ["n0", "1", "1"],
            "args": ([{"name": name, "kind": "pointer", "dtypes": ["fp32"]} for name in pointers] +
                     [{"name": name, "kind": "int", "types": ["i32"]} for name in ints] +
                     [{"name": name, "kind": "constexpr"} for name in fields]),
            "config": [{"name": name, "kind": "int", "values": [1, 2], "default": 1} for name in fields],
            "variants": variants}


# clash: constexpr config fields named as the call's own keywords (and one of their renames).
CLASH_FIELDS = ["stream", "stream_", "variant", "grid"]


def _clash_kernel(root):
    specialization = [{"arg": "x_ptr", "dtype": "fp32", "align": 0}, {"arg": "n", "type": "i32", "hint": 0}]
    variants = [_variant(root, f"clash_{value}", specialization, {name: value for name in CLASH_FIELDS},
                         ["x_ptr", "n"], "n") for value in (1, 2)]
    return {"name": "clash", "function": "clash", "source": "kernel.py", "source_hash": "0", "targets": ["sm_90"],
            "grid": ["n", "1", "1"],
            "args": ([{"name": "x_ptr", "kind": "pointer", "dtypes": ["fp32"]}, {"name": "n", "kind": "int", "types": ["i32"]}] +
                     [{"name": name, "kind": "constexpr"} for name in CLASH_FIELDS]),
            "config": [{"name": name, "kind": "int", "values": [1, 2], "default": 1} for name in CLASH_FIELDS],
            "variants": variants}


def _sample_kernel(root):
    """An argument named grid (grid_sample's sampling grid), a pointer."""
    params = ["input_ptr", "grid", "out_ptr", "n"]
    specialization = [{"arg": name, "dtype": "fp32", "align": 0} for name in params[:3]] + \
        [{"arg": "n", "type": "i32", "hint": 0}]
    return {"name": "sample", "function": "sample", "source": "kernel.py", "source_hash": "0", "targets": ["sm_90"],
            "grid": ["n", "1", "1"],
            "args": [{"name": name, "kind": "pointer", "dtypes": ["fp32"]} for name in params[:3]] +
                    [{"name": "n", "kind": "int", "types": ["i32"]}],
            "config": [], "variants": [_variant(root, "sample", specialization, {}, params, "n")]}


def _rowwise_kernel(root):
    """Constexprs among the parameters, as a SwiGLU kernel has them: rowwise(x_ptr, N_COLS, n, BLOCK,
    EPS=1e-5), N_COLS with no default in the function (required), EPS compiled in at its default."""
    specialization = [{"arg": "x_ptr", "dtype": "fp32", "align": 0}, {"arg": "n", "type": "i32", "hint": 0}]
    variants = [_variant(root, f"rowwise_{cols}_B{block}", specialization, {"N_COLS": cols, "BLOCK": block},
                         ["x_ptr", "n"], "n") for cols in (2048, 4096) for block in (256, 1024)]
    return {"name": "rowwise", "function": "rowwise", "source": "kernel.py", "source_hash": "0", "targets": ["sm_90"],
            "grid": ["n", "1", "1"], "parameters": ["x_ptr", "N_COLS", "n", "BLOCK", "EPS"],
            "args": [{"name": "x_ptr", "kind": "pointer", "dtypes": ["fp32"]}, {"name": "N_COLS", "kind": "constexpr"},
                     {"name": "n", "kind": "int", "types": ["i32"]}, {"name": "BLOCK", "kind": "constexpr"}],
            "config": [{"name": "N_COLS", "kind": "int", "values": [2048, 4096], "default": 2048, "required": True},
                       {"name": "BLOCK", "kind": "int", "values": [256, 1024], "default": 1024}],
            "variants": variants}


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory, taot_bin):
    root = tmp_path_factory.mktemp("calls")
    manifest = {"schema": "taot.manifest", "schema_version": 2, "triton_version": "3.6.0", "library": "calls",
                "spec": "calls.toml", "targets": ["sm_90"],
                "kernels": [_scale_kernel(root), _wide_kernel(root), _clash_kernel(root), _sample_kernel(root),
                            _rowwise_kernel(root)]}
    return build_module(taot_bin, root, manifest)


PRELUDE = """
    import calls

    class CudaArray:
        def __init__(self, address, typestr):
            self.__cuda_array_interface__ = {"data": (address, False), "typestr": typestr, "shape": (1024,),
                                             "version": 3}

    f32 = (CudaArray(0x7f0000001000, "<f4"), CudaArray(0x7f0000002000, "<f4"))
    f16 = (CudaArray(0x7f0000003000, "<f2"), CudaArray(0x7f0000004000, "<f2"))

    def error_of(call):
        try:
            call()
        except Exception as error:
            return f"{type(error).__name__}: {error}"
        return "no error"

    def ids(kernel, choice):
        return (kernel.variants()[choice[0]]["id"], choice[1])
"""


def check(module_dir, body):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(module_dir), os.environ["PYTHONPATH"]])}
    code = textwrap.dedent(PRELUDE) + textwrap.dedent(body)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def test_kernels_are_callable_objects_with_names_and_docs(module_dir):
    kind, names, doc, same_variants = check(module_dir, """
        print(type(calls.scale).__name__, repr(calls.scale))
        print(calls.scale.__name__, calls.scale.__qualname__, calls.scale.__module__)
        print(calls.scale.__doc__.splitlines()[0])
        print(calls.scale.variants() == calls.scale_variants())
    """)
    assert kind == "Kernel <taot kernel calls.scale>", kind
    assert names == "scale scale calls", names
    assert doc == ("Launches calls.scale(x_ptr, out_ptr, n, *, stream=None, variant=None, grid=None, **config) on the "
                   "grid (n, 1, 1); config keywords: BLOCK num_warps MODE."), doc
    assert same_variants == "True"


def test_choose_names_the_variant_and_the_step(module_dir):
    lines = check(module_dir, """
        for call in (lambda: calls.scale.choose(*f32, 8), lambda: calls.scale.choose(*f16, 8),
                     lambda: calls.scale.choose(*f32, 8, BLOCK=64),
                     lambda: calls.scale.choose(*f16, 8, BLOCK=128, num_warps=8, MODE="exact"),
                     lambda: calls.scale.choose(*f16, 8, variant=4), lambda: calls.scale.choose(*f32, 8, MODE=None)):
            print(ids(calls.scale, call()))
    """)
    assert lines == ["('scale_fp32_B128_w4_fast', 'default')", "('scale_fp16_B128_w4_fast', 'default')",
                     "('scale_fp32_B64_w4_fast', 'config')", "('scale_fp16_B128_w8_exact', 'config')",
                     "('scale_fp16_B128_w4_fast', 'variant')", "('scale_fp32_B128_w4_fast', 'default')"], lines


def test_calls_reach_the_launch_and_keywords_are_named(module_dir):
    lines = check(module_dir, """
        print(error_of(lambda: calls.scale(*f32, 0, BLOCK=64)))          # no programs: nothing to launch
        print(error_of(lambda: calls.scale(*f32, 8, BLOCK=64, stream=0, grid=(2,))))
        print(error_of(lambda: calls.scale(*f32, 8, BLOCK=256)))
        print(error_of(lambda: calls.scale(*f32, 8, BLOCK=64, num_warps=8)))
        print(error_of(lambda: calls.scale(*f32, 8, BLOK=64)))
        print(error_of(lambda: calls.scale(*f32, 8, BLOCK=64.0)))
        print(error_of(lambda: calls.scale(*f32, 8, MODE=1)))
        print(error_of(lambda: calls.scale(*f32, 8, BLOCK=2**70)))
        print(error_of(lambda: calls.scale(*f32, 8, variant=12)))
        print(error_of(lambda: calls.scale(*f32, 8, variant=1, BLOCK=64)))
        print(error_of(lambda: calls.scale(*f32)))
    """)
    assert lines[0] == "no error"
    assert lines[1].startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), lines[1]
    assert lines[2:] == [
        "ValueError: calls::scale: config BLOCK=256 was not compiled; compiled values: 64, 128",
        "ValueError: calls::scale: no variant has config num_warps=8 together with the other requested config values",
        "TypeError: calls.scale(): unknown keyword 'BLOK'; the keywords are: stream, variant, grid, BLOCK, num_warps, "
        "MODE",
        "TypeError: calls.scale(): config BLOCK takes an int, got float",
        "TypeError: calls.scale(): config MODE takes a str, got int",
        "ValueError: calls.scale(): config BLOCK: 1180591620717411303424 does not fit in 64 bits",
        "ValueError: calls.scale(): variant index 12 is out of range (the kernel has 6 variants)",
        "TypeError: calls.scale(): give either variant= or config keywords, not both",
        "TypeError: calls.scale() takes 3 arguments (in order or by name), and 'n' is missing"], lines


def test_bind_resolves_once_and_chooses_per_call(module_dir):
    lines = check(module_dir, """
        bound = calls.scale.bind(BLOCK=128, num_warps=8)
        print(repr(bound), bound.config, bound.variant, bound.kernel is calls.scale)
        print(ids(calls.scale, bound.choose(*f32, 8)), ids(calls.scale, bound.choose(*f16, 8)))
        print(ids(calls.scale, bound.choose(*f32, 8)))
        print(error_of(lambda: bound(*f16, 0)), error_of(lambda: bound(*f16, 0, grid=0, stream=None)))
        print(error_of(lambda: bound(*f16, 8)))
        one = calls.scale.bind(variant=2)
        print(repr(one), one.variant, ids(calls.scale, one.choose(*f32, 8)))
        print(error_of(lambda: one.choose(*f16, 8)))
        print(ids(calls.scale, calls.scale.bind().choose(*f16, 8)))
    """)
    assert lines[:3] == ["<calls.scale.bind(BLOCK=128, num_warps=8)> {'BLOCK': 128, 'num_warps': 8} None True",
                         "('scale_fp32_B128_w8_exact', 'config') ('scale_fp16_B128_w8_exact', 'config')",
                         "('scale_fp32_B128_w8_exact', 'config')"], lines
    assert lines[3] == "no error no error", lines[3]
    assert lines[4].startswith("RuntimeError: cannot load the CUDA driver libcuda.so.1"), lines[4]
    assert lines[5] == "<calls.scale.bind(variant=2)> 2 ('scale_fp32_B128_w8_exact', 'variant')", lines[5]
    assert lines[6].startswith("ValueError: calls::scale: variant scale_fp32_B128_w8_exact does not accept x_ptr = "
                               "fp16 pointer"), lines[6]
    assert lines[7] == "('scale_fp16_B128_w4_fast', 'default')", lines[7]


def test_bind_names_what_was_not_compiled(module_dir):
    lines = check(module_dir, """
        print(error_of(lambda: calls.scale.bind(BLOCK=256)))
        print(error_of(lambda: calls.scale.bind(MODE="slow")))
        print(error_of(lambda: calls.scale.bind(BLOCK=64, num_warps=8)))
        print(error_of(lambda: calls.scale.bind(BLOCK=64, MODE="exact", num_warps=None)))
        print(error_of(lambda: calls.scale.bind(MODE=3)))
        print(error_of(lambda: calls.scale.bind(BLOK=64)))
        print(error_of(lambda: calls.scale.bind(stream=0)))
        print(error_of(lambda: calls.scale.bind(64)))
        print(error_of(lambda: calls.scale.bind(variant=6)))
        print(error_of(lambda: calls.scale.bind(variant=0, BLOCK=64)))
        bound = calls.scale.bind(BLOCK=64)
        print(error_of(lambda: bound(*f32, 8, BLOCK=128)))
        print(error_of(lambda: bound(*f32, 8, variant=0)))
        print(error_of(lambda: bound(*f32)))
    """)
    assert lines == [
        "ValueError: calls.scale.bind(): BLOCK=256 was not compiled; compiled values: 64, 128",
        "ValueError: calls.scale.bind(): MODE='slow' was not compiled; compiled values: 'fast', 'exact'",
        "ValueError: calls.scale.bind(): no variant was compiled with BLOCK=64, num_warps=8 together; compiled: "
        "(BLOCK=64, num_warps=4), (BLOCK=128, num_warps=4), (BLOCK=128, num_warps=8)",
        "ValueError: calls.scale.bind(): no variant was compiled with BLOCK=64, MODE='exact' together; compiled: "
        "(BLOCK=64, MODE='fast'), (BLOCK=128, MODE='fast'), (BLOCK=128, MODE='exact')",
        "TypeError: calls.scale(): config MODE takes a str, got int",
        "TypeError: calls.scale(): unknown keyword 'BLOK'; the keywords are: stream, variant, grid, BLOCK, num_warps, "
        "MODE",
        "TypeError: calls.scale.bind(): stream= is given to each call of the bound launcher, not to bind()",
        "TypeError: calls.scale.bind() takes config keywords or variant=, not positional arguments",
        "ValueError: calls.scale.bind(): variant index 6 is out of range (the kernel has 6 variants)",
        "TypeError: calls.scale.bind(): give either variant= or config keywords, not both",
        "TypeError: calls.scale(): a bound launcher takes stream= and grid=, not BLOCK= (bind() fixed its config)",
        "TypeError: calls.scale(): a bound launcher takes stream= and grid=, not variant= (bind() fixed its config)",
        "TypeError: calls.scale() takes 3 arguments (in order or by name), and 'n' is missing"], lines


def test_fields_named_as_call_keywords_keep_their_names(module_dir):
    # As in Triton, stream=2 sets a `stream: tl.constexpr`; the call's own keyword moves aside to
    # stream__ (stream_ is a field too), variant_ and grid_.
    doc, *lines = check(module_dir, """
        x = f32[0]
        print(calls.clash.__doc__.splitlines()[0])
        print(ids(calls.clash, calls.clash.choose(x, 8, stream=2, stream_=2, variant=2, grid=2)))
        print(ids(calls.clash, calls.clash.choose(x, 8, variant_=1, stream__=None, grid_=None)))
        print(error_of(lambda: calls.clash(x, 8, stream=2, stream_=2, variant=2, grid=2, stream__=0, grid_=(0,))))  # grid_ is the grid
        bound = calls.clash.bind(stream=2, stream_=2, variant=2, grid=2)
        print(bound.config, ids(calls.clash, bound.choose(x, 8, stream__=None, grid_=None)))
        print(error_of(lambda: bound(x, 0, stream=1)))
        print(error_of(lambda: calls.clash.bind(stream__=0)))
        print(error_of(lambda: calls.clash(x, 8, variant_=0, stream=1)))
        print(error_of(lambda: calls.clash(x, 8, variant=3)))
        print(error_of(lambda: calls.clash(x, 8, strem=1)))
    """)
    assert doc == ("Launches calls.clash(x_ptr, n, *, stream__=None, variant_=None, grid_=None, **config) on the grid "
                   "(n, 1, 1); config keywords: stream stream_ variant grid."), doc
    assert lines == [
        "('clash_2', 'config')",
        "('clash_2', 'variant')",
        "no error",
        "{'stream': 2, 'stream_': 2, 'variant': 2, 'grid': 2} ('clash_2', 'config')",
        "TypeError: calls.clash(): a bound launcher takes stream__= and grid_=, not stream= (bind() fixed its config)",
        "TypeError: calls.clash.bind(): stream__= is given to each call of the bound launcher, not to bind()",
        "TypeError: calls.clash(): give either variant_= or config keywords, not both",
        "ValueError: calls::clash: config variant=3 was not compiled; compiled values: 1, 2",
        "TypeError: calls.clash(): unknown keyword 'strem'; the keywords are: stream__, variant_, grid_, stream, "
        "stream_, variant, grid"], lines


def test_arguments_by_keyword_as_triton_callers_give_them(module_dir):
    lines = check(module_dir, """
        x, out = f32
        print(ids(calls.scale, calls.scale.choose(x, out, n=8, BLOCK=64)))
        print(ids(calls.scale, calls.scale.choose(n=8, out_ptr=out, x_ptr=x)))
        print(error_of(lambda: calls.scale(x, out, n=0)))
        print(ids(calls.scale, calls.scale.bind(BLOCK=64).choose(x, out_ptr=out, n=8)))
        print(error_of(lambda: calls.scale.bind(BLOCK=64)(x, out, n=0)))
        print(error_of(lambda: calls.scale(x, n=8)))
        print(error_of(lambda: calls.scale(x, out, 8, n=8)))
        print(error_of(lambda: calls.scale(x, out, m=8)))
        print(calls.sample.__doc__.splitlines()[0])
        print(error_of(lambda: calls.sample(x, out, out, 8, grid_=(0,))))
        print(error_of(lambda: calls.sample(x, out_ptr=out, n=8, grid=x, grid_=(0,))))
        print(error_of(lambda: calls.sample(x, out_ptr=out, n=8, grid=(2,))))  # the argument, not the launch grid
    """)
    assert lines == [
        "('scale_fp32_B64_w4_fast', 'config')",
        "('scale_fp32_B128_w4_fast', 'default')",
        "no error",
        "('scale_fp32_B64_w4_fast', 'config')",
        "no error",
        "TypeError: calls.scale() takes 3 arguments (in order or by name), and 'out_ptr' is missing",
        "TypeError: calls.scale() got multiple values for argument 'n'",
        "TypeError: calls.scale() takes 3 arguments (in order or by name), and 'n' is missing",
        "Launches calls.sample(input_ptr, grid, out_ptr, n, *, stream=None, variant=None, grid_=None, **config) on the "
        "grid (n, 1, 1); config keywords:.",
        "no error",
        "no error",
        "TypeError: calls.sample: grid: expected a CUDA array (a torch tensor, or an object with __dlpack__ or "
        "__cuda_array_interface__), got tuple"], lines


def test_constexprs_by_position_and_required_ones_as_the_jit_takes_them(module_dir):
    lines = check(module_dir, """
        x = f32[0]
        k = calls.rowwise
        print(ids(k, k.choose(x, 2048, 8)))              # N_COLS by position, between the arguments
        print(ids(k, k.choose(x, 4096, 8, 256)))
        print(ids(k, k.choose(x, 4096, 8, BLOCK=256)))
        print(ids(k, k.choose(x, 8, N_COLS=4096)))       # the arguments alone, the constexpr by keyword
        print(ids(k, k.choose(x, 8, variant=1)))         # a variant names every field
        print(error_of(lambda: k.choose(x, 8)))
        print(error_of(lambda: k.choose(x, n=8, BLOCK=256)))
        print(error_of(lambda: k(x, 4096, 8, 256, N_COLS=4096)))
        print(error_of(lambda: k(x, 4096, 8, 256, 1e-5)))
        print(error_of(lambda: k(x, 4096, 8, 256, 1e-5, 7)))
        print(error_of(lambda: k(x, 4096, 8, 256, grid=(0,))))
        print(error_of(lambda: calls.scale(x, x, 8, 64)))  # a library that records its parameters takes them too
    """)
    required = ("ValueError: calls::rowwise: N_COLS must be given: the function has no default for this constexpr, "
                "so Triton's JIT requires it too (compiled values: 2048, 4096)")
    assert lines == [
        "('rowwise_2048_B1024', 'config')",
        "('rowwise_4096_B256', 'config')",
        "('rowwise_4096_B256', 'config')",
        "('rowwise_4096_B1024', 'config')",
        "('rowwise_2048_B1024', 'variant')",
        required,
        required,
        "TypeError: calls.rowwise() got multiple values for argument 'N_COLS'",
        "TypeError: calls.rowwise(): parameter 5 (EPS) is a constexpr compiled in at its default in the function; "
        "give nothing for it",
        "TypeError: calls.rowwise() takes 2 arguments (5 with its constexprs, in the function's order), got 6",
        "no error",
        "TypeError: calls.scale() takes 3 arguments, got 4"], lines


def test_cached_keywords_choose_as_fresh_ones_do(module_dir):
    # Every way of giving the same keywords, in a shuffled order, many times in one process (the
    # cache warm), against each query made with names built afresh (never the same objects: the
    # cache cannot match them) in another process.
    queries = [(dtype, config) for dtype in ("f32", "f16") for config in (
        {}, {"BLOCK": 64}, {"BLOCK": 128}, {"num_warps": 8}, {"MODE": "exact"}, {"MODE": "fast", "BLOCK": 128},
        {"BLOCK": 128, "num_warps": 4, "MODE": "fast"}, {"BLOCK": 128, "num_warps": 8, "MODE": "exact"},
        {"BLOCK": 64, "num_warps": 8}, {"BLOCK": None, "MODE": "exact"})]
    fresh = check(module_dir, f"""
        def fresh_names(config):
            return {{"".join(list(name)): value for name, value in config.items()}}
        for dtype, config in {queries!r}:
            result = error_of(lambda: print(ids(calls.scale, calls.scale.choose(*globals()[dtype], 8,
                                                                                **fresh_names(config)))))
            if result != "no error":
                print(result)
    """)
    warm = check(module_dir, f"""
        import random
        queries = {queries!r}
        def literal_call(dtype, config):  # keywords written in the call: interned names, constant values
            args = (*globals()[dtype], 8)
            if config == {{"BLOCK": 64}}:
                return calls.scale.choose(*args, BLOCK=64)
            if config == {{"BLOCK": 128, "num_warps": 8, "MODE": "exact"}}:
                return calls.scale.choose(*args, MODE="exact", num_warps=8, BLOCK=128)
            return calls.scale.choose(*args, **config)
        ways = [
            lambda dtype, config: calls.scale.choose(*globals()[dtype], 8, **config),
            lambda dtype, config: calls.scale.choose(*globals()[dtype], 8, **dict(reversed(list(config.items())))),
            lambda dtype, config: calls.scale.choose(*globals()[dtype], 8, **{{name: ("".join(list(value)) if
                type(value) is str else value) for name, value in config.items()}}),  # strings made afresh
            literal_call,
        ]
        rng = random.Random(7)
        answers = {{}}
        for _ in range(20):
            order = [(q, w) for q in range(len(queries)) for w in range(len(ways))]
            rng.shuffle(order)
            for q, w in order:
                dtype, config = queries[q]
                result = []
                error = error_of(lambda: result.append(ids(calls.scale, ways[w](dtype, config))))
                answers.setdefault(q, set()).add(str(result[0]) if result else error)
        for q in range(len(queries)):
            print(" | ".join(sorted(answers[q])))
    """)
    assert len(fresh) == len(queries) and len(warm) == len(queries)
    assert warm == fresh, "\n".join(f"{q}: warm {w} fresh {f}" for q, w, f in zip(queries, warm, fresh) if w != f)
    assert fresh[1] == "('scale_fp32_B64_w4_fast', 'config')" and fresh[11] == "('scale_fp16_B64_w4_fast', 'config')"


def test_the_cache_never_answers_for_changed_values_or_arguments(module_dir):
    lines = check(module_dir, """
        config = {"BLOCK": 64, "num_warps": 4}
        seen = []
        for step in range(6):  # one dict, its values replaced in place; dtypes alternating
            config["BLOCK"] = 64 if step % 3 == 0 else 128
            config["num_warps"] = 8 if step % 3 == 2 else 4
            seen.append(ids(calls.scale, calls.scale.choose(*(f32 if step % 2 else f16), 8, **config))[0])
        print(seen)

        class Index:  # an int-like object whose value changes: read at every call
            def __init__(self, value):
                self.value = value
            def __index__(self):
                return self.value
        block = Index(64)
        first = ids(calls.scale, calls.scale.choose(*f32, 8, BLOCK=block))[0]
        block.value = 128
        second = ids(calls.scale, calls.scale.choose(*f32, 8, BLOCK=block))[0]
        block.value = 256
        print(first, second, error_of(lambda: calls.scale.choose(*f32, 8, BLOCK=block)))

        class Mode(str):  # a str subclass: never held, read at every call
            pass
        print(ids(calls.scale, calls.scale.choose(*f16, 8, MODE=Mode("exact")))[0],
              ids(calls.scale, calls.scale.choose(*f16, 8, MODE=Mode("fast")))[0])
        print(error_of(lambda: calls.scale.choose(*f16, 8, MODE="exact", BLOCK=64)),
              ids(calls.scale, calls.scale.choose(*f16, 8, MODE="exact"))[0])
    """)
    assert lines[0] == str(["scale_fp16_B64_w4_fast", "scale_fp32_B128_w4_fast", "scale_fp16_B128_w8_exact",
                            "scale_fp32_B64_w4_fast", "scale_fp16_B128_w4_fast", "scale_fp32_B128_w8_exact"]), lines[0]
    assert lines[1] == ("scale_fp32_B64_w4_fast scale_fp32_B128_w4_fast ValueError: calls::scale: config BLOCK=256 "
                        "was not compiled; compiled values: 64, 128"), lines[1]
    assert lines[2] == "scale_fp16_B128_w8_exact scale_fp16_B128_w4_fast", lines[2]
    assert lines[3] == ("ValueError: calls::scale: no variant has config MODE=\"exact\" together with the other "
                        "requested config values scale_fp16_B128_w8_exact"), lines[3]


def test_more_arguments_and_fields_than_kept_in_place(module_dir):
    lines = check(module_dir, """
        args = [None] * 9 + [0] + [16] * 24
        ones = {f"F{i}": 1 for i in range(34)}
        twos = {f"F{i}": 2 for i in range(34)}
        print(ids(calls.wide, calls.wide.choose(*args, **twos)), ids(calls.wide, calls.wide.choose(*args, **ones)))
        print(ids(calls.wide, calls.wide.bind(**twos).choose(*args)), error_of(lambda: calls.wide(*args, **twos)))
        print(error_of(lambda: calls.wide.bind(**{**twos, "F33": 1})).split(";")[0])
        print(error_of(lambda: calls.wide(*args[:-1])))
    """)
    assert lines == ["('wide_2', 'config') ('wide_1', 'config')", "('wide_2', 'config') no error",
                     "ValueError: calls.wide.bind(): no variant was compiled with F0=2, F1=2, F2=2, F3=2, F4=2, F5=2, "
                     "F6=2, F7=2, F8=2, F9=2, F10=2, F11=2, F12=2, F13=2, F14=2, F15=2, F16=2, F17=2, F18=2, F19=2, "
                     "F20=2, F21=2, F22=2, F23=2, F24=2, F25=2, F26=2, F27=2, F28=2, F29=2, F30=2, F31=2, F32=2, "
                     "F33=1 together", "TypeError: calls.wide() takes 34 arguments (in order or by name), and 'n24' is missing"], lines


def test_tuned_tables_load_and_reset(module_dir, tmp_path):
    table = {"schema": "taot.tuning", "schema_version": 1, "kernel": "scale", "key": ["n"],
             "entries": [{"key": [1], "config": {"BLOCK": 64}},
                         {"key": [100], "config": {"BLOCK": 128, "num_warps": 8, "MODE": "exact"}}]}
    any_device = tmp_path / "scale.json"
    any_device.write_text(json.dumps(table))
    uncompiled = tmp_path / "uncompiled.json"
    uncompiled.write_text(json.dumps({**table, "entries": [{"key": [1], "config": {"BLOCK": 256}}]}))
    for_h200 = tmp_path / "E=8,N=256,device_name=NVIDIA_H200.json"  # vLLM's format: M -> config
    for_h200.write_text(json.dumps({"1": {"BLOCK": 128, "num_warps": 8}}))
    lines = check(module_dir, f"""
        import pathlib
        scale = calls.scale
        print(ids(scale, scale.choose(*f32, 8)))
        print(scale.load_tuning({str(any_device)!r}))
        print(ids(scale, scale.choose(*f32, 8)), ids(scale, scale.choose(*f16, 90)),
              ids(scale, scale.choose(*f32, 90, BLOCK=64)), ids(scale, scale.bind().choose(*f32, 90)))
        print(error_of(lambda: scale.load_tuning({str(uncompiled)!r})))
        print(error_of(lambda: scale.load_tuning({str(tmp_path / "missing.json")!r})))
        # A table for a named device, beside the any-device one: without a CUDA context, unused.
        print(scale.load_tuning(pathlib.Path({str(for_h200)!r}), device="NVIDIA H200"),
              ids(scale, scale.choose(*f32, 8)))
        print(scale.reset_tuning(), ids(scale, scale.choose(*f32, 90)))
        print(error_of(lambda: scale.load_tuning(3)))
        print(error_of(lambda: scale.load_tuning({str(any_device)!r}, device=3)))
        print(error_of(lambda: calls.wide.load_tuning({str(any_device)!r})))
    """)
    assert lines == [
        "('scale_fp32_B128_w4_fast', 'default')", "None",
        "('scale_fp32_B64_w4_fast', 'table') ('scale_fp16_B128_w8_exact', 'table') "
        "('scale_fp32_B64_w4_fast', 'config') ('scale_fp32_B128_w8_exact', 'table')",
        f"ValueError: calls::scale: {uncompiled}: entry n=1: BLOCK=256 was not compiled; compiled values: 64, 128",
        f"ValueError: calls::scale: {tmp_path / 'missing.json'}: cannot read the tuning file (missing or unreadable)",
        "None ('scale_fp32_B64_w4_fast', 'table')",
        "None ('scale_fp32_B128_w4_fast', 'default')",
        "TypeError: expected str, bytes or os.PathLike object, not int",
        "TypeError: calls.scale.load_tuning(): device= takes a str (the GPU's name) or None, got int",
        f"ValueError: calls::wide: {any_device}: the table is for kernel \"scale\", not \"wide\""], lines
