# `taot check`'s engine: run a library's variants over a bench file's shapes and compare their outputs
# with a reference: the same @triton.jit function through Triton's JIT on the GPU with the variant's
# config (bitwise by default), the bench file's reference function, or Triton's interpreter on the CPU
# (a child process with TRITON_INTERPRET=1, fed the same inputs).
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..measure.bench import ArgumentCache
from .. import IMPORT_ROOT
from ..errors import Problem, TaotError
from ..library.built import read_manifest
from ..spec.arg_kinds import manifest_kind
from ..spec.expressions import run_program
from ..measure.calls import output_difference

AGAINST = ("jit", "reference", "interpreter")


@dataclasses.dataclass
class Comparison:
    """One variant at one shape: how far its outputs are from the reference's."""
    kernel: str
    shape: dict
    variant: str
    against: str
    status: str               # "ok", "mismatch", "error"
    max_abs: float = 0.0
    max_rel: float = 0.0
    first_index: tuple = None  # the first differing element's index in the first output that differs
    output: str = None         # that output's name
    detail: str = ""


class JitKernel:
    """The library's kernel as Triton's JIT runs it: its @triton.jit function (from the manifest's source
    and function), launched with a variant's config and the grid the manifest records for it."""

    def __init__(self, folder, manifest_kernel, interpret=False):
        from ..spec.source import load_function

        source = (Path(folder) / manifest_kernel["source"]).resolve()
        try:
            self.function = _interpreted_function(source, manifest_kernel["function"]) if interpret else \
                load_function(source, manifest_kernel["function"])
        except Problem as problem:
            raise TaotError(f"kernel {manifest_kernel['name']}: checking against Triton's JIT runs the source its "
                            f"manifest names: {problem} (or check --against reference)") from None
        self.args = manifest_kernel["args"]
        self.call_args = [a["name"] for a in self.args if manifest_kind(a["kind"]).runtime]
        self.launch_only = {a["name"] for a in self.args if a.get("launch_only")}
        self.constexprs = {a["name"] for a in self.args if not manifest_kind(a["kind"]).runtime}
        self.grids = {v["id"]: v.get("grid") for v in manifest_kernel["variants"]}
        for arg in self.args:
            if manifest_kind(arg["kind"]).has_block:
                raise TaotError(f"kernel {manifest_kernel['name']}: checking against Triton's JIT does not take "
                                f"tensor-descriptor arguments ({arg['name']}) yet; use --against reference")

    def launch(self, variant_id, config, args, num_sms):
        values = dict(zip(self.call_args, args))
        grid_programs = self.grids[variant_id]
        if grid_programs is None:
            raise TaotError(f"variant {variant_id} has no grid of its own (the spec gives none); checking needs one")
        scalars = {name: value for name, value in values.items() if isinstance(value, (int, bool))}
        grid = tuple(run_program(program, {**scalars, "num_sms": num_sms}) for program in grid_programs)
        keywords = {name: value for name, value in config.items()}
        positional = [values[name] for name in self.call_args if name not in self.launch_only]
        self.function[grid](*positional, **keywords)


def _interpreted_function(source, name):
    """With TRITON_INTERPRET=1: the kernel `name` of `source` as Triton's interpreter runs it."""
    from ..spec.source import import_source
    from ..triton_api.interpreter import interpreted_function
    return interpreted_function(getattr(import_source(source), name))


class _Exact:
    atol = 0.0
    rtol = 0.0


def compare(kernel_name, shape, variant_id, against, names, actual, expected, tolerance_for):
    """A Comparison of `actual` outputs with `expected` (lists in the same order)."""
    result = Comparison(kernel_name, dict(shape), variant_id, against, "ok")
    for name, got, want in zip(names, actual, expected):
        tolerance = tolerance_for(got.dtype)
        try:
            found = output_difference(got, want, tolerance)
        except ValueError as error:
            result.status, result.output, result.detail = "mismatch", name, f"{name}: {error}"
            break
        result.max_abs, result.max_rel = max(result.max_abs, found.max_abs), max(result.max_rel, found.max_rel)
        if found.count and result.status == "ok":
            result.status, result.first_index, result.output = "mismatch", found.first, name
            result.detail = (f"{found.count} of {found.total} elements of {name} differ (atol={tolerance.atol:g}, "
                             f"rtol={tolerance.rtol:g})")
    return result


