# Writes a Triton cache the way Triton's JIT writes it, without a GPU, and records what the JIT compiled.
#
#   TRITON_CACHE_DIR=CACHE python jit_cache_writer.py KERNELS_DIR CALLS_JSON RECORD_JSON
#
# KERNELS_DIR/kernels.py holds the kernels; CALLS_JSON is a list of calls {"kernel": name, "args":
# [...], "kwargs": {...}}, where a pointer argument is {"pointer": "fp32", "aligned": true}. Each call
# runs the kernel's own `warmup` (JITFunction.run with warmup=True, or an Autotuner's warmup, which
# compiles every config), so the JIT's binder, _pack_args, ASTSource and triton.compile do exactly
# what a launch does; a stand-in driver reports an sm_90 device (or the target $JIT_CACHE_TARGET names,
# "hip:gfx942" for an AMD one). RECORD_JSON gets, per compile, the
# kernel name, the entry's hash and the ASTSource's signature, constexprs and attrs in order.
# write_cache() runs it from a test.
import json
import os
import subprocess
import sys
from pathlib import Path

import triton
import triton.compiler
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.runtime import driver


class StandInDriver:
    """The driver calls JITFunction.run makes before it compiles: one sm_90 device, or the one
    $JIT_CACHE_TARGET names ("cuda:100", "hip:gfx942")."""

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        backend, _, arch = os.environ.get("JIT_CACHE_TARGET", "cuda:90").partition(":")
        return GPUTarget(backend, int(arch), 32) if backend == "cuda" else GPUTarget(backend, arch, 64)


class StandInTensor:
    """What the JIT's binder reads from a tensor: its dtype and address, and (AMD's binder) the bytes
    it spans: a real tensor under 2 GB gets the buffer-op specialization ("S", tt.pointer_range = 32)."""

    def __init__(self, dtype, aligned, within_2gb=False):
        self.dtype = dtype
        self.address = 0x7F0000001000 if aligned else 0x7F0000001004
        self.bytes = 4096 if within_2gb else 2 ** 32

    def data_ptr(self):
        return self.address

    def ptr_range(self):
        return self.bytes


_DTYPE_NAMES = {"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "i1": "int1"}


def argument(value):
    if isinstance(value, dict) and "pointer" in value:
        return StandInTensor(tl.dtype(_DTYPE_NAMES.get(value["pointer"], value["pointer"])), value["aligned"],
                             value.get("within_2gb", False))
    return value


def constant(value):
    return [type(value).__name__, str(value)]


def warm(function, args, kwargs):
    """`function.warmup(...)`; a Heuristics object of a Triton without its own warmup (3.5) computes
    its values as its run() does and warms up what it wraps."""
    if hasattr(function, "warmup"):
        function.warmup(*args, grid=(1,), **kwargs)
        return
    named = {**dict(zip(function.arg_names, args)), **kwargs}
    for name, value in function.values.items():
        kwargs[name] = named[name] = value(named)
    warm(function.fn, args, kwargs)


def main(kernels_dir, calls_path, record_path):
    sys.path.insert(0, kernels_dir)
    import kernels

    compiled = []
    original = triton.compiler.compile

    def recording_compile(src, *args, **kwargs):
        kernel = original(src, *args, **kwargs)
        compiled.append({"name": src.name, "hash": kernel.metadata.hash, "signature": dict(src.signature),
                         "constexprs": [[list(path), constant(value)] for path, value in sorted(src.constants.items())],
                         "attrs": [[list(path), value] for path, value in src.attrs.items()]})
        return kernel

    triton.compiler.compile = recording_compile  # the JIT picks it up when it makes its binder
    try:
        import torch  # noqa: F401  (AMD's binder imports it for every tensor argument)
    except ImportError:  # a ROCm machine has torch, this one may not: a module with a Tensor nothing is
        sys.modules["torch"] = type(sys)("torch")  # an instance of, so the binder asks ptr_range() as for
        sys.modules["torch"].Tensor = type("Tensor", (), {})  # any object that has one
    driver.set_active(StandInDriver())
    for call in json.loads(open(calls_path).read()):
        warm(getattr(kernels, call["kernel"]), [argument(value) for value in call["args"]],
             {name: argument(value) for name, value in call.get("kwargs", {}).items()})
    with open(record_path, "w") as record:
        json.dump(compiled, record, indent=1)


def write_cache(folder, calls, kernels, timeout=900, target="cuda:90"):
    """folder/kernels.py (the text `kernels`) and folder/cache, the Triton cache a JIT program making
    `calls` on a `target` device ("cuda:90", "hip:gfx942") leaves; returns (the cache folder, the
    record of what the JIT compiled)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernels.py").write_text(kernels)
    (folder / "calls.json").write_text(json.dumps(calls))
    environment = {**os.environ, "TRITON_CACHE_DIR": str(folder / "cache"), "JIT_CACHE_TARGET": target}
    result = subprocess.run([sys.executable, __file__, str(folder), str(folder / "calls.json"),
                             str(folder / "compiled.json")], env=environment, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, result.stderr[-4000:]
    return folder / "cache", json.loads((folder / "compiled.json").read_text())


if __name__ == "__main__":
    main(*sys.argv[1:4])