def run_check(library, manifest, bench_file, *, kernels=None, variants=("auto",), against="jit", device="cuda:0",
              shapes_filter=None, exact=None, say=None):
    """Checks each chosen variant (indices or ids, "auto", or "all") of each kernel over the file's shapes.
    `exact` (default: against == "jit") compares bitwise instead of with the file's tolerance. Returns
    a list of Comparison. What needs no torch (--kernel, --variants, the reference asked for, the shapes
    kept) is checked first, then the first arguments are made, then torch and the GPU are opened."""
    from ..measure.bench import argument_config, chosen_kernels, first_arguments, implementations, open_device

    say = say or (lambda line: None)
    exact = (against == "jit") if exact is None else exact
    manifest_kernels = {k["name"]: k for k in manifest["kernels"]}
    plans = []
    for kernel_bench in chosen_kernels(bench_file, kernels):
        kernel, info = library.kernel(kernel_bench.name), library.info(kernel_bench.name)
        if against == "reference" and kernel_bench.reference is None:
            raise TaotError(f"{bench_file.label}: kernel {kernel_bench.name} has no reference; check against jit "
                            f"or interpreter")
        jit = JitKernel(library.folder, manifest_kernels[kernel_bench.name]) if against == "jit" else None
        chosen = implementations(kernel_bench.name, kernel, kernel_bench, list(variants), [])
        shapes = [shape for shape in kernel_bench.shapes if shapes_filter is None or shapes_filter(shape)]
        plans += [(kernel_bench, kernel, info, jit, chosen, shape) for shape in shapes if chosen]
    if not plans:
        raise TaotError(f"nothing to check: no shape of {bench_file.label} matches --where")
    torch = None
    results = []
    for kernel_bench, kernel, info, jit, chosen, shape in plans:
        variant_list = kernel.variants()
        tolerance_for = (lambda dtype: _Exact) if exact else kernel_bench.tolerance_for
        cache = ArgumentCache(kernel_bench, info, device)
        if torch is None:
            first_arguments("check", device, lambda: cache.entry(shape, argument_config(kernel, chosen[0], cache)))
            torch = open_device("check", device)
            num_sms = torch.cuda.get_device_properties(device).multi_processor_count
        for implementation in chosen:
            index = implementation.variant
            config = argument_config(kernel, implementation, cache)
            args, guard, expected = cache.entry(shape, config)
            try:
                if index is None:
                    index, _ = kernel.choose(*args)
                    config = variant_list[index]["config"]
                    args, guard, expected = cache.entry(shape, config)
                else:
                    kernel.choose(*args, variant=index)
            except (ValueError, TypeError) as error:
                if implementation.optional:
                    continue
                results.append(Comparison(kernel_bench.name, dict(shape), implementation.name, against, "error",
                                          detail=str(error)))
                continue
            variant_id = variant_list[index]["id"]
            label = implementation.name if implementation.kind == "auto" else variant_id
            guard.restore()
            kernel(*args, variant=index)
            torch.cuda.synchronize(device)
            actual = [output.clone() for output in guard.outputs()]
            if against == "reference":
                want = expected
            elif against == "jit":
                guard.restore()
                jit.launch(variant_id, config, args, num_sms)
                torch.cuda.synchronize(device)
                want = [output.clone() for output in guard.outputs()]
            else:
                guard.restore()
                want = interpret(library.folder, manifest_kernels[kernel_bench.name], variant_id, config, args,
                                 cache.positions, num_sms)
            result = compare(kernel_bench.name, shape, label, against, cache.output_names, actual, want,
                             tolerance_for)
            if against == "interpreter" and result.status == "mismatch":
                result.detail += _interpreter_caveat(args)
            results.append(result)
            say(f"{kernel_bench.name} {shape.label} {label}: {result.status} (max abs {result.max_abs:.3g}, "
                f"max rel {result.max_rel:.3g})")
    return results


def interpret(folder, manifest_kernel, variant_id, config, args, output_positions, num_sms):
    """The outputs of the kernel run by Triton's interpreter on the CPU, on copies of `args` (a child
    process: the interpreter is chosen when triton.jit decorates, from TRITON_INTERPRET)."""
    import torch

    with tempfile.TemporaryDirectory() as scratch:
        inputs = Path(scratch) / "inputs.pt"
        outputs = Path(scratch) / "outputs.pt"
        torch.save({"args": [a.cpu() if isinstance(a, torch.Tensor) else a for a in args],
                    "config": config, "variant": variant_id, "positions": list(output_positions), "num_sms": num_sms},
                   inputs)
        environment = dict(os.environ, TRITON_INTERPRET="1",
                           PYTHONPATH=str(IMPORT_ROOT) + os.pathsep +
                           os.environ.get("PYTHONPATH", ""))
        command = [sys.executable, "-m", "taot.debug.check", str(folder), json.dumps(manifest_kernel["name"]),
                   str(inputs), str(outputs)]
        result = subprocess.run(command, capture_output=True, text=True, env=environment)
        if result.returncode != 0:
            raise TaotError(f"Triton's interpreter failed on {variant_id}: {result.stderr.strip()[-2000:]}")
        return [tensor.to(args[p].device) for tensor, p in zip(torch.load(outputs), output_positions)]


def _interpreter_caveat(args):
    """What to add to a mismatch against the interpreter when the interpreter is the likelier culprit:
    Triton 3.6's interpreter keeps bfloat16 as uint16 (interpreter.py, `_get_np_dtype`) and computes on
    those bit patterns in arithmetic (`binary_op`) and `tl.dot` (`create_dot` converts fp8 operands
    only); Triton's debugging guide says it does not support operations on bfloat16."""
    import torch

    if not any(isinstance(a, torch.Tensor) and a.dtype == torch.bfloat16 for a in args):
        return ""
    return ("; bf16 arguments: Triton 3.6's interpreter computes on bfloat16's bit patterns (it keeps bf16 as "
            "uint16; arithmetic and tl.dot, interpreter.py binary_op and create_dot), so its outputs are wrong "
            "unless the kernel casts bf16 to fp32 before computing: check bf16 variants --against jit or reference")


def _interpreter_child(folder, kernel_name, inputs, outputs):
    """In the child (TRITON_INTERPRET=1): run the kernel on the saved CPU arguments, save the outputs."""
    import torch

    from ..triton_api.interpreter import index_scalars_as_numpy_2_4_allows
    index_scalars_as_numpy_2_4_allows()
    manifest = read_manifest(folder)
    manifest_kernel = next(k for k in manifest["kernels"] if k["name"] == kernel_name)
    saved = torch.load(inputs)
    JitKernel(folder, manifest_kernel, interpret=True).launch(saved["variant"], saved["config"], saved["args"], saved["num_sms"])
    torch.save([saved["args"][p] for p in saved["positions"]], outputs)


if __name__ == "__main__":
    _interpreter_child(sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4])
